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

Block play: the cheats of :class:`_Cheat` but ``cheat-constant`` have ``play_block`` (K rounds
of ``act`` in one call, bit for bit: tests/test_cheats_zoo.py checks each against ``act``), as an
outside learner may: the episode loop calls it on oblivious games, where round-by-round ``act``
was most of the zoo's CPU. They reach nothing of the library's private kernels; ``cheat-constant``
stays ``act``-only (the path of a plug-in without a block method); the two Laplace trackers
inherit the built-in's block path.
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

    # ------------------------------------------------------------- block play (K act calls)
    def _block_sums(self, obs: Any) -> np.ndarray:
        """(K, B, N) cumulative losses each round of the block chooses from, checked as ``act``.

        Row i is ``cum`` after the in-place additions of ``act``'s learning steps up to round i
        (a sequential ``cumsum``: the same floats; round 1 learns nothing).
        """
        arr = np.asarray(obs, dtype=np.float64)
        b, n = self.num_envs, self.n_experts
        if arr.ndim != 3 or arr.shape[1:] != (b, n):
            raise ValueError(f"obs must have shape (K, {b}, {n}) (K rounds), got {arr.shape}")
        if self.t + len(arr) > self.horizon:
            raise ValueError(
                f"{len(arr)} rounds past round {self.t} exceed the horizon {self.horizon}"
            )
        if arr.size and not (arr.min() >= 0.0 and arr.max() <= 1.0):
            raise ValueError("losses must be finite and lie in [0, 1]")
        sums = arr.copy()
        if len(sums) and self.t == 0:
            sums[0] = 0.0
        if len(sums):
            sums[0] += self.cum
        return np.cumsum(sums, axis=0, out=sums)

    def _finish(self, sums: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Leave the state K ``act`` calls leave; the (K, B) int64 actions."""
        actions = np.asarray(actions, dtype=np.int64).reshape(len(sums), self.num_envs)
        if len(actions):
            self.cum = sums[-1].copy()
            self.t += len(actions)
            self.last_actions = actions[-1].copy()
        return actions

    def _uniforms(self, rounds: int) -> np.ndarray:
        """(K, B) uniforms: one per run and round, as K ``rng`` reads of one each."""
        return self.rng.random((rounds,)).T

    @staticmethod
    def _categorical(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``BatchRNG.categorical`` on (K, B, N) laws with its (K, B) uniforms given."""
        cdf = np.cumsum(probs, axis=-1)
        idx = np.sum(cdf <= u[..., None] * cdf[..., -1:], axis=-1)
        return np.minimum(idx, probs.shape[-1] - 1)

    @classmethod
    def _hedge_rows(cls, sums: np.ndarray, eta: float, u: np.ndarray) -> np.ndarray:
        """:meth:`_hedge` of each round of the block (the same floats, on (K, B, N) arrays)."""
        weights = np.exp(-eta * (sums - sums.min(axis=2, keepdims=True)))
        return cls._categorical(weights / weights.sum(axis=2, keepdims=True), u)


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

    def play_block(self, obs: Any) -> np.ndarray:
        """K rounds of :meth:`act`: uniform draws in the warm-up, Hedge after, one uniform each."""
        sums = self._block_sums(obs)
        k = len(sums)
        u = self._uniforms(k)
        warmup = min(self.horizon // 2, math.ceil(WARMUP / self.epsilon))
        early = (self.t + np.arange(k)) < warmup
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        n = self.n_experts
        actions[early] = np.minimum(np.floor(u[early] * np.asarray(n)).astype(np.int64), n - 1)
        if not early.all():
            actions[~early] = self._hedge_rows(sums[~early], 0.5, u[~early])
        return self._finish(sums, actions)


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

    def play_block(self, obs: Any) -> np.ndarray:
        """K rounds of :meth:`act`: the argmin of each round's sums."""
        sums = self._block_sums(obs)
        return self._finish(sums, np.argmin(sums, axis=2))


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

    def play_block(self, obs: Any) -> np.ndarray:
        """K rounds of :meth:`act`."""
        sums = self._block_sums(obs)
        return self._finish(sums, self._hedge_rows(sums, 0.5, self._uniforms(len(sums))))


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

    def play_block(self, obs: Any) -> np.ndarray:
        """K rounds of :meth:`act`: the weights' recursion round by round, the draws at once."""
        sums = self._block_sums(obs)
        losses = np.asarray(obs, dtype=np.float64)
        laws = np.empty_like(sums)
        for i in range(len(sums)):
            if self.t + i > 0:
                w = self.w * np.exp(-losses[i])
                w /= w.sum(axis=1, keepdims=True)
                self.w = 0.95 * w + 0.05 / self.n_experts
            laws[i] = self.w
        return self._finish(sums, self._categorical(laws, self._uniforms(len(sums))))


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
