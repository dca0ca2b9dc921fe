"""``private-block-ftpl``: follow the perturbed leader, re-chosen privately once per block.

Source: follow-the-perturbed-leader (Kalai & Vempala, "Efficient algorithms for online decision
problems", 2005) made private the simplest way: the leader is re-selected at the start of each of
k blocks by report-noisy-min on the cumulative losses (Dwork & Roth, "The Algorithmic Foundations
of Differential Privacy", Claim 3.9), and the k selections compose (basic composition).

Privacy. Neighbouring loss sequences differ in one round's loss vector (any change within
[0, 1]^N). Each cumulative loss then moves by at most 1, so every selection is report-noisy-min
with sensitivity 1. The first selection reads no loss (the sums are still zero: a uniform draw),
so only the m = k - 1 later ones (at least 1) spend privacy: each draws Laplace 2 m / epsilon,
epsilon / m-DP, and they compose to epsilon-DP against adaptive adversaries (a claim that is
tight, so the audit can test it). The block length ceil(T / k) and k = ceil(sqrt(T)) use the
public horizon only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import agents
from agents.base import Agent, PrivacyClaim, no_privacy
from dp_experts_env.privacy.accounting import basic_composition
from dp_experts_env.privacy.declaration import Mechanism, Repeated, ReportNoisyMin
from dp_experts_env.privacy.mechanisms import report_noisy_min
from dp_experts_env.privacy.noise import NoiseBackend, get_backend


@agents.register(
    "private-block-ftpl",
    private=True,
    summary="private FTPL: report-noisy-min leader once per block (example plug-in)",
)
class PrivateBlockFTPL(Agent):
    """Private follow-the-perturbed-leader on k blocks (an example plug-in).

    Source: Kalai & Vempala (2005), follow-the-perturbed-leader; the leader is released by
    report-noisy-min (Dwork & Roth, Claim 3.9) at the start of each block. Deviation from
    FTPL: one selection per block instead of every round, so the claim composes k releases.

    Args:
        n_experts: N. horizon: T. num_envs: B runs. seed: run b uses seed + b.
        epsilon: the privacy level (inf: the exact leader, random ties; not private).
        n_blocks: k, the number of selections (default ceil(sqrt(T))).
        noise: noise backend, "fast" or "grid" (or a backend object). The audit passes a
            weakened backend here to check its own power (a learner built with half the
            noise must be caught), so every draw goes through it.
    """

    feedback = "full"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        epsilon: float = 1.0,
        n_blocks: int | None = None,
        num_envs: int = 1,
        seed: Any = None,
        noise: str | NoiseBackend = "fast",
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed)
        if not (isinstance(epsilon, (int, float)) and epsilon > 0):
            raise ValueError(f"epsilon must be > 0 (math.inf: not private), got {epsilon!r}")
        self.epsilon = float(epsilon)
        k = math.ceil(math.sqrt(horizon)) if n_blocks is None else n_blocks
        if not (isinstance(k, int) and 1 <= k <= horizon):
            raise ValueError(f"n_blocks must be an int in [1, horizon={horizon}], got {k!r}")
        self.block = math.ceil(horizon / k)
        self.n_releases = math.ceil(horizon / self.block)  # selections actually made
        self.n_spending = max(1, self.n_releases - 1)  # the first reads no loss
        self.noise = get_backend(noise)
        self.reset(seed)

    def _init_state(self) -> None:
        self.cumulative = np.zeros((self.num_envs, self.n_experts))
        self.leader = np.zeros(self.num_envs, dtype=np.int64)

    def _learn(self, losses: np.ndarray) -> None:
        self.cumulative += losses

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        if self.t % self.block == 0:  # the first round of a block: select privately
            self.leader = report_noisy_min(
                self.cumulative,
                sensitivity=1.0,
                epsilon=self.epsilon / self.n_spending,
                rng=self.rng,
                noise=self.noise,
            ).value
        return self.leader

    @property
    def declaration(self) -> Mechanism | None:
        """What runs: n_spending report-noisy-min selections on the same cumulative losses.

        The audit reads it to choose its scenarios (selections: rival pairs around a block
        start) and its checks; None at epsilon = inf (nothing private runs).
        """
        if math.isinf(self.epsilon):
            return None
        sensitivity = self.noise.effective_sensitivity(1.0, 1)
        scale = 2.0 * sensitivity / (self.epsilon / self.n_spending)  # as report_noisy_min draws
        selection = ReportNoisyMin("experts by cumulative loss", self.n_experts, sensitivity, scale)
        return Repeated(selection, self.n_spending, what="one selection per block after the first")

    @property
    def privacy(self) -> PrivacyClaim:
        """epsilon-DP: basic composition of the n_spending report-noisy-min selections."""
        if math.isinf(self.epsilon):
            return no_privacy("full")
        total = basic_composition([self.epsilon / self.n_spending] * self.n_spending)
        return PrivacyClaim(
            epsilon=total.epsilon,
            feedback="full",
            accountant=f"{total.accountant} of report-noisy-min (sensitivity 1)",
            noise_backend=self.noise.name,
            requested_epsilon=self.epsilon,
        )
