"""Plumbing shared by the private learners: budget, mode, tuning and noise-backend arguments.

Every private learner takes the same keywords, validated here once:

* ``epsilon`` (> 0) and ``delta`` (in [0, 1)) -- the target privacy of the whole run.
* ``mode`` -- ``"strict"`` (default: privacy-correct noise and sensitivities) or ``"paper"``
  (reproduces the paper as printed; the claim says ``certified=False`` where the paper is wrong).
* ``tuning`` -- ``"paper"`` (the theorem's constants) or ``"calibrated"`` (picked from
  (N, T, epsilon, delta) alone, never from the losses being protected).
* ``noise`` -- the noise backend, ``"fast"`` (simulation-grade floats) or ``"grid"`` (lattice).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.base import Agent
from dp_experts_env._validation import check_choice, check_delta, check_epsilon
from dp_experts_env.privacy.noise import NoiseBackend, get_backend

__all__ = ["PrivateAgent", "MODES", "TUNINGS"]

MODES = ("strict", "paper")
TUNINGS = ("paper", "calibrated")


class PrivateAgent(Agent):
    """An :class:`~agents.base.Agent` with a privacy budget.

    Subclasses call ``super().__init__`` with the common arguments, read ``self.epsilon``,
    ``self.delta``, ``self.mode``, ``self.tuning`` and ``self.noise`` (a backend), finish their own
    validation and set-up, then call ``self.reset(seed)``.
    """

    #: delta the learner needs (> 0 for approximate-DP learners); used as the default.
    default_delta: float = 0.0
    #: tunings the learner supports (subclasses may narrow this).
    tunings: tuple[str, ...] = TUNINGS

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str = "paper",
        noise: str | NoiseBackend = "fast",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.epsilon = check_epsilon("epsilon", epsilon)
        self.delta = check_delta("delta", self.default_delta if delta is None else delta)
        self.mode = check_choice("mode", mode, MODES)
        self.tuning = check_choice("tuning", tuning, self.tunings)
        self.noise = get_backend(noise)
