"""Block play of UCB1 (:class:`agents.ucb.UCB1`): K rounds of ``act`` in one compiled call.

The index ``mean - sqrt(c ln t / n)`` in ``act``'s order: each round's ``c ln t`` is computed in
Python as ``act`` does (the caller's ``levels``), then divided by the arm's count, square-rooted
(correctly rounded on both paths) and subtracted from the mean ``sum / max(n, 1)``; ties and
NaN as ``np.argmin``. Without the JIT the learner plays round by round
(tests/test_ucb1_block.py).
"""

from __future__ import annotations

import numpy as np

from agents._kernels import argmin_first_nan
from dp_experts_env._jit import jit_enabled, kernel

__all__ = ["run_ucb1_block", "ucb1_ready", "ucb1_rounds"]


def ucb1_ready() -> bool:
    """True when the compiled block kernel runs (JIT on)."""
    return jit_enabled()


@kernel
def ucb1_rounds(sums, counts, last, levels, t0, losses, rows, loss0):  # noqa: ANN001, ANN201
    """UCB1's K rounds, run by run: (K, B) int64 actions (``sums``, ``counts`` updated).

    Args:
        sums: (B, A) the arms' loss sums.
        counts: (B, A) int64 their plays.
        last: (B,) int64 the arms played before the block.
        levels: (K,) each round's ``c ln t`` (unused in the round-robin start).
        t0: rounds played before the block.
        losses: (K, S, A) the block's losses, read at the played arms only.
        rows: (B,) stream of each run.
        loss0: (B,) the observed loss before the block.
    """
    rounds = levels.shape[0]
    runs, arms = sums.shape
    actions = np.empty((rounds, runs), dtype=np.int64)
    index = np.empty(arms)
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
                y = y if y > 0.0 else 0.0  # np.clip(y, 0, 1) of a checked loss
                y = y if y < 1.0 else 1.0
                sums[b, arm] = sums[b, arm] + y
                counts[b, arm] += 1
            if t < arms:
                actions[k, b] = t
                continue
            for i in range(arms):
                index[i] = sums[b, i] / max(counts[b, i], 1) - np.sqrt(levels[k] / counts[b, i])
            actions[k, b] = argmin_first_nan(index, arms)
    return actions


def run_ucb1_block(
    sums: np.ndarray,
    counts: np.ndarray,
    last: np.ndarray,
    levels: np.ndarray,
    t0: int,
    losses: np.ndarray,
    rows: np.ndarray,
    loss0: np.ndarray,
    compiled: bool = True,
) -> np.ndarray:
    """Run :func:`ucb1_rounds` (compiled, or its Python form for tests): (K, B) actions."""
    run = ucb1_rounds if compiled else ucb1_rounds.py_func  # type: ignore[attr-defined]
    return run(
        sums, counts, np.asarray(last, dtype=np.int64), np.asarray(levels, dtype=np.float64),
        int(t0), np.ascontiguousarray(losses, dtype=np.float64),
        np.ascontiguousarray(rows, dtype=np.int64), np.asarray(loss0, dtype=np.float64),
    )
