"""svt-restart's all-windows query (``window_grid="all"``, the n-only slack): valid starts only.

The query of run r at round t is the largest
``(cum[N] - prefix[u, N]) - min_j (cum[j] - prefix[u, j]) - slack[t - u]`` over its valid window
starts ``epoch_start[r] - 1 <= u < t`` (window ``[u + 1, t]``). Both forms compute every window
they evaluate with exactly those operations in that order (min and max are exact in any order;
the kernel skips only windows that cannot be the max), so they give the same query, bit for bit,
as the (B, T) reference :meth:`~agents.svt_restart.SVTRestart._window_regret` followed by
``regret - slack`` and the max. The prefix sums are laid out (B, N+1, T+1), the start axis last:
numpy's min over experts is an elementwise min of rows, over contiguous starts, and the kernel's
bound pass reads the learner's row only (it computes the exact query of the few starts that can
be the max; see :func:`all_windows_query_kernel`).
"""

from __future__ import annotations

import numpy as np

from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = [
    "AllWindowsQuery",
    "all_windows_query_kernel",
    "all_windows_query_numpy",
    "run_query",
]

#: elements of the numpy path's (B, N+1, C) chunk of differences (2 MiB of float64)
_CHUNK_ELEMENTS = 1 << 18


class AllWindowsQuery:
    """The buffers of the all-windows query for (B, N+1, T+1) prefix sums; call to compute it.

    Scratch only (each call writes before it reads); svt-restart's block kernel writes
    :attr:`starts` and :attr:`out` as a call would, so both paths leave the same state.

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
        self.starts = np.zeros(horizon + 1, dtype=np.int64)  # the kernel's candidate starts
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
            all_windows_query_kernel(cum, prefix, epoch_start, t, rows, self.starts, self.out)
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
    starts: np.ndarray,
    out: np.ndarray,
) -> None:
    """:func:`all_windows_query_numpy` run by run over its valid starts: the same float.

    Each window's query is computed with the numpy path's operations, but only for the starts
    that can beat the best query found so far, by two upper bounds that hold in floats (rounding
    is monotone). Both need ``cum[j] >= prefix[j, u]`` for u < t (running sums of losses in
    [0, 1], as SVTRestart's): then the min over experts ``m_u`` is >= 0 and does not grow with
    u, so ``q_u <= (x_u - 0) - s_u`` and ``q_u <= (x_u - m_b) - s_u`` for any start b >= u
    (``x_u = cum[N] - prefix[N, u]``, ``s_u`` its slack). The first bound is one pass over the
    learner's row; the second reads ``m_b`` at the last start b of each group of :data:`_GROUP`
    consecutive starts that holds a candidate of the first. A skipped start's query is at most
    the final maximum, so the maximum is the same float. NaN as numpy's min and max propagate
    it: a NaN in a run's sums makes every start's query NaN; without one, no earlier sum holds
    one (the sums only add).
    """
    for r in range(prefix.shape[0]):
        row = r if table.shape[0] > 1 else 0
        out[r] = run_query(cum[r], prefix[r], epoch_start[r], t, table[row], starts)


@helper
def run_query(
    cum: np.ndarray,
    prefix: np.ndarray,
    epoch_start: int,
    t: int,
    slack: np.ndarray,
    starts: np.ndarray,
) -> float:
    """One run's query of :func:`all_windows_query_kernel` (shared with agents/_svt_kernels.py).

    ``cum`` (N+1,), ``prefix`` (N+1, T+1), ``slack`` the run's slack row; ``starts`` scratch.
    """
    n1 = cum.shape[0]
    n = n1 - 1
    lo = max(epoch_start - 1, 0)
    if lo >= t:
        return -np.inf
    for j in range(n1):
        if np.isnan(cum[j]):
            return np.nan
    # The slack table holds no NaN (a NaN entry would make numpy's max NaN while the bounds
    # below skip its window): its entries are finite thresholds from the declared parameters.
    # Indices from 0 over views of the valid starts lo..t-1 (LLVM then knows them
    # non-negative: no wrap-around test). Start lo + k reads slack[t - lo - k] = slack[w - k].
    w = t - lo
    pr = prefix[:, lo:t]
    learner, pn, sl = cum[n], prefix[n, lo:t], slack[w:0:-1]
    # The shortest window's query first (often the max: the slack grows with the length),
    # then the starts whose first bound exceeds it, compacted without a branch.
    best = ((learner - pn[w - 1]) - _min_over_experts(cum, pr, w - 1)) - sl[w - 1]
    count = 0
    for k in range(w):
        starts[count] = k
        count += ((learner - pn[k]) - sl[k]) > best
    group_end = -1
    low_end = 0.0
    for i in range(count):
        k = starts[i]
        x = learner - pn[k]
        if k > group_end:  # m at the group's last start bounds the group's minima
            group_end = _group_end(k, w)
            low_end = _min_over_experts(cum, pr, group_end)
            query = ((learner - pn[group_end]) - low_end) - sl[group_end]
            best = query if query > best else best
        if ((x - low_end) - sl[k]) > best:
            query = (x - _min_over_experts(cum, pr, k)) - sl[k]
            best = query if query > best else best
    return best


#: starts per group of the kernel's second bound (one exact minimum per group)
_GROUP = 16


@helper
def _group_end(k: int, w: int) -> int:
    """The last start of start k's group (of :data:`_GROUP`), at most ``w - 1``: b >= k."""
    return min(k - k % _GROUP + _GROUP - 1, w - 1)


@helper
def _min_over_experts(cum: np.ndarray, prefix: np.ndarray, k: int) -> float:
    """``min_j (cum[j] - prefix[j, k])`` over the N experts (rows 0..N-1): exact in any order."""
    low = cum[0] - prefix[0, k]
    for j in range(1, cum.shape[0] - 1):
        x = cum[j] - prefix[j, k]
        low = x if x < low else low
    return low
