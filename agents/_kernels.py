"""Block play for full-information learners: K rounds of ``act`` in one call, bit for bit.

``agent.play_block(obs)`` on the (K, B, N) observations of K ``act`` calls returns their (K, B)
actions, leaves the same state and reads the same random numbers (tests/test_play_block.py).
Sums over rounds are sequential ``cumsum``s; per-round functions of those sums run on (K, B, N)
arrays (the same floats); the K rounds' uniforms are one read; truly recursive steps run in
compiled kernels fed numpy's ``exp``/``log`` (numba's differ in the last bit;
:mod:`dp_experts_env._jit`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dp_experts_env._jit import helper, kernel
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.noise import FastBackend

__all__ = [
    "PLAY_UNIFORMS",
    "accumulate",
    "block_uniforms",
    "categorical_rows",
    "check_block",
    "clip_peel",
    "plain_fast_backend",
    "numpy_sum",
    "own_hooks",
    "dartboard_choices",
    "level_sums",
    "logaddexp",
    "mix_round",
    "row_totals",
    "lse_shift",
    "normalise_rows",
    "row_sums",
    "softmax_shift",
    "switch_round",
    "tree_block",
    "finish_block",
    "hook_loop",
    "hook_round",
    "round_uniforms",
    "running_total",
    "shift_by_max",
    "softmax_rows",
    "uniform_among_rows",
]


#: Uniforms per run a round's play reads: one, the inverse-CDF draw of
#: :meth:`BatchRNG.categorical` (read after the round's noise).
PLAY_UNIFORMS = 1


def check_block(agent: Any, obs: Any) -> np.ndarray:
    """The (K, B, N) block as float64, checked as K calls of ``act`` would check it.

    Raises:
        ValueError: wrong shape, a round past the horizon, or a loss outside [0, 1] (named by
            its round, as ``act`` names it).
    """
    arr = np.asarray(obs, dtype=np.float64)
    b, n = agent.num_envs, agent.n_experts
    if arr.ndim != 3 or arr.shape[1:] != (b, n):
        raise ValueError(f"obs must have shape (K, {b}, {n}) (K rounds), got {arr.shape}")
    k = arr.shape[0]
    if agent.t + k > agent.horizon:
        raise ValueError(
            f"agent {agent.name!r} has {agent.horizon - agent.t} rounds left of its "
            f"horizon={agent.horizon}; a block of {k} rounds is outside its privacy claim and "
            "tuning; call reset() to start a new episode"
        )
    flat = arr.reshape(k, b * n)  # (not -1: an empty block has no size to infer)
    ok = (np.minimum.reduce(flat, axis=1) >= 0.0) & (np.maximum.reduce(flat, axis=1) <= 1.0)
    if not ok.all():
        i = int(np.argmin(ok))
        bad = np.argwhere(~((arr[i] >= 0.0) & (arr[i] <= 1.0)))[0]
        t = agent.t + i
        raise ValueError(
            f"obs for round {t + 1} (feedback of round {t}): losses must be finite and lie in "
            f"[0, 1]; found {arr[i][tuple(bad)]} at run {bad[0]}, expert {bad[1]}"
        )
    return arr


def hook_loop(agent: Any, obs: Any) -> np.ndarray:
    """K rounds of ``act`` through the agent's own hooks, the block checked once."""
    losses = check_block(agent, obs)
    actions = np.empty((len(losses), agent.num_envs), dtype=np.int64)
    for i, row in enumerate(losses):
        actions[i] = hook_round(agent, row)
    return actions


def hook_round(agent: Any, row: np.ndarray) -> np.ndarray:
    """One round of ``act`` through the agent's hooks (``row`` checked already): its actions."""
    if agent.t > 0:
        agent._learn(row)
    chosen = np.asarray(agent._choose(row), dtype=np.int64)
    agent.t += 1
    agent.last_actions = chosen
    return chosen


def finish_block(agent: Any, actions: np.ndarray) -> np.ndarray:
    """Advance the agent's clock past the block and return its (K, B) int64 actions."""
    actions = np.asarray(actions, dtype=np.int64)
    if len(actions):
        agent.t += len(actions)
        agent.last_actions = actions[-1].copy()
    return actions


