"""Shifting-stochastic loss models (Asi, Raman & Saha, Sec. 2.1): K change points, i.i.d. segments.

Each model is a :class:`SegmentModel` drawing its change points and segment laws at reset (structure
stream) and each round from the data stream with a fixed number of uniforms, so round ``t`` is a
pure function of (seed, t). The default comparator budget is S = K (erratum E-ARS-13). Memory is
O(B (K + 1) N), never O(T). The ``"shift"`` families and knobs: docs/environments.md.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.adversaries.base import DATA_STREAM, STRUCTURE_STREAM, Adversary, Round
from dp_experts_env.adversaries.changepoints import (
    ChangePointSchedule,
    SegmentClock,
    segment_lengths,
)
from dp_experts_env.adversaries.params import (  # noqa: F401  (ChangePoints annotates inherited fields; the API reference resolves it here)
    ChangePoints,
    FamilyParams,
    GapBaseParams,
    ShiftParams,
)
from dp_experts_env.adversaries.registry import register_family
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "SegmentModel",
    "PlantedModel",
    "BernoulliGap",
    "UniformMeans",
    "Correlated",
    "DisjointPools",
    "GapSpec",
    "bernoulli_losses",
    "clipped_normal_mean",
    "plant_best",
    "BernoulliGapParams",
    "UniformMeansParams",
    "CorrelatedParams",
    "DisjointPoolsParams",
    "MeansLawParams",
    "NoiseScaleParams",
]


class GapSpec:
    """A gap in (0, cap] or ``"hard"`` (``min(cap, sqrt(ln N / L))``); ``name`` for messages."""

    def __init__(self, gap: float | str, cap: float, name: str = "gap") -> None:
        self.cap = cap
        if isinstance(gap, str):
            self.value: float | str = check_choice(name, gap, ("hard",))
        else:
            self.value = check_float(name, gap, minimum=0.0, maximum=cap, min_inclusive=False)

    def values(self, lengths: np.ndarray, n_experts: int) -> np.ndarray:
        """Gap per run and segment, shape of ``lengths`` (segment lengths in rounds)."""
        if self.value == "hard":
            return np.minimum(self.cap, np.sqrt(math.log(n_experts) / lengths))
        return np.full(lengths.shape, float(self.value))


def plant_best(rng: BatchRNG, n_segments: int, n_experts: int) -> np.ndarray:
    """(B, n_segments) planted best experts: uniform, then uniform among all but the previous."""
    first = rng.integers(n_experts, (1,))
    if n_segments == 1:
        return first
    steps = 1 + rng.integers(n_experts - 1, (n_segments - 1,))
    return np.concatenate([first, first + np.cumsum(steps, axis=1)], axis=1) % n_experts


def bernoulli_losses(rng: BatchRNG, means: np.ndarray) -> np.ndarray:
    """Independent Bernoulli(means) losses: N uniforms per run."""
    return (rng.random(means.shape[1:]) < means).astype(np.float64)


def clipped_normal_mean(loc: np.ndarray, sigma: float) -> np.ndarray:
    """E[clip(loc + sigma Z, 0, 1)] for standard normal Z (elementwise, exact)."""
    loc = np.asarray(loc, dtype=np.float64)
    if sigma == 0.0:
        return np.clip(loc, 0.0, 1.0)
    a = (0.0 - loc) / sigma
    b = (1.0 - loc) / sigma
    pdf_a = np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    pdf_b = np.exp(-0.5 * b * b) / math.sqrt(2.0 * math.pi)
    from scipy import special  # ~0.25 s to import: paid only where used
    cdf_a, cdf_b = special.ndtr(a), special.ndtr(b)
    # P(Y > 1) * 1 + E[Y; 0 < Y < 1] with Y = loc + sigma Z.
    return (1.0 - cdf_b) + loc * (cdf_b - cdf_a) + sigma * (pdf_a - pdf_b)


class SegmentModel(Adversary):
    """A piecewise-stationary loss model: change points, one law per segment, i.i.d. rounds.

    Subclasses implement :meth:`_build` (segment laws at reset), :meth:`_rows` (the segment's
    sampling parameters and means) and :meth:`_sample` (one round, fixed uniforms per round).

    Args:
        n_experts: N (>= 2).
        horizon: T.
        shift: the schedule (:class:`ShiftParams`, see
            :class:`~dp_experts_env.adversaries.changepoints.ChangePointSchedule`); None: defaults.
        default_shifts: K when ``n_shifts`` is None (capped by the mode's capacity).
    """

    knows_means = True
    has_segments = True

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        shift: ShiftParams | None = None,
        *,
        default_shifts: int = 4,
    ) -> None:
        super().__init__(n_experts, horizon)
        if self.n_experts < 2:
            raise ValueError(f"n_experts must be >= 2 for this loss model, got {self.n_experts}")
        shift = ShiftParams() if shift is None else shift
        self.schedule = ChangePointSchedule(
            self.horizon,
            shift.n_shifts,
            shift.change_points,
            min_length=shift.min_length,
            default_shifts=default_shifts,
        )
        self.n_shifts = self.schedule.n_shifts
        self.default_switches = self.n_shifts

    @abstractmethod
    def _build(self, rng: BatchRNG, change_points: np.ndarray) -> None:
        """Draw and store the laws of the K + 1 segments of every run (structure stream)."""

    @abstractmethod
    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(params, means), each (B, N), of segment ``segment[b]`` of run ``b``."""

    @abstractmethod
    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        """One round's (B, N) losses; must consume a fixed number of uniforms."""

    def _reset(self, seeds: list[int]) -> None:
        b = len(seeds)
        self._run_index = np.arange(b)
        structure = BatchRNG(seeds, STRUCTURE_STREAM)
        self.change_points = self.schedule.draw(structure)
        self._build(structure, self.change_points)
        self._data = BatchRNG(seeds, DATA_STREAM)
        self._clock = SegmentClock(self.change_points, self.horizon)
        self._segment = np.zeros(b, np.int64)
        self._shift = np.zeros(b, bool)
        self._params, self._means = self._current(self._segment)

    def _current(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        params, means = self._rows(segment)
        means = np.array(means, dtype=np.float64)
        means.flags.writeable = False  # shared by every round of the segment
        return params, means

    def _draw(self, t: int) -> np.ndarray:
        segment, shift = self._clock.advance(t)
        if self._clock.shifted:
            self._params, self._means = self._current(segment)
        self._segment, self._shift = segment, shift
        return self._sample(self._data, self._params)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        return Round(
            losses=z,
            means=self._means if self.knows_means else None,
            segment=self._segment,
            shift=self._shift,
        )

    def _sample_block(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray | None:
        """(k, B, N) losses drawn as k :meth:`_sample` calls, or None (no block form)."""
        return None

    def next_rounds(self, k: int) -> Round | None:
        """K rounds at once where the family has a block sampler (see the base class)."""
        if (
            k < 1
            or self._neighbor is not None
            or self.t + k > self.horizon
            or type(self)._sample_block is SegmentModel._sample_block
        ):
            return None
        clock = self._clock
        cps = clock._cps  # (B, K + 1) with the sentinel T + 1
        runs = cps.shape[0]
        rounds = np.arange(self.t + 1, self.t + k + 1)
        if runs * k * cps.shape[1] <= 1 << 22:
            segment = (cps[:, None, :] <= rounds[None, :, None]).sum(axis=2).T  # (k, B)
        else:
            segment = np.stack([np.searchsorted(row, rounds, side="right") for row in cps], 1)
        shift = np.zeros((k, runs), dtype=bool)
        shift[0] = segment[0] != self._segment
        shift[1:] = segment[1:] != segment[:-1]
        params = np.empty((k, runs, self.n_experts))
        means = np.empty((k, runs, self.n_experts))
        stretch = np.flatnonzero(shift.any(axis=1)).tolist()
        bounds = [0, *[i for i in stretch if i], k]
        current_params, current_means = self._params, self._means
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            if shift[lo].any():
                current_params, current_means = self._current(segment[lo])
            params[lo:hi] = current_params
            means[lo:hi] = current_means
        losses = self._sample_block(self._data, params)
        if losses is None:  # pragma: no cover - guarded by the override check above
            return None
        # The state k calls of _draw leave: the clock, the segment, its params and means.
        clock.segment = segment[-1].copy()
        clock._next = cps[clock._rows, clock.segment]
        clock._soonest = int(clock._next.min())
        clock.shifted = bool(shift[-1].any())
        self._params, self._means = current_params, current_means
        self._segment, self._shift = segment[-1].copy(), shift[-1].copy()
        self.t += k
        return Round(
            losses=losses,
            means=means if self.knows_means else None,
            segment=segment,
            shift=shift,
        )

    def segment_means(self) -> np.ndarray:
        """(B, K + 1, N) expected losses of every segment of every run (after reset)."""
        if self.num_runs == 0:
            raise RuntimeError("call reset() before segment_means()")
        rows = [
            self._rows(np.full(self.num_runs, k, np.int64))[1] for k in range(self.n_shifts + 1)
        ]
        return np.stack(rows, axis=1)

    def state_nbytes(self) -> int:
        """Bytes held in arrays, including the clock (bounded independently of T)."""
        total = super().state_nbytes()
        clock = getattr(self, "_clock", None)
        if clock is not None:
            total += sum(v.nbytes for v in vars(clock).values() if isinstance(v, np.ndarray))
        return int(total)


class PlantedModel(SegmentModel):
    """One planted best expert per segment, changing at every shift.

    Subclasses give the planted and the other experts' values per segment (:meth:`_segment_values`).
    """

    def _build(self, rng: BatchRNG, change_points: np.ndarray) -> None:
        self._best = self._plant(rng)
        lengths = segment_lengths(change_points, self.horizon)
        best, rest = self._segment_values(lengths)
        self._best_value = np.broadcast_to(best, lengths.shape).astype(np.float64)
        self._rest_value = np.broadcast_to(rest, lengths.shape).astype(np.float64)

    def _plant(self, rng: BatchRNG) -> np.ndarray:
        """(B, K + 1) best expert of every segment (structure stream)."""
        return plant_best(rng, self.n_shifts + 1, self.n_experts)

    @abstractmethod
    def _segment_values(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(best value, rest value), each broadcastable to (B, K + 1)."""

    def _location(self, segment: np.ndarray) -> np.ndarray:
        rows = self._run_index
        loc = np.repeat(self._rest_value[rows, segment][:, None], self.n_experts, axis=1)
        loc[rows, self._best[rows, segment]] = self._best_value[rows, segment]
        return loc

    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loc = self._location(segment)
        return loc, loc

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        return bernoulli_losses(rng, params)

    def _sample_block(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray | None:
        if type(self)._sample is not PlantedModel._sample:
            return None  # a subclass samples otherwise: no block form
        k, runs, n = params.shape
        u = rng.random((k * n,)).reshape(runs, k, n).transpose(1, 0, 2)
        return (u < params).astype(np.float64)

    def best_experts(self) -> np.ndarray:
        """(B, K + 1) planted best expert of every segment (after reset)."""
        return self._best.copy()


class _BaseGap(PlantedModel):
    """Planted model with ``rest = base`` and ``best = base - gap`` (planted convention)."""

    def _init_gap(self, gap: float | str, base: float) -> None:
        self.base = check_float("base", base, minimum=0.0, maximum=1.0, min_inclusive=False)
        self.gap = GapSpec(gap, self.base)

    def _segment_values(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        gaps = self.gap.values(lengths, self.n_experts)
        return self.base - gaps, np.full(lengths.shape, self.base)


@dataclass(frozen=True)
class BernoulliGapParams(ShiftParams, GapBaseParams):
    """Knobs of :class:`BernoulliGap`: the schedule, ``gap`` and ``base``."""


@dataclass(frozen=True)
class MeansLawParams(FamilyParams):
    """The law of uniformly drawn means (shared with the stationary ``uniform_means``)."""

    low: float = 0.0
    high: float = 1.0
    distribution: str = "bernoulli"
    concentration: float = 10.0


@dataclass(frozen=True)
class UniformMeansParams(ShiftParams, MeansLawParams):
    """Knobs of :class:`UniformMeans`: the schedule and the law of the means."""


@dataclass(frozen=True)
class NoiseScaleParams(FamilyParams):
    """The shared-shock and own-noise scales (shared with the stationary ``correlated``)."""

    common_scale: float = 0.1
    idio_scale: float = 0.1


@dataclass(frozen=True)
class CorrelatedParams(ShiftParams, GapBaseParams, NoiseScaleParams):
    """Knobs of :class:`Correlated`: the schedule, ``gap``, ``base`` and the noise scales."""


@dataclass(frozen=True)
class DisjointPoolsParams(ShiftParams, GapBaseParams):
    """Knobs of :class:`DisjointPools`: the schedule, ``gap``, ``base`` and the pools."""

    pool_size: int | None = None
    outside_loss: float = 1.0


@register_family("shift", "bernoulli_gap", BernoulliGapParams)
class BernoulliGap(_BaseGap):
    """Shift family ``bernoulli_gap``: one planted best expert per segment, Bernoulli losses.

    In segment k expert ``b_k`` (see :func:`plant_best`) has mean ``base - gap``, the others
    ``base``. Knobs: :class:`BernoulliGapParams` (``gap`` in (0, base] or ``"hard"`` =
    ``min(base, sqrt(ln N / L_k))``; ``base`` in (0, 1]; the schedule's, K None:
    ``min(4, T - 1)``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: BernoulliGapParams | None = None,
        **knobs: Any,
    ) -> None:
        p = BernoulliGapParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, p)
        self._init_gap(p.gap, p.base)


@register_family("shift", "uniform_means", UniformMeansParams)
class UniformMeans(SegmentModel):
    """Shift family ``uniform_means``: fresh means ``mu_k(j) ~ U(low, high)`` in every segment.

    Losses are Bernoulli(mu), or Beta(c mu, c (1 - mu)) (inverse CDF, one uniform per expert)
    with ``distribution="beta"``, c = ``concentration``. No gap is promised. Knobs:
    :class:`UniformMeansParams` (``0 <= low < high <= 1``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: UniformMeansParams | None = None,
        **knobs: Any,
    ) -> None:
        p = UniformMeansParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, p)
        low, high, distribution, concentration = p.low, p.high, p.distribution, p.concentration
        self.low = check_float("low", low, minimum=0.0, maximum=1.0)
        self.high = check_float("high", high, minimum=0.0, maximum=1.0)
        if self.high <= self.low:
            raise ValueError(f"high must be > low, got low={self.low}, high={self.high}")
        self.distribution = check_choice("distribution", distribution, ("bernoulli", "beta"))
        self.concentration = check_float(
            "concentration", concentration, minimum=0.0, min_inclusive=False
        )

    def _build(self, rng: BatchRNG, change_points: np.ndarray) -> None:
        # Open interval: Beta parameters c mu and c (1 - mu) must stay positive.
        u = rng.open_uniform((self.n_shifts + 1, self.n_experts))
        self._table = self.low + (self.high - self.low) * u

    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mu = self._table[self._run_index, segment]
        return mu, mu

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        if self.distribution == "bernoulli":
            return bernoulli_losses(rng, params)
        u = rng.random(params.shape[1:])
        c = self.concentration
        from scipy import special  # ~0.25 s to import: paid only where used
        return special.betaincinv(c * params, c * (1.0 - params), u)


class _CorrelatedMixin:
    """Shared-shock clipped Gaussian losses around planted locations."""

    n_experts: int
    _location: Callable[[np.ndarray], np.ndarray]

    def _init_scales(self, common_scale: float, idio_scale: float) -> None:
        self.common_scale = check_float("common_scale", common_scale, minimum=0.0)
        self.idio_scale = check_float("idio_scale", idio_scale, minimum=0.0)
        self.sigma = math.hypot(self.common_scale, self.idio_scale)

    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loc = self._location(segment)
        return loc, clipped_normal_mean(loc, self.sigma)

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        g = rng.normal((self.n_experts + 1,))  # 2 (N + 1) uniforms per round
        x = params + self.common_scale * g[:, :1] + self.idio_scale * g[:, 1:]
        return np.clip(x, 0.0, 1.0)


@register_family("shift", "correlated", CorrelatedParams)
class Correlated(_CorrelatedMixin, _BaseGap):
    """Shift family ``correlated``: dependent coordinates through a shared Gaussian shock.

    Losses are ``clip(m_k(j) + common_scale g_t + idio_scale g_t(j), 0, 1)``, g standard normal,
    with the locations m_k planted as :class:`BernoulliGap`'s means; the reported means are the
    exact clipped expectations. Knobs: :class:`CorrelatedParams` (scales >= 0).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: CorrelatedParams | None = None,
        **knobs: Any,
    ) -> None:
        p = CorrelatedParams.resolve(params, knobs)
        _BaseGap.__init__(self, n_experts, horizon, p)
        self._init_gap(p.gap, p.base)
        self._init_scales(p.common_scale, p.idio_scale)


@register_family("shift", "disjoint_pools", DisjointPoolsParams)
class DisjointPools(_BaseGap):
    """Shift family ``disjoint_pools``: segment k activates its own pool of experts.

    The experts are split at random into K + 1 disjoint pools; pool k plays ``bernoulli_gap``
    in segment k, every other expert has loss ``outside_loss`` in [base, 1] (the skeleton of the
    S log(N/S)/eps lower bound). Knobs: :class:`DisjointPoolsParams` (``pool_size`` None:
    ``N // (K + 1)``; needs ``(K + 1) * pool_size <= N``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: DisjointPoolsParams | None = None,
        **knobs: Any,
    ) -> None:
        p = DisjointPoolsParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, p)
        self._init_gap(p.gap, p.base)
        pool_size, outside_loss = p.pool_size, p.outside_loss
        pools = self.n_shifts + 1
        if pools > self.n_experts:
            raise ValueError(
                f"disjoint_pools needs n_shifts + 1 <= n_experts (one pool per segment); got "
                f"n_shifts={self.n_shifts}, n_experts={self.n_experts}"
            )
        self.pool_size = (
            self.n_experts // pools
            if pool_size is None
            else check_int("pool_size", pool_size, minimum=1, maximum=self.n_experts // pools)
        )
        self.outside_loss = check_float("outside_loss", outside_loss, minimum=self.base, maximum=1)

    def _plant(self, rng: BatchRNG) -> np.ndarray:
        # Pool k is slots [k m, (k+1) m) of a random permutation (disjoint: the best changes).
        self._perm = np.argsort(rng.random((self.n_experts,)), axis=1)
        m, segs = self.pool_size, self.n_shifts + 1
        slots = np.arange(segs) * m + rng.integers(m, (segs,))
        return np.take_along_axis(self._perm, slots, axis=1)

    def _location(self, segment: np.ndarray) -> np.ndarray:
        rows = self._run_index
        m = self.pool_size
        loc = np.full((rows.size, self.n_experts), self.outside_loss)
        members = np.take_along_axis(self._perm, segment[:, None] * m + np.arange(m), axis=1)
        loc[rows[:, None], members] = self._rest_value[rows, segment][:, None]
        loc[rows, self._best[rows, segment]] = self._best_value[rows, segment]
        return loc

    def pools(self) -> np.ndarray:
        """(B, K + 1, pool_size) members of each segment's pool (after reset)."""
        m = self.pool_size
        return self._perm[:, : (self.n_shifts + 1) * m].reshape(self.num_runs, -1, m).copy()
