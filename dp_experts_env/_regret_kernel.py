"""The compiled form of the S-switch regret recursion (numba, see :mod:`dp_experts_env._jit`).

:func:`table_block` does the numpy update's arithmetic for K rounds: each level's row in one
vectorisable pass, then its minimum in a second (a fused minimum would not vectorise without
``fastmath``); minima do not round, so every value is numpy's float.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = ["MIN_ELEMENTS", "compiled_update", "table_block"]

#: (streams x (S + 1) x N) entries from which the compiled per-round update is used.
MIN_ELEMENTS = 1 << 16

_COMPILED: Callable[..., Any] | None | bool = None  # None: not tried yet; False: unavailable


@helper
def _row_min(row: np.ndarray) -> float:
    """Minimum of a 1-D array with eight accumulators (no serial dependency)."""
    n = row.shape[0]
    if n < 8:
        m = row[0]
        for j in range(1, n):
            m = min(m, row[j])
        return m
    m0, m1, m2, m3 = row[0], row[1], row[2], row[3]
    m4, m5, m6, m7 = row[4], row[5], row[6], row[7]
    j = 8
    while j + 8 <= n:
        m0 = min(m0, row[j])
        m1 = min(m1, row[j + 1])
        m2 = min(m2, row[j + 2])
        m3 = min(m3, row[j + 3])
        m4 = min(m4, row[j + 4])
        m5 = min(m5, row[j + 5])
        m6 = min(m6, row[j + 6])
        m7 = min(m7, row[j + 7])
        j += 8
    while j < n:
        m0 = min(m0, row[j])
        j += 1
    return min(min(min(m0, m1), min(m2, m3)), min(min(m4, m5), min(m6, m7)))


@kernel
def table_block(cum_expert, table, scratch, losses, per_round_best, best_current):  # noqa: ANN001, ANN202
    """K rounds for every stream; leaves ``scratch`` holding the new per-level minima.

    Args:
        cum_expert: (streams, N) fixed-expert sums (updated in place).
        table: (streams, S, N) levels 1..S of the switch table (updated in place).
        scratch: (streams, S + 1) per-level minima (valid on return).
        losses: (K, streams, N) the experts' losses of the K rounds.
        per_round_best: (streams,) sums of the per-round least loss (updated in place).
        best_current: whether ``scratch`` already holds the minima of the current state.
    """
    rounds = losses.shape[0]
    streams, levels, n = table.shape
    for b in range(streams):
        if not best_current:  # the minima of the current state (numpy's _refresh_best)
            scratch[b, 0] = _row_min(cum_expert[b])
            for c in range(levels):
                scratch[b, c + 1] = _row_min(table[b, c])
        for k in range(rounds):
            loss = losses[k, b]
            # Top down: each level reads the previous round's best of the level below.
            for c in range(levels - 1, -1, -1):
                below = scratch[b, c]
                row = table[b, c]
                for j in range(n):
                    row[j] = min(row[j], below) + loss[j]
                scratch[b, c + 1] = _row_min(row)
            fixed = cum_expert[b]
            for j in range(n):
                fixed[j] = fixed[j] + loss[j]
            scratch[b, 0] = _row_min(fixed)
            per_round_best[b] += _row_min(loss)


def compiled_update(elements: int) -> Callable[..., Any] | None:
    """The compiled per-round update for a table of ``elements`` entries, or None (numpy)."""
    global _COMPILED
    if elements < MIN_ELEMENTS or not jit_enabled():
        return None
    if _COMPILED is None:
        _COMPILED = _per_round
    return _COMPILED or None


def _per_round(cum_expert, table, scratch, losses, per_round_best, best_current):  # noqa: ANN001, ANN202
    """One round (the per-round form of :func:`table_block`)."""
    table_block(cum_expert, table, scratch, losses[None], per_round_best, best_current)