def accumulate(start: np.ndarray, obs: np.ndarray, learn_first: bool) -> np.ndarray:
    """(K, B, N) sums after each round's learning step: ``start`` plus the rounds learned so far.

    Row k equals ``start`` after the in-place additions ``+= obs[0]``, ..., ``+= obs[k]`` (the
    first one skipped when ``learn_first`` is False: ``act`` learns nothing in round 1).
    """
    sums = np.array(obs, dtype=np.float64)
    if not learn_first:
        sums[0] = 0.0  # x + 0.0 is x for the sums kept here (never -0.0)
    sums[0] += start
    return np.cumsum(sums, axis=0, out=sums)


def running_total(rows: np.ndarray) -> np.ndarray:
    """``rows[0] + rows[1] + ... + rows[-1]`` added in order, as a loop of in-place ``+=`` would.

    ``np.add.reduce`` adds whole rows in order, except one-number rows, which it sums pairwise:
    those take the slower sequential ``cumsum``.
    """
    rows = np.ascontiguousarray(rows)
    if rows[0].size >= 2:
        return np.add.reduce(rows, axis=0)
    return np.cumsum(rows, axis=0)[-1]


def round_uniforms(rng: BatchRNG, rounds: int, per_round: int) -> np.ndarray:
    """(K, B, per_round) uniforms: what K rounds drawing ``per_round`` each would read."""
    return block_uniforms(rng, rounds, per_round)


def block_uniforms(
    rng: BatchRNG, rounds: int, per_round: int, first_skips: int = 0, pad: float = 0.0
) -> np.ndarray:
    """(K, B, per_round) uniforms of K rounds whose first round reads ``first_skips`` fewer.

    The skipped slots (a round 1 that draws no noise) hold ``pad`` (0.5 gives a zero Laplace).
    """
    u = rng.random((rounds * per_round - first_skips,))
    if first_skips:
        u = np.concatenate([np.full((rng.num_runs, first_skips), pad), u], axis=1)
    return u.reshape(rng.num_runs, rounds, per_round).transpose(1, 0, 2)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """:func:`agents._simplex.softmax` on the last axis of a (..., N) array (the same floats)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def categorical_rows(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:meth:`BatchRNG.categorical` on (K, B, N) laws with its (K, B) uniforms given."""
    cdf = np.cumsum(probs, axis=-1)
    scaled = u[..., None] * cdf[..., -1:]
    idx = np.sum(cdf <= scaled, axis=-1)
    return np.minimum(idx, probs.shape[-1] - 1).astype(np.int64)


