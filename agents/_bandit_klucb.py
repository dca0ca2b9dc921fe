"""Block play of KL-UCB (:class:`agents.ucb.KLUCB`): K rounds of ``act`` in one compiled call.

The kernel repeats :func:`agents.ucb.kl_lower_bound` in numpy's order, calling numpy's and
scipy's own ``exp``, ``log`` and ``xlogy`` loops by pointer (:mod:`agents._numpy_loops`) and
keeping their NaN rules. Without a loop or the JIT the learner plays round by round
(tests/test_klucb_block.py).
"""

from __future__ import annotations

import numpy as np

from agents._kernels import argmin_first_nan
from agents._numpy_loops import exp_into, log_into, register, ufunc_loop, xlogy_into
from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = ["klucb_loops", "klucb_ready", "klucb_rounds", "run_klucb_block"]

_FLOOR = -700.0  # kl_lower_bound's floor on ln q
_REGISTERED: list[bool] = []


def klucb_loops() -> np.ndarray | None:
    """(3, 3) the ``exp``, ``log`` and ``xlogy`` loops' addresses, or None if one is missing."""
    from scipy.special import xlogy

    loops = [ufunc_loop(np.exp, (8, 8)), ufunc_loop(np.log, (8, 8)), ufunc_loop(xlogy, (8,) * 3)]
    if any(loop is None for loop in loops):
        return None
    return np.stack(loops)  # type: ignore[arg-type]


def klucb_ready() -> bool:
    """True when the compiled block kernel runs (JIT on, the three loops available)."""
    return jit_enabled() and klucb_loops() is not None


@helper
def _maximum(a: float, b: float) -> float:
    """``np.maximum`` of two floats (a NaN wins)."""
    return a if (a >= b or a != a) else b


@helper
def _minimum(a: float, b: float) -> float:
    """``np.minimum`` of two floats (a NaN wins)."""
    return a if (a <= b or a != a) else b


@helper(inline=False)
def _bound(p, level, iterations, out, w1, w2, a, b, top, s, q, loops):  # noqa: ANN001, ANN201
    """``out[:m]`` = :func:`agents.ucb.kl_lower_bound` of one run's means and levels."""
    m = p.shape[0]
    exp_loop, log_loop, xlogy_loop = loops[0], loops[1], loops[2]
    for i in range(m):
        w1[i] = 1.0 - p[i]
    xlogy_into(p, p, a, m, xlogy_loop)
    xlogy_into(w1, w1, b, m, xlogy_loop)
    for i in range(m):
        a[i] = a[i] + b[i]  # negent
    log_into(p, top, m, log_loop)
    for i in range(m):
        w2[i] = _maximum(p[i] - np.sqrt(level[i] / 2.0), 0.0)
    log_into(w2, s, m, log_loop)
    for i in range(m):
        s[i] = _minimum(_maximum(s[i], _FLOOR), top[i])
    for _ in range(iterations):
        exp_into(s, q, m, exp_loop)
        for i in range(m):
            w2[i] = 1.0 - q[i]
        xlogy_into(w1, w2, b, m, xlogy_loop)
        for i in range(m):
            g = a[i] - p[i] * s[i] - b[i] - level[i]
            slope = w1[i] * q[i] / w2[i] - p[i]
            step = g / slope if slope < 0.0 else 0.0
            s[i] = _minimum(_maximum(s[i] - step, _FLOOR), top[i])
    exp_into(s, q, m, exp_loop)
    for i in range(m):
        out[i] = q[i] if p[i] > 0.0 else 0.0


@kernel
def klucb_rounds(sums, counts, last, levels, t0, iterations, losses, rows, loss0, loops):  # noqa: ANN001, ANN201
    """KL-UCB's K rounds, run by run: (K, B) int64 actions (``sums``, ``counts`` updated).

    Args:
        sums: (B, A) the arms' loss sums.
        counts: (B, A) int64 their plays.
        last: (B,) int64 the arms played before the block.
        levels: (K,) each round's level (unused in the round-robin start).
        t0: rounds played before the block.
        iterations: Newton steps of the bound.
        losses: (K, S, A) the block's losses, read at the played arms only.
        rows: (B,) stream of each run.
        loss0: (B,) the observed loss before the block.
        loops: (3, 3) the exp, log and xlogy loops (:func:`klucb_loops`).
    """
    rounds = levels.shape[0]
    runs, arms = sums.shape
    actions = np.empty((rounds, runs), dtype=np.int64)
    p = np.empty(arms)
    level = np.empty(arms)
    index = np.empty(arms)
    w1 = np.empty(arms)
    w2 = np.empty(arms)
    a = np.empty(arms)
    b_ = np.empty(arms)
    top = np.empty(arms)
    s = np.empty(arms)
    q = np.empty(arms)
    for b in range(runs):
        for k in range(rounds):
            t = t0 + k
            if t > 0:
                if k == 0:
                    y = loss0[b]
                    arm = last[b]
                else:
                    arm = actions[k - 1, b]
                    y = losses[k - 1, rows[b], arm]
                y = y if y > 0.0 else 0.0  # np.clip(y, 0, 1): max first, then min
                y = y if y < 1.0 else 1.0
                sums[b, arm] = sums[b, arm] + y
                counts[b, arm] += 1
            if t < arms:
                actions[k, b] = t
                continue
            for i in range(arms):
                p[i] = sums[b, i] / max(counts[b, i], 1)
                level[i] = levels[k] / counts[b, i]
            _bound(p, level, iterations, index, w1, w2, a, b_, top, s, q, loops)
            actions[k, b] = argmin_first_nan(index, arms)
    return actions


def run_klucb_block(
    sums: np.ndarray,
    counts: np.ndarray,
    last: np.ndarray,
    levels: np.ndarray,
    t0: int,
    iterations: int,
    losses: np.ndarray,
    rows: np.ndarray,
    loss0: np.ndarray,
    compiled: bool = True,
) -> np.ndarray:
    """Run :func:`klucb_rounds` (compiled, or its Python form for tests): (K, B) actions."""
    loops = klucb_loops()
    if loops is None:  # the Python form needs no loop
        loops = np.zeros((3, 3), dtype=np.int64)
    if compiled and not _REGISTERED:
        register()
        _REGISTERED.append(True)
    run = klucb_rounds if compiled else klucb_rounds.py_func  # type: ignore[attr-defined]
    return run(
        sums, counts, np.asarray(last, dtype=np.int64), np.asarray(levels, dtype=np.float64),
        int(t0), int(iterations), np.ascontiguousarray(losses, dtype=np.float64),
        np.ascontiguousarray(rows, dtype=np.int64), np.asarray(loss0, dtype=np.float64), loops,
    )
