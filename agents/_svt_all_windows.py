"""svt-restart's all-windows query (``window_grid="all"``, the n-only slack): valid starts only.

The query of run r at round t is the largest ``(cum[N] - prefix[u, N]) - min_j (cum[j] -
prefix[u, j]) - slack[t - u]`` over its valid window starts ``epoch_start[r] - 1 <= u < t``
(window ``[u + 1, t]``). Both forms compute each window's float with exactly those operations in
that order (min and max are exact in any order), so they give the same query, bit for bit, as
the (B, T) reference :meth:`~agents.svt_restart.SVTRestart._window_regret` followed by ``regret -
slack`` and the max. The prefix sums are laid out (B, N+1, T+1), the start axis last: the min
over experts is an elementwise min of rows, over contiguous starts.
"""

from __future__ import annotations

import numpy as np

from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = ["AllWindowsQuery", "all_windows_query_kernel", "all_windows_query_numpy"]

#: elements of the numpy path's (B, N+1, C) chunk of differences (2 MiB of float64)
_CHUNK_ELEMENTS = 1 << 18


class AllWindowsQuery:
    """The buffers of the all-windows query for (B, N+1, T+1) prefix sums; call to compute it.

    Args:
        num_envs: B.
        n_experts: N.
        horizon: T.
    """

    def __init__(self, num_envs: int, n_experts: int, horizon: int) -> None:
        b, n1 = num_envs, n_experts + 1
        chunk = max(16, min(horizon, _CHUNK_ELEMENTS // (b * n1)))
        # Zeros, not empty: a state compared across paths holds no garbage.
        self._diff = np.zeros((b, n1, chunk))
        self._best = np.zeros((b, chunk))
        self._regret = np.zeros((b, chunk))
        self._mins = np.zeros(horizon + 1)  # the kernel's per-start minima of one run
        self.out = np.zeros(b)

    def __call__(
        self,
        cum: np.ndarray,
        prefix: np.ndarray,
        epoch_start: np.ndarray,
        t: int,
        table: np.ndarray,
    ) -> np.ndarray:
        """(B,) query at round ``t`` (a new array), compiled when the JIT is on.

        Args:
            cum: (B, N+1) sums since round 1 (experts, then the learner).
            prefix: (B, N+1, T+1) the sums after each round u (column u).
            epoch_start: (B,) int64 first round of each run's epoch.
            t: the round just played, 1 <= t <= T.
            table: the slack table, (size,) or per run (B, size), size > t.
        """
        rows = table.reshape(1, -1) if table.ndim == 1 else table
        if jit_enabled():
            all_windows_query_kernel(cum, prefix, epoch_start, t, rows, self._mins, self.out)
        else:
            all_windows_query_numpy(
                cum, prefix, epoch_start, t, rows, self._diff, self._best, self._regret, self.out
            )
        return self.out.copy()


def all_windows_query_numpy(
    cum: np.ndarray,
    prefix: np.ndarray,
    epoch_start: np.ndarray,
    t: int,
    table: np.ndarray,
    diff: np.ndarray,
    best: np.ndarray,
    regret: np.ndarray,
    out: np.ndarray,
) -> None:
    """The query into ``out``: chunks of starts from the earliest valid one, in buffers.

    ``table`` is (1, size) or (B, size); ``diff`` (B, N+1, C), ``best`` and ``regret`` (B, C).
    A run's starts before its own epoch are set to -inf after the subtraction.
    """
    n = cum.shape[1] - 1
    starts = epoch_start - 1  # the first valid start of each run
    lo, latest = max(int(starts.min()), 0), int(starts.max())
    chunk = diff.shape[2]
    out.fill(-np.inf)
    for u0 in range(lo, t, chunk):
        u1 = min(u0 + chunk, t)
        c = u1 - u0
        d = np.subtract(cum[:, :, None], prefix[:, :, u0:u1], out=diff[:, :, :c])
        low = np.minimum.reduce(d[:, :n], axis=1, out=best[:, :c])
        r = np.subtract(d[:, n], low, out=regret[:, :c])
        # start u reads slack[t - u]: lengths t - u0 down to t - u1 + 1
        r -= table[:, t - u1 + 1 : t - u0 + 1][:, ::-1]
        if u0 < latest:  # some run's epoch starts after this chunk's first start
            np.putmask(r, np.arange(u0, u1)[None, :] < starts[:, None], -np.inf)
        np.maximum(out, np.maximum.reduce(r, axis=1), out=out)


@kernel
def all_windows_query_kernel(  # pragma: no cover - compiled; its Python form runs in the tests
    cum: np.ndarray,
    prefix: np.ndarray,
    epoch_start: np.ndarray,
    t: int,
    table: np.ndarray,
    mins: np.ndarray,
    out: np.ndarray,
) -> None:
    """:func:`all_windows_query_numpy` run by run over its valid starts: the same floats.

    The per-start minima over experts go row by row (contiguous starts). NaN as numpy's min and
    max propagate it: a NaN in a run's sums makes every start's query NaN; without one, no
    earlier sum (a prefix column) holds one, since the sums only add.
    """
    runs, n1, _ = prefix.shape
    n = n1 - 1
    for r in range(runs):
        row = r if table.shape[0] > 1 else 0
        lo = max(epoch_start[r] - 1, 0)
        if lo >= t:
            out[r] = -np.inf
            continue
        nan = False
        for j in range(n1):
            if np.isnan(cum[r, j]):
                nan = True
        if nan:
            out[r] = np.nan
            continue
        # Indices from 0 over views of the valid starts lo..t-1 (LLVM then knows them
        # non-negative: no wrap-around test, the loops vectorise).
        w = t - lo
        c0, p0 = cum[r, 0], prefix[r, 0, lo:t]
        for k in range(w):
            mins[k] = c0 - p0[k]
        for j in range(1, n):
            cj, pj = cum[r, j], prefix[r, j, lo:t]
            for k in range(w):
                x = cj - pj[k]
                m = mins[k]
                mins[k] = x if x < m else m  # a select, not a branch: vectorised
        # start lo + k reads slack[t - lo - k] = slack[w - k]
        learner, pn, slack = cum[r, n], prefix[r, n, lo:t], table[row, w:0:-1]
        for k in range(w):
            mins[k] = ((learner - pn[k]) - mins[k]) - slack[k]
        out[r] = _max(mins, w)


@helper
def _max(values: np.ndarray, hi: int) -> float:
    """``values[:hi].max()`` (no NaN) in four interleaved maxima: exact in any order."""
    b0 = b1 = b2 = b3 = -np.inf
    u = 0
    while u + 4 <= hi:
        q = values[u]
        b0 = q if q > b0 else b0
        q = values[u + 1]
        b1 = q if q > b1 else b1
        q = values[u + 2]
        b2 = q if q > b2 else b2
        q = values[u + 3]
        b3 = q if q > b3 else b3
        u += 4
    while u < hi:
        q = values[u]
        b0 = q if q > b0 else b0
        u += 1
    return max(max(b0, b1), max(b2, b3))
