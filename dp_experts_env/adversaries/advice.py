"""Bandits with N experts' advice: the advice-model base and the ``bandit_advice`` families.

"Faster Rates for Private Adversarial Bandits" (Sections 2.2-2.3): public advice ``A_t``
(B, N, K), protected arm losses ``l_t`` (B, K), which a neighbour replaces while the advice stays
(erratum E-PAB-19); expert ``j``'s loss is ``<A_t[j], l_t>``.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_float, check_int
from dp_experts_env.adversaries.base import (
    ADVICE_STREAM,
    DATA_STREAM,
    STRUCTURE_STREAM,
    Adversary,
    Round,
)
from dp_experts_env.adversaries.changepoints import ChangePointSchedule, SegmentClock
from dp_experts_env.adversaries.params import (  # noqa: F401  (ChangePoints annotates inherited fields; the API reference resolves it here)
    BanditParams,
    ChangePoints,
    ShiftParams,
)
from dp_experts_env.adversaries.registry import register_family
from dp_experts_env.adversaries.shifting import plant_best
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "AdviceAdversary",
    "PlantedExpert",
    "ShiftingPlantedExpert",
    "DuplicatedExperts",
    "PolicyClass",
    "Lemma11Switch",
    "MAX_POLICY_CLASS_EXPERTS",
    "PlantedLawParams",
    "PlantedExpertParams",
    "ShiftingPlantedExpertParams",
    "DuplicatedExpertsParams",
    "PolicyClassParams",
    "Lemma11SwitchParams",
    "check_gap",
    "check_identity_experts",
]

MAX_POLICY_CLASS_EXPERTS = 1 << 20  # K^C experts; each round materialises (B, N, K) advice


def check_gap(gap: Any) -> float:
    """``gap`` as a float in (0, 0.5]: the mean gap of the planted arm (ValueError otherwise)."""
    return check_float("gap", gap, minimum=0.0, maximum=0.5, min_inclusive=False)


def _one_hot(rec: np.ndarray, n_arms: int, mix: np.ndarray | float = 0.0) -> np.ndarray:
    """Advice (B, N, K): ``(1 - mix) * onehot(rec) + mix / K`` (rows sum to 1)."""
    mix_arr = np.asarray(mix, dtype=np.float64)
    out = np.empty((*rec.shape, n_arms))
    if not mix_arr.ndim:
        # One mixing weight: a flat fancy index is cheaper than take/put along the last axis.
        low = mix_arr / n_arms
        out[...] = low
        flat = out.reshape(-1, n_arms)
        flat[np.arange(len(flat)), rec.reshape(-1)] = low + (1.0 - mix_arr)
        return out
    out[...] = (mix_arr / n_arms)[..., None] if mix_arr.ndim else mix_arr / n_arms
    hot = np.take_along_axis(out, rec[..., None], axis=-1) + (1.0 - mix_arr)[..., None]
    np.put_along_axis(out, rec[..., None], hot, axis=-1)
    return out


def check_identity_experts(n_experts: Any, n_arms: Any) -> int:
    """N for identity experts (one per arm): ``n_arms``, which ``n_experts`` must equal if given.

    Raises:
        ValueError: ``n_arms < 2``, ``n_experts < 1``, or ``n_experts != n_arms``.
    """
    n_arms = check_int("n_arms", n_arms, minimum=2)
    if n_experts is None:
        return n_arms
    n_experts = check_int("n_experts", n_experts, minimum=1)
    if n_experts != n_arms:
        raise ValueError(
            f"the bandit kind uses identity experts: n_experts must equal n_arms ({n_arms}) or be "
            f"omitted, got n_experts={n_experts}"
        )
    return n_experts


class AdviceAdversary(Adversary):
    """Base of the bandit models: public advice, protected arm losses, known arm means.

    Subclasses implement ``_public(t)`` (a fixed count of public coins; returns the arm means
    (B, K)) and ``_advice(t)``, and may draw structure in ``_setup(rng)``. The datum is
    Bernoulli(means) when ``stochastic_losses``, else the means. Segmented models set
    ``self._schedule`` or override ``_advance_segment``; ``self._seg`` (B,) is the segment.
    """

    feedback = "bandit"
    oblivious = True
    knows_means = True
    stochastic_losses: ClassVar[bool] = True
    #: True when the advice is the K identity experts (N = K): expert j's loss is arm j's.
    identity_advice: bool = False

    def __init__(self, n_experts: int, horizon: int, n_arms: int) -> None:
        super().__init__(n_experts, horizon, n_arms)
        self.n_arms: int = int(n_arms)  # validated by Adversary
        self._schedule: ChangePointSchedule | None = None
        self._clock: SegmentClock | None = None
        self._means: np.ndarray | None = None

    def _reset(self, seeds: list[int]) -> None:
        self._data = BatchRNG(seeds, DATA_STREAM)
        self._coins = BatchRNG(seeds, ADVICE_STREAM)
        structure = BatchRNG(seeds, STRUCTURE_STREAM)
        self._seg = np.zeros(self.num_runs, dtype=np.int64)
        self._shift = np.zeros(self.num_runs, dtype=bool)
        self._clock = None
        if self._schedule is not None:
            self._clock = SegmentClock(self._schedule.draw(structure), self.horizon)
        self._setup(structure)

    @property
    def n_segments(self) -> int:
        """Number of stationary segments (change points + 1) of a scheduled model."""
        return 1 if self._schedule is None else self._schedule.n_shifts + 1

    def _use_schedule(self, n_shifts: Any, change_points: Any, min_length: Any) -> None:
        """Adopt a change-point schedule (same knobs as the shift env's families)."""
        self._schedule = ChangePointSchedule(
            self.horizon, n_shifts, change_points, min_length=min_length, default_shifts=1
        )
        self.n_shifts = self._schedule.n_shifts
        self.default_switches = self.n_shifts

    def _setup(self, rng: BatchRNG) -> None:
        """Draw per-episode structure (planted experts, mean tables)."""
        return None

    @abstractmethod
    def _public(self, t: int) -> np.ndarray:
        """Draw round ``t``'s public randomness; return the arm means (B, K)."""

    @abstractmethod
    def _advice(self, t: int) -> np.ndarray:
        """Round ``t``'s advice (B, N, K) (after ``_public(t)``)."""

    def _advance_segment(self, t: int) -> None:
        """Enter round ``t``: update ``self._seg`` and ``self._shift`` (B,)."""
        if self._clock is not None:
            self._seg, self._shift = self._clock.advance(t)

    def _draw(self, t: int) -> np.ndarray:
        self._advance_segment(t)
        self._means = self._public(t)
        if self.stochastic_losses:
            return (self._data.random((self.n_arms,)) < self._means).astype(np.float64)
        return np.array(self._means, dtype=np.float64, copy=True)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        advice = self._advice(t)
        if not self.has_segments:
            return Round(losses=z, means=self._means, advice=advice)
        return Round(
            losses=z,
            means=self._means,
            advice=advice,
            segment=self._seg.copy(),
            shift=self._shift.copy(),
        )

    # Block form: k rounds draw what k calls of _draw/_finish draw. _has_block_form refuses a
    # per-round hook overridden below its block hook, so no subclass inherits a stale law.
    _BLOCK_HOOKS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("_public", "_public_block"),
        ("_advice", "_advice_block"),
        ("_advance_segment", "_segments_block"),
    )

    def _segments_block(self, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Enter rounds t..t+k-1: (k, B) segments and shifts; leaves ``_seg``/``_shift`` after."""
        if self._clock is None:
            segment = np.broadcast_to(self._seg, (k, self.num_runs)).copy()
            return segment, np.broadcast_to(self._shift, (k, self.num_runs)).copy()
        segment, shift = self._clock.advance_block(t, k)
        self._seg, self._shift = segment[-1].copy(), shift[-1].copy()
        return segment, shift

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        """(k, B, K) arm means of rounds t..t+k-1 as k ``_public`` calls; None: no block form."""
        return None

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        """(k, B, N, K) advice of the rounds of the last ``_public_block`` call."""
        raise NotImplementedError

    @classmethod
    def _has_block_form(cls) -> bool:
        """True when the class's block hooks mirror its per-round hooks (see above)."""

        def owner(name: str) -> type:
            return next(c for c in cls.__mro__ if name in c.__dict__)

        if owner("_public_block") is AdviceAdversary:
            return False
        if owner("_draw") is not AdviceAdversary or owner("_finish") is not AdviceAdversary:
            return False
        return all(owner(one) is owner(block) for one, block in cls._BLOCK_HOOKS)

    def next_rounds(self, k: int) -> Round | None:
        """K rounds at once where the family has a block form (see the base class)."""
        if (
            k < 1
            or self.num_runs == 0
            or self._neighbor is not None
            or self.t + k > self.horizon
            or not self._has_block_form()
        ):
            return None
        t = self.t + 1
        segment, shift = self._segments_block(t, k)
        means = self._public_block(t, k, segment)
        if means is None:  # pragma: no cover - guarded by _has_block_form
            raise RuntimeError(f"{type(self).__name__}._public_block gave no block")
        if self.stochastic_losses:
            u = self._data.random((k, self.n_arms)).transpose(1, 0, 2)  # (k, B, K)
            losses = (u < means).astype(np.float64)
            del u  # the stream's buffer can then be refilled in place
        else:
            losses = np.array(means, dtype=np.float64, copy=True)
        advice = self._advice_block(t, k)
        self._means = means[-1].copy()
        self.t += k
        if not self.has_segments:
            return Round(losses=losses, means=means, advice=advice)
        return Round(losses=losses, means=means, advice=advice, segment=segment, shift=shift)

    def _identity_block(self, k: int) -> np.ndarray:
        """Identity experts of k rounds: a read-only (k, B, K, K) view of one K x K matrix."""
        eye = self._identity_advice()[0]
        return np.broadcast_to(eye, (k, self.num_runs, self.n_arms, self.n_arms))

    def _identity_advice(self) -> np.ndarray:
        """Identity experts as a read-only (B, K, K) view of one K x K matrix made once."""
        eye = getattr(self, "_eye", None)
        if eye is None:
            eye = np.eye(self.n_arms)
            eye.setflags(write=False)
            self._eye = eye
        return np.broadcast_to(eye, (self.num_runs, self.n_arms, self.n_arms))


class PlantedExpert(AdviceAdversary):
    """Planted expert, stochastic (a separating instance for the bandit-with-advice learners).

    Each round a good arm ``g_t`` is uniform on [K]; arm losses are Bernoulli(1/2 - gap*1{i=g_t}).
    Each expert recommends ``g_t`` with probability ``rho`` (``rho_star`` for the planted expert,
    uniform on [N] at reset), else a uniform arm; advice is one-hot mixed with uniform by
    ``smoothing``. Expected per-round gap to the planted expert:
    ``gap (rho_star - rho)(1 - 1/K)(1 - smoothing)`` (defaults: docs/environments.md, "Where
    learners separate"). Knobs: :class:`PlantedExpertParams`. Public draws per round: 1 + 2N.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        n_arms: int,
        params: PlantedExpertParams | None = None,
        **knobs: Any,
    ) -> None:
        p = PlantedExpertParams.resolve(params, knobs)
        gap, rho_star, rho, smoothing = p.gap, p.rho_star, p.rho, p.smoothing
        super().__init__(n_experts, horizon, n_arms)
        self.gap = check_gap(gap)
        self.rho_star = check_float("rho_star", rho_star, minimum=0.0, maximum=1.0)
        self.rho = check_float("rho", rho, minimum=0.0, maximum=1.0)
        if not self.rho < self.rho_star:
            raise ValueError(f"rho must be < rho_star ({self.rho_star}), got rho={self.rho}")
        self.smoothing = check_float(
            "smoothing", smoothing, minimum=0.0, maximum=1.0, max_inclusive=False
        )
        self._n_behaviours = self.n_experts

    def _behaviour_of_expert(self) -> np.ndarray | None:
        """Behaviour index of each expert (None: expert j is behaviour j)."""
        return None

    def _setup(self, rng: BatchRNG) -> None:
        self._planted_seq = plant_best(rng, self.n_segments, self._n_behaviours)
        self._mix: np.ndarray | float = self.smoothing

    @property
    def planted(self) -> np.ndarray:
        """The planted behaviour of the current round, (B,) (an expert index unless duplicated)."""
        return self._planted_seq[np.arange(self.num_runs), self._seg]

    def _public(self, t: int) -> np.ndarray:
        d, k = self._n_behaviours, self.n_arms
        good = self._coins.integers(k)  # (B,)
        follow_u = self._coins.random((d,))
        random_arm = self._coins.integers(k, (d,))
        rho = np.full((self.num_runs, d), self.rho)
        rho[np.arange(self.num_runs), self.planted] = self.rho_star
        self._rec = np.where(follow_u < rho, good[:, None], random_arm)  # (B, D)
        means = np.full((self.num_runs, k), 0.5)
        means[np.arange(self.num_runs), good] -= self.gap
        return means

    def _advice(self, t: int) -> np.ndarray:
        beh = self._behaviour_of_expert()
        rec = self._rec if beh is None else self._rec[:, beh]
        return _one_hot(rec, self.n_arms, self._mix)

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        d, arms, runs = self._n_behaviours, self.n_arms, self.num_runs
        # One round's coins: the good arm (1), follow coins (d), random arms (d), as _public.
        u = self._coins.random((k, 1 + 2 * d)).transpose(1, 0, 2)  # (k, B, 1 + 2d)
        good = np.minimum(np.floor(u[..., 0] * arms).astype(np.int64), arms - 1)  # integers(K)
        random_arm = np.minimum(np.floor(u[..., 1 + d :] * arms).astype(np.int64), arms - 1)
        rho = np.full((k, runs, d), self.rho)
        planted = self._planted_seq[np.arange(runs)[None, :], segment]  # (k, B)
        np.put_along_axis(rho, planted[..., None], self.rho_star, axis=-1)
        rec = np.where(u[..., 1 : 1 + d] < rho, good[..., None], random_arm)  # (k, B, D)
        del u
        self._rec_block = rec
        self._rec = rec[-1].copy()
        means = np.full((k, runs, arms), 0.5)
        means[np.arange(k)[:, None], np.arange(runs)[None, :], good] -= self.gap
        return means

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        beh = self._behaviour_of_expert()
        rec = self._rec_block if beh is None else self._rec_block[..., beh]
        self._rec_block = None
        return _one_hot(rec, self.n_arms, self._mix)


class ShiftingPlantedExpert(PlantedExpert):
    """Shifting planted expert: the planted expert changes at S public change points.

    Knobs: :class:`ShiftingPlantedExpertParams` (the schedule's as in
    :class:`~dp_experts_env.adversaries.changepoints.ChangePointSchedule`; S >= 1 needs N >= 2).
    The new planted expert is uniform among the other N - 1; ``default_switches = S``.
    """

    has_segments = True

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        n_arms: int,
        params: ShiftingPlantedExpertParams | None = None,
        **knobs: Any,
    ) -> None:
        p = ShiftingPlantedExpertParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, n_arms, p)
        self._use_schedule(p.n_shifts, p.change_points, p.min_length)
        if self.n_shifts and self._n_behaviours < 2:
            raise ValueError("n_shifts >= 1 needs at least 2 experts (the planted one changes)")


class DuplicatedExperts(PlantedExpert):
    """Duplicated experts: D planted-expert behaviours, each copied about N/D times.

    Expert ``j`` copies behaviour ``j mod D``, mixed with uniform by its own
    ``xi_j ~ U[0, perturbation)`` drawn at reset; the best expert is the planted behaviour's
    least perturbed copy. Knobs: :class:`DuplicatedExpertsParams` (D None: ``min(4, N)``).
    Public draws per round: 1 + 2D.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        n_arms: int,
        params: DuplicatedExpertsParams | None = None,
        **knobs: Any,
    ) -> None:
        p = DuplicatedExpertsParams.resolve(params, knobs)
        n_behaviours, perturbation = p.n_behaviours, p.perturbation
        super().__init__(n_experts, horizon, n_arms, gap=p.gap, rho_star=p.rho_star, rho=p.rho)
        if n_behaviours is None:
            n_behaviours = min(4, self.n_experts)
        self._n_behaviours = check_int(
            "n_behaviours", n_behaviours, minimum=1, maximum=self.n_experts
        )
        self.n_behaviours = self._n_behaviours
        self.perturbation = check_float(
            "perturbation", perturbation, minimum=0.0, maximum=1.0, max_inclusive=False
        )
        self._beh = np.arange(self.n_experts) % self._n_behaviours

    def _behaviour_of_expert(self) -> np.ndarray | None:
        return self._beh

    def _setup(self, rng: BatchRNG) -> None:
        super()._setup(rng)
        self._mix = self.perturbation * rng.random((self.n_experts,))

    @property
    def best_expert(self) -> np.ndarray:
        """The planted behaviour's least perturbed copy, (B,)."""
        planted = self.planted
        mix = np.where(self._beh[None, :] == planted[:, None], self._mix, np.inf)
        return np.argmin(mix, axis=1)


