"""An optional compiled form of :meth:`~dp_experts_env.regret.RegretTracker.update` (numba).

The numpy update makes four passes over the (streams, S, N) switch table per round (a minimum,
an add, then the per-level minima the next round needs) plus two over the (streams, N) sums.
At large sizes (N = 100, S = 4, B = 1024) that is the env's largest cost; one fused pass per run
does the same arithmetic 2-2.5x faster (benchmarks/README.md). Every value is the same float:
each table entry is ``min(old, best below) + loss`` and each level's best is a minimum, as in
numpy, and minima do not round; the levels are updated from the top down so each reads the
previous round's best of the level below, as the numpy path does.

Used only when the numba package is importable (``pip install -e ".[fast]"``), the problem is
large (at least :data:`MIN_ELEMENTS` table entries, so small games never pay numba's import and
compile time) and ``DP_EXPERTS_NUMBA`` is not ``0``. The numpy path stays the reference; the
tests compare the two value for value.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_ELEMENTS", "compiled_update"]

#: (streams x (S + 1) x N) entries from which the compiled update is used.
MIN_ELEMENTS = 1 << 16

_COMPILED: Callable[..., Any] | None | bool = None  # None: not tried yet; False: unavailable


def compiled_update(elements: int) -> Callable[..., Any] | None:
    """The compiled update for a table of ``elements`` entries, or None for the numpy path."""
    global _COMPILED
    if elements < MIN_ELEMENTS or os.environ.get("DP_EXPERTS_NUMBA", "1") == "0":
        return None
    if _COMPILED is None:
        _COMPILED = _build() or False
    return _COMPILED or None


def _build() -> Callable[..., Any] | None:
    try:
        import numba
        import numpy as np
    except ImportError:
        return None

    @numba.njit(cache=True, nogil=True)
    def update(cum_expert, table, scratch, losses, per_round_best, best_current):  # noqa: ANN001, ANN202
        """One round for every stream; leaves ``scratch`` holding the new per-level minima."""
        streams, levels, n = table.shape
        for b in range(streams):
            if not best_current:  # the minima of the current state (numpy's _refresh_best)
                m = cum_expert[b, 0]
                for j in range(1, n):
                    m = min(m, cum_expert[b, j])
                scratch[b, 0] = m
                for c in range(levels):
                    m = table[b, c, 0]
                    for j in range(1, n):
                        m = min(m, table[b, c, j])
                    scratch[b, c + 1] = m
            # Level c + 1 (table row c) may switch from level c: top down, so every level reads
            # the previous round's best of the level below before that best is replaced.
            for c in range(levels - 1, -1, -1):
                below = scratch[b, c]
                m = np.inf
                for j in range(n):
                    v = min(table[b, c, j], below) + losses[b, j]
                    table[b, c, j] = v
                    m = min(m, v)
                scratch[b, c + 1] = m
            m = np.inf
            least = np.inf
            for j in range(n):
                v = cum_expert[b, j] + losses[b, j]
                cum_expert[b, j] = v
                m = min(m, v)
                least = min(least, losses[b, j])
            scratch[b, 0] = m
            per_round_best[b] += least

    return update
