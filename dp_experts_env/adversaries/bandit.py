"""The ``bandit`` kind: K-armed adversarial bandits, i.e. bandits with the K identity experts.

Each model is an :class:`~dp_experts_env.adversaries.advice.AdviceAdversary` whose experts are
the arms (N = K; ``n_experts`` may be omitted), with ``identity_advice`` set so the env skips the
advice product. ``minimax`` and ``replay`` live in ``advice_minimax`` and ``advice_replay``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_int
from dp_experts_env.adversaries.advice import (
    AdviceAdversary,
    Lemma11Switch,
    Lemma11SwitchParams,
    check_gap,
    check_identity_experts,
)
from dp_experts_env.adversaries.params import (  # noqa: F401  (ChangePoints annotates inherited fields; the API reference resolves it here)
    BanditParams,
    ChangePoints,
    ShiftParams,
)
from dp_experts_env.adversaries.registry import register_family
from dp_experts_env.adversaries.shifting import plant_best
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "BanditBernoulliGap",
    "ShiftingBernoulli",
    "PeriodicSwap",
    "lemma11_bandit",
    "BanditBernoulliGapParams",
    "ShiftingBernoulliParams",
    "PeriodicSwapParams",
]


class PeriodicSwap(AdviceAdversary):
    """Batch-aliasing periodic losses, identity experts.

    Arms 0 and 1 swap which one has loss 0 every ``period`` rounds (arm 0 first); the others
    have loss 1. A learner committing for about ``period`` rounds pays.
    ``default_switches = ceil(T/period) - 1``. Knobs: :class:`PeriodicSwapParams`. No draws.
    """

    stochastic_losses = False
    has_segments = True
    identity_advice = True

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: PeriodicSwapParams | None = None,
        **knobs: Any,
    ) -> None:
        p = PeriodicSwapParams.resolve(params, knobs)
        super().__init__(check_identity_experts(n_experts, n_arms), horizon, n_arms)
        self.period = check_int("period", p.period, minimum=1)
        self.default_switches = -(-self.horizon // self.period) - 1

    def _advance_segment(self, t: int) -> None:
        # Arithmetic, not a table of change points: O(1) memory for any T.
        seg = (t - 1) // self.period
        self._seg = np.full(self.num_runs, seg, dtype=np.int64)
        self._shift = np.full(self.num_runs, seg > 0 and (t - 1) % self.period == 0)

    def _public(self, t: int) -> np.ndarray:
        row = np.ones(self.n_arms)
        row[((t - 1) // self.period) % 2] = 0.0
        return np.broadcast_to(row, (self.num_runs, self.n_arms)).copy()

    def _advice(self, t: int) -> np.ndarray:
        return self._identity_advice()

    def _segments_block(self, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        rounds = np.arange(t, t + k, dtype=np.int64)
        seg = (rounds - 1) // self.period
        segment = np.broadcast_to(seg[:, None], (k, self.num_runs)).copy()
        starts = (seg > 0) & ((rounds - 1) % self.period == 0)
        shift = np.broadcast_to(starts[:, None], (k, self.num_runs)).copy()
        self._seg, self._shift = segment[-1].copy(), shift[-1].copy()
        return segment, shift

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        rows = np.ones((k, self.n_arms))
        rows[np.arange(k), ((np.arange(t, t + k) - 1) // self.period) % 2] = 0.0
        return np.broadcast_to(rows[:, None, :], (k, self.num_runs, self.n_arms)).copy()

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        return self._identity_block(k)


class BanditBernoulliGap(AdviceAdversary):
    """Stochastic K-armed bandit with a gap (identity experts).

    Arm losses are Bernoulli(1/2) except the best arm's, Bernoulli(1/2 - gap); the best arm is
    uniform on [K] at reset (or ``best_arm``). Knobs: :class:`BanditBernoulliGapParams`.
    """

    identity_advice = True

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: BanditBernoulliGapParams | None = None,
        **knobs: Any,
    ) -> None:
        p = BanditBernoulliGapParams.resolve(params, knobs)
        gap, best_arm = p.gap, p.best_arm
        n_experts = check_identity_experts(n_experts, n_arms)
        super().__init__(n_experts, horizon, n_arms)
        self.gap = check_gap(gap)
        self.best_arm = None
        if best_arm is not None:
            self.best_arm = check_int("best_arm", best_arm, minimum=0, maximum=self.n_arms - 1)

    def _setup(self, rng: BatchRNG) -> None:
        seq = plant_best(rng, self.n_segments, self.n_arms)
        if self.best_arm is not None:
            # Shift the sequence so segment 0 starts at best_arm (the same draws for any best_arm).
            seq = (seq - seq[:, :1] + self.best_arm) % self.n_arms
        self._best_seq = seq

    @property
    def best(self) -> np.ndarray:
        """The best arm of the current round, (B,)."""
        return self._best_seq[np.arange(self.num_runs), self._seg]

    def _public(self, t: int) -> np.ndarray:
        means = np.full((self.num_runs, self.n_arms), 0.5)
        means[np.arange(self.num_runs), self.best] -= self.gap
        return means

    def _advice(self, t: int) -> np.ndarray:
        return self._identity_advice()

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        runs = self.num_runs
        best = self._best_seq[np.arange(runs)[None, :], segment]  # (k, B), as ``best`` per round
        means = np.full((k, runs, self.n_arms), 0.5)
        means[np.arange(k)[:, None], np.arange(runs)[None, :], best] -= self.gap
        return means

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        return self._identity_block(k)


class ShiftingBernoulli(BanditBernoulliGap):
    """:class:`BanditBernoulliGap` whose best arm changes at S public change points.

    Each new best arm is uniform among the other K - 1; ``best_arm`` is the first segment's.
    Knobs: :class:`ShiftingBernoulliParams` (the schedule's as in
    :class:`~dp_experts_env.adversaries.advice.ShiftingPlantedExpert`). ``default_switches = S``.
    """

    has_segments = True

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: ShiftingBernoulliParams | None = None,
        **knobs: Any,
    ) -> None:
        p = ShiftingBernoulliParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, n_arms, p)
        self._use_schedule(p.n_shifts, p.change_points, p.min_length)


@dataclass(frozen=True)
class PeriodicSwapParams(BanditParams):
    """Knobs of :class:`PeriodicSwap`."""

    period: int = 100


@dataclass(frozen=True)
class BanditBernoulliGapParams(BanditParams):
    """Knobs of :class:`BanditBernoulliGap`."""

    gap: float = 0.1
    best_arm: int | None = None


@dataclass(frozen=True)
class ShiftingBernoulliParams(BanditBernoulliGapParams, ShiftParams):
    """Knobs of :class:`ShiftingBernoulli`: the gap, the first best arm and the schedule."""


register_family("bandit", "bernoulli_gap", BanditBernoulliGapParams)(BanditBernoulliGap)
register_family("bandit", "shifting_bernoulli", ShiftingBernoulliParams)(ShiftingBernoulli)
register_family("bandit", "periodic_swap", PeriodicSwapParams)(PeriodicSwap)


@register_family("bandit", "lemma11_switch", Lemma11SwitchParams)
def lemma11_bandit(
    n_experts: int | None = None,
    horizon: int | None = None,
    n_arms: int | None = None,
    params: Lemma11SwitchParams | None = None,
    **knobs: Any,
) -> Lemma11Switch:
    """Lemma-11 switch instance with identity experts only (N = K)."""
    n_experts = check_identity_experts(n_experts, n_arms)
    return Lemma11Switch(n_experts, horizon, n_arms, Lemma11SwitchParams.resolve(params, knobs))
