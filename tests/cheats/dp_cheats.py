"""A zoo of cheats: learners that must never ``hold`` a paper's claim, brought as a plug-in.

Loaded the way an outside researcher brings a learner (``DP_EXPERTS_PLUGINS=dp_cheats`` with
this folder on the path; tests/test_cheats_zoo.py). Each cheat aims at a class of claims and
tests/_cheat_targets.py lists the claims it is run through:

* ``cheat-warmup-hedge``: uniform play for ``C / epsilon`` rounds, then Hedge with step 0.5,
  no noise and an honest "not private" claim: its regret above the noiseless run is ~ 1/epsilon,
  the shape of every privacy-cost claim.
* ``cheat-warmup-hedge-liar``: the same, claiming epsilon-DP, certified (a false certificate).
* ``cheat-ftl``: follow-the-leader (deterministic, not private): linear on the lower bounds'
  constructions and on the worst cases of the upper bounds.
* ``cheat-ftl-liar``: follow-the-leader claiming epsilon-DP, certified.
* ``cheat-hedge-half``: Hedge with the fixed step 0.5 (not private).
* ``cheat-constant``: always expert 0 (linear nearly everywhere, "lazy" in the extreme).
* ``cheat-tracker``: Fixed-Share with a large share rate (not private): beats the best fixed
  expert on switching sequences, so its static regret is 0 or negative.
* ``cheat-overspent``: a genuinely private learner (the Laplace tracker) built at 4 x the
  requested epsilon; its claim honestly certifies 4 epsilon.
* ``cheat-uncertified``: the Laplace tracker whose claim says it is not certified.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

import agents
from agents.base import Agent, PrivacyClaim, no_privacy
from agents.noisy_clipped_hedge import NoisyClippedHedge

#: Rounds of uniform warm-up per unit of 1/epsilon (the 1/epsilon shape a cost claim measures).
WARMUP = 20.0


class _Cheat(Agent):
    """Full-information plumbing: cumulative losses, a (B, N) state, no privacy."""

    feedback = "full"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        num_envs: int = 1,
        seed: Any = None,
        n_arms: int | None = None,
        epsilon: float = math.inf,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.epsilon = float(epsilon)
        self.reset(seed)

    def _init_state(self) -> None:
        self.cum = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, losses: np.ndarray) -> None:
        self.cum += losses

    @property
    def privacy(self) -> PrivacyClaim:
        return no_privacy("full")

    def _hedge(self, eta: float) -> np.ndarray:
        logits = -eta * (self.cum - self.cum.min(axis=1, keepdims=True))
        weights = np.exp(logits)
        return self.rng.categorical(weights / weights.sum(axis=1, keepdims=True))


def _false_claim(epsilon: float) -> PrivacyClaim:
    """An epsilon-DP claim, certified, that nothing backs."""
    return PrivacyClaim(
        epsilon=epsilon,
        feedback="full",
        accountant="basic composition (claimed)",
        requested_epsilon=epsilon,
    )


@agents.register("cheat-warmup-hedge", private=True, summary="cheat: uniform warm-up, Hedge")
class WarmupHedge(_Cheat):
    """Uniform for ``WARMUP / epsilon`` rounds (at most T / 2), then Hedge (step 0.5), no noise."""

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        warmup = min(self.horizon // 2, math.ceil(WARMUP / self.epsilon))
        if self.t < warmup:
            return self.rng.integers(self.n_experts)
        return self._hedge(0.5)


@agents.register("cheat-warmup-hedge-liar", private=True, summary="cheat: warm-up, false claim")
class WarmupHedgeLiar(WarmupHedge):
    """:class:`WarmupHedge` claiming epsilon-DP."""

    @property
    def privacy(self) -> PrivacyClaim:
        return _false_claim(self.epsilon)


@agents.register("cheat-ftl", private=False, summary="cheat: follow the leader")
class FTL(_Cheat):
    """The expert of least cumulative loss (lowest index on ties): deterministic."""

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return np.argmin(self.cum, axis=1)


@agents.register("cheat-ftl-liar", private=True, summary="cheat: FTL with a false claim")
class FTLLiar(FTL):
    """Follow-the-leader claiming epsilon-DP."""

    @property
    def privacy(self) -> PrivacyClaim:
        return _false_claim(self.epsilon)


@agents.register("cheat-hedge-half", private=False, summary="cheat: Hedge with step 0.5")
class HedgeHalf(_Cheat):
    """Hedge with the fixed step 0.5 whatever T."""

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self._hedge(0.5)


@agents.register("cheat-constant", private=False, summary="cheat: always expert 0")
class Constant(_Cheat):
    """Expert 0 every round."""

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(self.num_envs, dtype=np.int64)


@agents.register("cheat-tracker", private=False, summary="cheat: Fixed-Share, share 0.05")
class Tracker(_Cheat):
    """Fixed-Share (step 1, share 0.05): tracks switches, negative static regret."""

    def _init_state(self) -> None:
        super()._init_state()
        self.w = np.full((self.num_envs, self.n_experts), 1.0 / self.n_experts)

    def _learn(self, losses: np.ndarray) -> None:
        super()._learn(losses)
        w = self.w * np.exp(-losses)
        w /= w.sum(axis=1, keepdims=True)
        self.w = 0.95 * w + 0.05 / self.n_experts

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(self.w)


@agents.register("cheat-overspent", private=True, summary="cheat: Laplace tracker at 4 epsilon")
class Overspent(NoisyClippedHedge):
    """The Laplace tracker built at 4 x the requested epsilon (its claim says so)."""

    def __init__(self, n_experts: int, horizon: int, *, epsilon: float = 1.0, **kw: Any) -> None:
        super().__init__(n_experts, horizon, epsilon=4.0 * epsilon, **kw)


@agents.register("cheat-uncertified", private=True, summary="cheat: Laplace tracker, uncertified")
class Uncertified(NoisyClippedHedge):
    """The Laplace tracker whose claim is marked not certified."""

    @property
    def privacy(self) -> PrivacyClaim:
        return dataclasses.replace(super().privacy, certified=False)
