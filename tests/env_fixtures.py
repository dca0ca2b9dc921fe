"""Small private loss models for the environment tests (not registered as families).

They follow the Adversary contract exactly and are tiny, so the env tests do not depend on the
real families' details: a Bernoulli model with one change point and known means, an adaptive
"punish the last action" model, and a bandit-with-advice model (random or identity advice).
"""

from __future__ import annotations

import numpy as np

from dp_experts_env.adversaries import Adversary, Round
from dp_experts_env.adversaries.base import ADVICE_STREAM, DATA_STREAM, STRUCTURE_STREAM
from dp_experts_env.batch_rng import BatchRNG


class CoinAdversary(Adversary):
    """Bernoulli losses, means redrawn once at round tau + 1 (one change point)."""

    knows_means = True
    has_segments = True

    def __init__(self, n_experts: int, horizon: int) -> None:
        super().__init__(n_experts, horizon)
        self.tau = max(1, horizon // 2)
        self.default_switches = 1

    def _reset(self, seeds: list[int]) -> None:
        self.data = BatchRNG(seeds, DATA_STREAM)
        self.mu = BatchRNG(seeds, STRUCTURE_STREAM).random((2, self.n_experts))

    def _draw(self, t: int) -> np.ndarray:
        seg = int(t > self.tau)
        return self.data.bernoulli(self.mu[:, seg], (self.n_experts,))

    def _finish(self, t: int, z: np.ndarray) -> Round:
        seg = int(t > self.tau)
        b = self.num_runs
        return Round(
            losses=z,
            means=self.mu[:, seg].copy(),
            segment=np.full(b, seg),
            shift=np.full(b, t == self.tau + 1),
        )


class PunishLastAdversary(Adversary):
    """Uniform base losses; the expert played last round gets loss 1."""

    oblivious = False

    def _reset(self, seeds: list[int]) -> None:
        self.data = BatchRNG(seeds, DATA_STREAM)
        self.last = np.full(len(seeds), -1)

    def _draw(self, t: int) -> np.ndarray:
        return self.data.random((self.n_experts,))

    def _finish(self, t: int, z: np.ndarray) -> Round:
        losses = z.copy()
        hit = self.last >= 0
        losses[np.flatnonzero(hit), self.last[hit]] = 1.0
        return Round(losses=losses)

    def record(self, actions: np.ndarray) -> None:
        self.last = np.asarray(actions).copy()


class AdviceAdversary(Adversary):
    """K Bernoulli arms with fixed means; random (or identity) advice each round."""

    feedback = "bandit"
    knows_means = True

    def __init__(self, n_experts: int, horizon: int, n_arms: int, identity: bool = False) -> None:
        super().__init__(n_experts, horizon, n_arms)
        if identity and n_experts != n_arms:
            raise ValueError("identity advice needs n_experts == n_arms")
        self.identity = identity

    def _reset(self, seeds: list[int]) -> None:
        self.data = BatchRNG(seeds, DATA_STREAM)
        self.advice_rng = BatchRNG(seeds, ADVICE_STREAM)
        self.mu = BatchRNG(seeds, STRUCTURE_STREAM).random((self.n_arms,))

    def _draw(self, t: int) -> np.ndarray:
        return self.data.bernoulli(self.mu, (self.n_arms,))

    def _finish(self, t: int, z: np.ndarray) -> Round:
        b, n, k = self.num_runs, self.n_experts, self.n_arms
        if self.identity:
            advice = np.broadcast_to(np.eye(k), (b, k, k)).copy()
        else:
            raw = self.advice_rng.random((n, k)) + 0.05
            advice = raw / raw.sum(axis=2, keepdims=True)
        return Round(losses=z, means=self.mu.copy(), advice=advice)
