"""Loss streams and block plans for the block-vs-round tests of the learners' ``play_block``.

A plan cuts an episode into random ``("block", K)`` segments (K = 0 included) and single
``("act", 1)`` rounds; the losses mix coarse values (ties in the learners' sums) with fine ones
(rounding in the sums), so a kernel that sums or compares in another order than the numpy loop
shows up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mixed_losses(seed: int, horizon: int, runs: int, experts: int) -> np.ndarray:
    """(horizon, runs, experts) losses: per round, all coarse (0, 1/2, 1) or all fine."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 3, size=(horizon, runs, experts)) / 2.0
    fine = rng.random((horizon, runs, experts))
    return np.where(rng.random((horizon, runs, 1)) < 0.5, coarse, fine)


def random_segments(
    seed: int, horizon: int, act_probability: float, block_sizes: Sequence[int]
) -> list[tuple[str, int]]:
    """Random ("block", K) and ("act", 1) segments covering the horizon (K = 0 included)."""
    rng = np.random.default_rng(1000 + seed)
    out, t = [], 0
    while t < horizon:
        if rng.random() < act_probability:
            out.append(("act", 1))
            t += 1
            continue
        k = int(min(rng.choice(list(block_sizes)), horizon - t))
        out.append(("block", k))
        t += k
    return out
