"""A small private learner and copies of it with one planted contract bug each.

``BlockLeader`` is correct (a private follow-the-leader re-selected by report-noisy-min once per
block, the example plug-in's learner written again here so that the tests register nothing);
each subclass breaks exactly one check of :func:`dp_experts_env.testing.check_agent`, named in
:data:`PLANTED` (the check that must catch it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agents.base import Agent, PrivacyClaim, clip_unit, no_privacy
from agents.noisy_clipped_hedge import NoisyClippedHedge, clip_project
from dp_experts_env.privacy.mechanisms import report_noisy_min


class BlockLeader(Agent):
    """Private block leader: report-noisy-min of cumulative losses at each block start.

    Source: the example plug-in (examples/plugin_example), repeated for the contract tests.
    """

    feedback = "full"
    private = True

    def __init__(self, n_experts: int, horizon: int, *, epsilon: float = 1.0, num_envs: int = 1,
                 seed: Any = None) -> None:  # fmt: skip
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed)
        self.epsilon = float(epsilon)
        self.block = math.ceil(horizon / math.ceil(math.sqrt(horizon)))
        self.k = math.ceil(horizon / self.block)
        self.reset(seed)

    def _init_state(self) -> None:
        self.cumulative = np.zeros((self.num_envs, self.n_experts))
        self.leader = np.zeros(self.num_envs, dtype=np.int64)

    def _learn(self, losses: np.ndarray) -> None:
        self.cumulative += losses

    def _select_epsilon(self) -> float:
        return self.epsilon / self.k

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        if self.t % self.block == 0:
            self.leader = report_noisy_min(
                self.cumulative, sensitivity=1.0, epsilon=self._select_epsilon(), rng=self.rng
            ).value
        return self.leader

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of ``act`` in one call (a block entry point, as users' runs call it)."""
        return np.stack([np.asarray(self.act(row), dtype=np.int64) for row in obs])

    @property
    def privacy(self) -> PrivacyClaim:
        if math.isinf(self.epsilon):
            return no_privacy()
        return PrivacyClaim(
            epsilon=self.k * (self.epsilon / self.k),
            accountant=f"basic composition of {self.k} report-noisy-min selections",
            noise_backend="fast",
            requested_epsilon=self.epsilon,
        )


class NoClaim(BlockLeader):
    """Bug: no privacy claim."""

    @property
    def privacy(self) -> Any:
        return None


class PlaysPastHorizon(BlockLeader):
    """Bug: plays on after T rounds (and so past its claim)."""

    def _check_round(self, batch: Any) -> None:
        saved, self.horizon = self.horizon, 10**9
        try:
            super()._check_round(batch)
        finally:
            self.horizon = saved


class AcceptsNaN(BlockLeader):
    """Bug: takes NaN and out-of-range losses (the horizon check is kept)."""

    def _check_round(self, batch: Any) -> None:
        if self.t >= self.horizon:
            raise ValueError("past the horizon")


class IgnoresSeed(BlockLeader):
    """Bug: every run starts from seed 0 whatever it is given."""

    def reset(self, seed: Any = None) -> None:
        super().reset(0)


class SharedStream(BlockLeader):
    """Bug: one numpy stream for the whole batch, so run b of a batch is not a single run."""

    def _init_state(self) -> None:
        super()._init_state()
        first = self._seed if isinstance(self._seed, int) else 0
        self._shared = np.random.default_rng(first)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        if self.t % self.block == 0:
            scale = 2.0 * self.k / self.epsilon if math.isfinite(self.epsilon) else 0.0
            noisy = self.cumulative + self._shared.laplace(0.0, 1.0, self.cumulative.shape) * scale
            self.leader = np.argmin(noisy, axis=1).astype(np.int64)
        return self.leader


class MoreNoiseAtLargerEpsilon(BlockLeader):
    """Bug: the noise scale grows with epsilon (inverted), the claim unchanged."""

    _block_path_covers = frozenset({"_select_epsilon"})  # play_block is K act calls: it plays it

    def _select_epsilon(self) -> float:
        return 1.0 / (self.epsilon * self.k) if math.isfinite(self.epsilon) else math.inf


class NoisyAtInf(BlockLeader):
    """Bug: at epsilon = inf it still claims a noise backend."""

    @property
    def privacy(self) -> PrivacyClaim:
        if math.isinf(self.epsilon):
            return PrivacyClaim(epsilon=math.inf, noise_backend="fast", accountant="none")
        return super().privacy


class TenfoldTooLittleNoise(BlockLeader):
    """Bug: selects with 10x the epsilon it accounts for (a tenth of the noise)."""

    _block_path_covers = frozenset({"_select_epsilon"})  # play_block is K act calls: it plays it

    def _select_epsilon(self) -> float:
        return 10.0 * self.epsilon / self.k


class BlockFlagged(BlockLeader):
    """``_in_block`` is true while the block entry point plays (for mutants of one path only)."""

    _in_block = False

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        self._in_block = True
        try:
            return super().play_block(obs)
        finally:
            self._in_block = False


class BlockPathHalfNoise(BlockFlagged):
    """Bug: its block entry point selects with half the noise (``act`` is correct)."""

    # BlockFlagged's play_block plays this override (it reads _in_block): declared, so users'
    # runs call it (dp_experts_env/block_entry.py) and the block path differs from act.
    _block_path_covers = frozenset({"_select_epsilon"})

    def _select_epsilon(self) -> float:
        return (2.0 if self._in_block else 1.0) * self.epsilon / self.k


#: mutant -> the check that must catch it.
PLANTED = {
    NoClaim: "claim",
    PlaysPastHorizon: "horizon",
    AcceptsNaN: "observations",
    IgnoresSeed: "seeding",
    SharedStream: "batching",
    BlockPathHalfNoise: "paths",
    MoreNoiseAtLargerEpsilon: "monotone",
    NoisyAtInf: "epsilon_inf",
    TenfoldTooLittleNoise: "audit",
}


class HedgeNoiseReused(NoisyClippedHedge):
    """Draws one noise vector per run at the start and adds it every round.

    Shared by tests/test_audit_zoo.py (the audit catches it) and tests/test_controls_gaps.py
    (the fresh-noise check flags it).
    """

    def _init_state(self):
        super()._init_state()
        self._z = self.noise.laplace(self.rng, self.noise_scale, (self.n_experts,))

    def _learn(self, obs):
        w = clip_project(self._log_w - self.eta * (clip_unit(obs) + self._z), self.clip_level)
        self._log_w = np.log(w)