def uniform_among_rows(mask: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`agents._simplex.uniform_among` on (K, B, N) masks and (K, B) uniforms."""
    counts = mask.sum(axis=-1)
    k = np.minimum(np.floor(u * counts).astype(np.int64), counts - 1)
    rank = np.cumsum(mask, axis=-1)
    return np.argmax(mask & (rank == (k + 1)[..., None]), axis=-1).astype(np.int64)


@kernel
def dartboard_choices(stay_factor, u_stay, fresh, last, switches, stay_probability, first):  # noqa: ANN001, ANN201
    """The shrinking dartboard's K rounds (keep the last expert or move): (K, B) actions.

    Args:
        stay_factor: (K, B, N) ``exp(-eta l)`` of every round's losses (numpy's exp).
        u_stay: (K, B) the stay coins' uniforms (row 0 unused when ``first``).
        fresh: (K, B) the fresh draws from Hedge's law.
        last: (B,) the previous actions (updated in place).
        switches: (B,) switch counters (updated in place).
        stay_probability: (B,) the agent's stay probabilities (updated in place).
        first: True when row 0 is round 1 (no stay coin, no learning).
    """
    rounds, runs = fresh.shape
    actions = np.empty((rounds, runs), dtype=np.int64)
    for k in range(rounds):
        for b in range(runs):
            if k == 0 and first:
                action = fresh[0, b]
            else:
                # Learning from round k's feedback: the stay probability of the expert played.
                p = stay_factor[k, b, last[b]]
                stay_probability[b] = p
                action = last[b] if u_stay[k, b] < p else fresh[k, b]
                if action != last[b]:
                    switches[b] += 1
            actions[k, b] = action
            last[b] = action
    return actions


@helper
def argmin_first_nan(values: np.ndarray, n: int) -> int:
    """``np.argmin(values[:n])``: the first minimum, or the first NaN if there is one."""
    best = 0
    value = values[0]
    if value == value:
        for i in range(1, n):
            x = values[i]
            if x != x:
                return i
            if x < value:
                value = x
                best = i
    return best


def own_hooks(agent: Any, owner: type, names: tuple[str, ...] = ("_learn", "_choose")) -> bool:
    """True when ``agent``'s hooks ``names`` are ``owner``'s own (no subclass overrides them).

    A block path that recomputes the hooks must play an overriding subclass through its hooks,
    or it would not be the learner whose ``act`` was audited.
    """
    cls = type(agent)
    return all(getattr(cls, name, None) is getattr(owner, name, None) for name in names)


def plain_fast_backend(noise: Any) -> bool:
    """True for the plain ``fast`` backend, whose draws a block can take at once from uniforms."""
    return type(noise) is FastBackend


@helper
def _pairwise_block(row: np.ndarray, lo: int, n: int) -> float:
    """The pairwise sum of numpy for at most 128 entries: eight accumulators, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += row[lo + i]
        return res
    r0, r1, r2, r3 = row[lo], row[lo + 1], row[lo + 2], row[lo + 3]
    r4, r5, r6, r7 = row[lo + 4], row[lo + 5], row[lo + 6], row[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += row[lo + i]
        r1 += row[lo + i + 1]
        r2 += row[lo + i + 2]
        r3 += row[lo + i + 3]
        r4 += row[lo + i + 4]
        r5 += row[lo + i + 5]
        r6 += row[lo + i + 6]
        r7 += row[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += row[lo + i]
        i += 1
    return res


@helper
def numpy_sum(row: np.ndarray, lo: int, n: int) -> float:
    """The sum numpy's ``ndarray.sum`` gives ``row[lo:lo + n]`` (pairwise), float for float.

    An explicit stack, not recursion: numba neither inlines nor safely disk-caches a recursive
    function.
    """
    if n <= 128:
        return _pairwise_block(row, lo, n)
    starts = np.empty(128, dtype=np.int64)
    sizes = np.empty(128, dtype=np.int64)
    values = np.empty(128)
    top, depth = 0, 0
    starts[0], sizes[0] = lo, n
    top = 1
    while top:
        top -= 1
        start, size = starts[top], sizes[top]
        if size < 0:  # a split whose two halves are done: combine them
            depth -= 1
            values[depth - 1] = values[depth - 1] + values[depth]
            continue
        if size <= 128:
            values[depth] = _pairwise_block(row, start, size)
            depth += 1
            continue
        half = size // 2
        half -= half % 8
        starts[top], sizes[top] = 0, -1  # combine after both halves
        starts[top + 1], sizes[top + 1] = start + half, size - half
        starts[top + 2], sizes[top + 2] = start, half
        top += 3
    return values[0]


@kernel
def clip_peel(v, floor, out, masked):  # noqa: ANN001, ANN201
    """The peeling loop of ``noisy_clipped_hedge.clip_project`` after its ``exp``, per row.

    Args:
        v: (B, N) unnormalised weights (largest entry 1), numpy's exp.
        floor: the clipping level (> 0).
        out: (B, N) the projected weights (written).
        masked: (N,) scratch for a row with its clipped entries zeroed.
    """
    runs, n = v.shape
    for b in range(runs):
        row = v[b]
        free = np.ones(n, dtype=np.bool_)
        count = n
        for _ in range(n):
            mass = 1.0 - floor * float(n - count)
            for j in range(n):
                masked[j] = row[j] if free[j] else 0.0
            c = mass / numpy_sum(masked, 0, n)
            changed = False
            for j in range(n):
                if free[j] and c * row[j] < floor:
                    free[j] = False
                    count -= 1
                    changed = True
            if not changed:
                break
        mass = 1.0 - floor * float(n - count)
        for j in range(n):
            masked[j] = row[j] if free[j] else 0.0
        c = mass / numpy_sum(masked, 0, n)
        for j in range(n):
            out[b, j] = c * row[j] if free[j] else floor


_LOG2 = math.log(2.0)


@helper
def logaddexp(x: float, y: float) -> float:
    """The ``np.logaddexp`` of two floats, float for float (numpy's loop is scalar libm C)."""
    if x == y:  # equal infinities too
        return x + _LOG2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d  # NaN


@kernel
def switch_round(prev, finish, lt, m, step, cur, d, advance):  # noqa: ANN001, ANN201
    """One round of meta-expert-reduction's forward recursion around numpy's ``exp``/``log``.

    Finishes ``prev`` (``logaddexp(prev[:, :, c], lt + m)`` for c >= 1), then forms
    ``cur = prev - step``, its per-level maxima ``m`` (0 where not finite) and ``d = cur - m``,
    whose ``exp`` the caller takes.

    Args:
        prev: (B, N, S+1) the previous round's log forward sums (finished in place if asked).
        finish: whether ``prev`` still needs its switch update.
        lt: (B, 1, S) ``log`` of the previous round's sums.
        m: (B, S) the previous round's maxima (read), then this round's (written).
        step: (B, N) this round's ``eta`` times noisy losses.
        cur: (B, N, S+1) this round's forward sums (written).
        d: (B, N, S) differences to exponentiate (written).
        advance: False to finish ``prev`` only (the block's last round).
    """
    runs, n, levels = prev.shape
    s = levels - 1
    if finish:
        for b in range(runs):
            for c in range(1, levels):
                switched = lt[b, 0, c - 1] + m[b, c - 1]
                for j in range(n):
                    prev[b, j, c] = logaddexp(prev[b, j, c], switched)
    if not advance:
        return
    for b in range(runs):
        for j in range(n):
            for c in range(levels):
                cur[b, j, c] = prev[b, j, c] - step[b, j]
        for c in range(s):
            top = cur[b, 0, c]
            for j in range(1, n):
                v = cur[b, j, c]
                if v > top or v != v:
                    top = v
            if not math.isfinite(top):
                top = 0.0
            m[b, c] = top
            for j in range(n):
                d[b, j, c] = cur[b, j, c] - top


@kernel
def level_sums(e, total):  # noqa: ANN001, ANN201
    """``np.add.reduce(e, axis=1, keepdims=True)`` of a (B, N, S) array, S >= 2 (rows in order)."""
    runs, n, s = e.shape
    for b in range(runs):
        for c in range(s):
            total[b, 0, c] = e[b, 0, c]
        for j in range(1, n):
            for c in range(s):
                total[b, 0, c] += e[b, j, c]


@kernel
def lse_shift(x, shift, m, d):  # noqa: ANN001, ANN201
    """The first half of ``_lse(x + shift[:, None, None, :], axis=3)``: maxima m, differences d."""
    k, runs, n, levels = x.shape
    for i in range(k):
        for b in range(runs):
            for j in range(n):
                top = x[i, b, j, 0] + shift[i, 0]
                d[i, b, j, 0] = top
                for c in range(1, levels):
                    v = x[i, b, j, c] + shift[i, c]
                    d[i, b, j, c] = v
                    if v > top or v != v:
                        top = v
                if not math.isfinite(top):
                    top = 0.0
                m[i, b, j] = top
                for c in range(levels):
                    d[i, b, j, c] = d[i, b, j, c] - top


@kernel
def row_sums(e, total):  # noqa: ANN001, ANN201
    """``np.add.reduce(e, axis=-1)`` of a contiguous (K, B, N, L) array (numpy's pairwise sums)."""
    k, runs, n, levels = e.shape
    for i in range(k):
        for b in range(runs):
            for j in range(n):
                total[i, b, j] = numpy_sum(e[i, b, j], 0, levels)


@kernel
def softmax_shift(lt, m, z):  # noqa: ANN001, ANN201
    """``logits = lt + m`` and ``z = logits - max(logits, axis=-1)`` for a softmax (K, B, N)."""
    k, runs, n = lt.shape
    for i in range(k):
        for b in range(runs):
            top = lt[i, b, 0] + m[i, b, 0]
            z[i, b, 0] = top
            for j in range(1, n):
                v = lt[i, b, j] + m[i, b, j]
                z[i, b, j] = v
                if v > top or v != v:
                    top = v
            for j in range(n):
                z[i, b, j] = z[i, b, j] - top


@kernel
def normalise_rows(e, out):  # noqa: ANN001, ANN201
    """``e / np.add.reduce(e, axis=-1, keepdims=True)`` of a contiguous (K, B, N) array."""
    k, runs, n = e.shape
    for i in range(k):
        for b in range(runs):
            total = numpy_sum(e[i, b], 0, n)
            for j in range(n):
                out[i, b, j] = e[i, b, j] / total


@kernel
def tree_block(x, noise, exact, noisy, t0, out):  # noqa: ANN001, ANN201
    """K items of ``privacy.mechanisms.TreeCounter.add`` (d >= 2 coordinates), float for float.

    Args:
        x: (K, B, d) the items.
        noise: (K, B, d) each item's node noise (ignored when empty: a noiseless counter).
        exact: (B, L, d) exact node sums (updated in place).
        noisy: (B, L, d) released node sums (updated in place).
        t0: items added before the block.
        out: (K, B, d) the released running sums (written).
    """
    k, runs, dim = x.shape
    levels = exact.shape[1]
    noiseless = noise.shape[0] == 0
    for i in range(k):
        t = t0 + i + 1
        level = 0
        while not (t >> level) & 1:
            level += 1
        for b in range(runs):
            for j in range(dim):
                if level == 0:
                    node = 0.0 + x[i, b, j]  # numpy's empty sum is 0.0
                else:
                    acc = exact[b, 0, j]
                    for lv in range(1, level):
                        acc += exact[b, lv, j]
                    node = acc + x[i, b, j]
                exact[b, level, j] = node
                for lv in range(level):
                    exact[b, lv, j] = 0.0
                noisy[b, level, j] = node if noiseless else node + noise[i, b, j]
                first = True
                acc = 0.0
                for lv in range(levels):
                    if (t >> lv) & 1:
                        acc = noisy[b, lv, j] if first else acc + noisy[b, lv, j]
                        first = False
                out[i, b, j] = acc


@helper
def _shift_rows(log_w, step, d):  # noqa: ANN001, ANN202
    runs, n = log_w.shape
    for b in range(runs):
        top = log_w[b, 0] - step[b, 0]
        d[b, 0] = top
        for j in range(1, n):
            v = log_w[b, j] - step[b, j]
            d[b, j] = v
            if v > top or v != v:
                top = v
        for j in range(n):
            d[b, j] = d[b, j] - top


@kernel
def shift_by_max(log_w, step, d):  # noqa: ANN001, ANN201
    """``z = log_w - step`` and ``d = z - z.max(axis=1, keepdims=True)`` of (B, N) arrays."""
    _shift_rows(log_w, step, d)


@kernel
def mix_round(prev, finish, d, lt, c1, c2, step, advance):  # noqa: ANN001, ANN201
    """One round of Fixed-Share's log-weight recursion around numpy's ``exp``/``log``.

    ``log_mix_uniform(log_softmax(w - step), alpha) = logaddexp(c1 + (z - lt), c2)``, ``z`` the
    max-shifted logits, ``lt`` the ``log`` of the row sums of ``exp(z)``.

    Args:
        prev: (B, N) the previous round's log-weights (finished in place if asked).
        finish: whether ``prev`` still needs ``logaddexp(c1 + (d - lt), c2)``.
        d: (B, N) shifted logits: read to finish, then this round's (written).
        lt: (B, 1) ``log`` of the previous round's row sums.
        c1: ``log1p(-alpha)`` (numpy's float).
        c2: ``log(alpha / N)`` (numpy's float).
        step: (B, N) this round's ``eta`` times losses.
        advance: False to finish ``prev`` only (the block's last round).
    """
    runs, n = prev.shape
    if finish:
        for b in range(runs):
            for j in range(n):
                prev[b, j] = logaddexp(c1 + (d[b, j] - lt[b, 0]), c2)
    if advance:
        _shift_rows(prev, step, d)  # this round's shifted logits, as shift_by_max


@kernel
def row_totals(e, total):  # noqa: ANN001, ANN201
    """``e.sum(axis=-1, keepdims=True)`` of a contiguous (B, N) array (numpy's pairwise sums)."""
    for b in range(e.shape[0]):
        total[b, 0] = numpy_sum(e[b], 0, e.shape[1])