class PolicyClass(AdviceAdversary):
    """Policy-class (contextual) experts: N = K^C deterministic maps.

    Each round a public context ``c_t`` is uniform on [C]; expert ``j`` recommends digit ``c_t``
    of ``j`` in base K. Arm losses are Bernoulli with a mean table drawn at reset: best arm
    ``b(c)`` at ``1/2 - gap``, the others ``1/2 + spread * U/2`` (a choice keeping a margin of
    ``gap``); the best expert is ``sum_c b(c) K^c``. Knobs: :class:`PolicyClassParams`
    (``n_contexts`` None: derived from ``n_experts``). N <= ``MAX_POLICY_CLASS_EXPERTS``.
    """

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: PolicyClassParams | None = None,
        **knobs: Any,
    ) -> None:
        p = PolicyClassParams.resolve(params, knobs)
        n_contexts, gap, spread = p.n_contexts, p.gap, p.spread
        k = check_int("n_arms", n_arms, minimum=2)
        if n_contexts is None:
            if n_experts is None:
                raise ValueError("policy_class needs n_contexts (C) or n_experts (= n_arms**C)")
            n = check_int("n_experts", n_experts, minimum=1)
            c = 0
            while k**c < n:
                c += 1
            if k**c != n:
                raise ValueError(
                    f"policy_class needs n_experts = n_arms**n_contexts; {n} is not a power of "
                    f"n_arms={k} (pass n_contexts)"
                )
            n_contexts = max(c, 1)
        n_contexts = check_int("n_contexts", n_contexts, minimum=1)
        if k**n_contexts > MAX_POLICY_CLASS_EXPERTS:
            raise ValueError(
                f"policy_class has n_arms**n_contexts = {k}**{n_contexts} experts, more than "
                f"MAX_POLICY_CLASS_EXPERTS={MAX_POLICY_CLASS_EXPERTS}"
            )
        if n_experts is not None and check_int("n_experts", n_experts, minimum=1) != k**n_contexts:
            raise ValueError(
                f"policy_class needs n_experts = n_arms**n_contexts = {k**n_contexts}, "
                f"got n_experts={n_experts}"
            )
        super().__init__(k**n_contexts, horizon, k)
        self.n_contexts = n_contexts
        self.gap = check_gap(gap)
        self.spread = check_float("spread", spread, minimum=0.0, maximum=1.0)
        self._powers = (k ** np.arange(n_contexts)).astype(np.int64)

    def _setup(self, rng: BatchRNG) -> None:
        c, k = self.n_contexts, self.n_arms
        best = rng.integers(k, (c,))  # (B, C)
        table = 0.5 + 0.5 * self.spread * rng.random((c, k))
        np.put_along_axis(table, best[..., None], 0.5 - self.gap, axis=-1)
        self._best_arm = best
        self._table = table

    @property
    def best_expert(self) -> np.ndarray:
        """Index of the expert mapping every context to its best arm, (B,)."""
        return (self._best_arm * self._powers).sum(axis=1)

    def _public(self, t: int) -> np.ndarray:
        self.context = self._coins.integers(self.n_contexts)  # (B,)
        return self._table[np.arange(self.num_runs), self.context]

    def recommendations(self) -> np.ndarray:
        """Arms recommended by every expert for the current context, (B, N) int64."""
        expert = np.arange(self.n_experts, dtype=np.int64)
        return (expert[None, :] // self._powers[self.context][:, None]) % self.n_arms

    def _advice(self, t: int) -> np.ndarray:
        return _one_hot(self.recommendations(), self.n_arms)

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        c = self.n_contexts
        u = self._coins.random((k,)).T  # (k, B): one coin per round, as _public
        context = np.minimum(np.floor(u * c).astype(np.int64), c - 1)
        del u
        self._context_block = context
        self.context = context[-1].copy()
        return self._table[np.arange(self.num_runs)[None, :], context]

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        expert = np.arange(self.n_experts, dtype=np.int64)
        rec = (expert // self._powers[self._context_block][..., None]) % self.n_arms
        self._context_block = None
        return _one_hot(rec, self.n_arms)


class Lemma11Switch(AdviceAdversary):
    """Lemma-11 switch instance ("Faster Rates for Private Adversarial Bandits", Section 5.2).

    Arm 0 has loss 1/2; arm 1 has loss 1 before ``switch_round`` = t0 and 0 from it on; further
    arms (an extension) loss 1. Experts: the K identity experts, then N - K distractors on arm 0.
    Knobs: :class:`Lemma11SwitchParams` (t0 in [1, T+1], None: ``T // 4 + 1``; T+1 never).
    No random draws.
    """

    stochastic_losses = False
    has_segments = True

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        n_arms: int,
        params: Lemma11SwitchParams | None = None,
        **knobs: Any,
    ) -> None:
        switch_round = Lemma11SwitchParams.resolve(params, knobs).switch_round
        super().__init__(n_experts, horizon, n_arms)
        if self.n_experts < self.n_arms:
            raise ValueError(
                f"lemma11_switch needs n_experts >= n_arms ({self.n_arms}: identity experts plus "
                f"distractors), got n_experts={self.n_experts}"
            )
        if switch_round is None:
            switch_round = self.horizon // 4 + 1
        self.switch_round = check_int(
            "switch_round", switch_round, minimum=1, maximum=self.horizon + 1
        )
        self._switches = 2 <= self.switch_round <= self.horizon
        self.default_switches = int(self._switches)
        advice = np.zeros((self.n_experts, self.n_arms))
        advice[np.arange(self.n_arms), np.arange(self.n_arms)] = 1.0
        advice[self.n_arms :, 0] = 1.0
        advice.setflags(write=False)
        self._advice_matrix = advice
        self.identity_advice = self.n_experts == self.n_arms  # no distractors: the identity

    def _public(self, t: int) -> np.ndarray:
        row = np.ones(self.n_arms)
        row[0] = 0.5
        row[1] = 0.0 if t >= self.switch_round else 1.0
        return np.broadcast_to(row, (self.num_runs, self.n_arms)).copy()

    def _advance_segment(self, t: int) -> None:
        # Segment 1 from the switch on; a switch at round 1 or T+1 is no switch at all.
        if self._switches and t == self.switch_round:
            self._seg = np.ones(self.num_runs, dtype=np.int64)
            self._shift = np.ones(self.num_runs, dtype=bool)
        else:
            self._shift = np.zeros(self.num_runs, dtype=bool)

    def _advice(self, t: int) -> np.ndarray:
        return np.broadcast_to(self._advice_matrix, (self.num_runs, self.n_experts, self.n_arms))

    def _public_block(self, t: int, k: int, segment: np.ndarray) -> np.ndarray | None:
        rows = np.ones((k, self.n_arms))
        rows[:, 0] = 0.5
        rows[:, 1] = np.where(np.arange(t, t + k) >= self.switch_round, 0.0, 1.0)
        return np.broadcast_to(rows[:, None, :], (k, self.num_runs, self.n_arms)).copy()

    def _segments_block(self, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        rounds = np.arange(t, t + k)[:, None]
        if self._switches:
            segment = np.where(rounds >= self.switch_round, 1, self._seg[None, :])
            shift = np.broadcast_to(rounds == self.switch_round, (k, self.num_runs)).copy()
        else:
            segment = np.broadcast_to(self._seg, (k, self.num_runs))
            shift = np.zeros((k, self.num_runs), dtype=bool)
        segment = segment.astype(np.int64)
        self._seg, self._shift = segment[-1].copy(), shift[-1].copy()
        return segment, shift

    def _advice_block(self, t: int, k: int) -> np.ndarray:
        shape = (k, self.num_runs, self.n_experts, self.n_arms)
        return np.broadcast_to(self._advice_matrix, shape)


@dataclass(frozen=True)
class PlantedLawParams(BanditParams):
    """The planted-expert law shared by :class:`PlantedExpert` and :class:`DuplicatedExperts`."""

    gap: float = 0.4
    rho_star: float = 0.9
    rho: float = 0.1


@dataclass(frozen=True)
class PlantedExpertParams(PlantedLawParams):
    """Knobs of :class:`PlantedExpert`: the planted law and the advice smoothing."""

    smoothing: float = 0.0


@dataclass(frozen=True)
class ShiftingPlantedExpertParams(PlantedExpertParams, ShiftParams):
    """Knobs of :class:`ShiftingPlantedExpert`: the planted expert's and the schedule."""


@dataclass(frozen=True)
class DuplicatedExpertsParams(PlantedLawParams):
    """Knobs of :class:`DuplicatedExperts`: the planted law, D and the perturbation."""

    n_behaviours: int | None = None
    perturbation: float = 0.05


@dataclass(frozen=True)
class PolicyClassParams(BanditParams):
    """Knobs of :class:`PolicyClass`."""

    n_contexts: int | None = None
    gap: float = 0.1
    spread: float = 0.5


@dataclass(frozen=True)
class Lemma11SwitchParams(BanditParams):
    """Knobs of :class:`Lemma11Switch` (both bandit kinds)."""

    switch_round: int | None = None


register_family("bandit_advice", "planted_expert", PlantedExpertParams)(PlantedExpert)
register_family("bandit_advice", "shifting_planted_expert", ShiftingPlantedExpertParams)(
    ShiftingPlantedExpert
)
register_family("bandit_advice", "policy_class", PolicyClassParams)(PolicyClass)
register_family("bandit_advice", "duplicated_experts", DuplicatedExpertsParams)(DuplicatedExperts)
register_family("bandit_advice", "lemma11_switch", Lemma11SwitchParams)(Lemma11Switch)
