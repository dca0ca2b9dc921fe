"""The learner tests' cheap player of whole episodes (their regret and utility checks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dp_experts_env.evaluation.episode import play


def played_static_regret(env: Any, agent: Any, seed: int) -> np.ndarray:
    """Each run's final static regret, played by the library's player (``episode.play``).

    The learner's block path where it has one, bit for bit its ``act`` calls
    (tests/test_path_equivalence.py), 5-25x cheaper than a round-by-round ``rollout``; the env's
    runs seeded ``seed, seed + 1, ...`` as ``env.reset(seed=seed)`` seeds them.
    """
    horizon = int(env.unwrapped.horizon)
    seeds = list(range(seed, seed + env.num_envs))
    return play(env, agent, seeds, np.array([horizon]))["static_regret"][-1]
