"""Stationary i.i.d. loss models with gaps (Cesari & Colomboni's setting): shifting models, K = 0.

Each family is a :class:`~dp_experts_env.adversaries.shifting.SegmentModel` with no change point:
the law is drawn once per run at reset, every round is i.i.d. with a fixed number of uniforms,
rounds carry the means and the default comparator budget is S = 0. The unique best expert's index
is uniform per run. The ``"stochastic"`` families and knobs: docs/environments.md.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float
from dp_experts_env.adversaries.params import FamilyParams, GapBaseParams, ShiftParams
from dp_experts_env.adversaries.registry import register_family
from dp_experts_env.adversaries.shifting import (
    Correlated,
    CorrelatedParams,
    GapSpec,
    MeansLawParams,
    NoiseScaleParams,
    PlantedModel,
    SegmentModel,
    UniformMeans,
    UniformMeansParams,
    bernoulli_losses,
)
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "OneVsRest",
    "PrivacyDominated",
    "StatisticsDominated",
    "GeometricGaps",
    "MixedGaps",
    "Comonotone",
    "StationaryCorrelated",
    "StationaryUniformMeans",
]


@dataclass(frozen=True)
class OneVsRestParams(FamilyParams):
    """Knobs of :class:`OneVsRest`: the gap and the midpoint of the two means."""

    gap: float | str = 0.1
    center: float = 0.5


@dataclass(frozen=True)
class PrivacyDominatedParams(OneVsRestParams):
    """Knobs of :class:`PrivacyDominated`: those of ``one_vs_rest``, default gap 0.5."""

    gap: float | str = 0.5


@dataclass(frozen=True)
class StatisticsDominatedParams(OneVsRestParams):
    """Knobs of :class:`StatisticsDominated`: those of ``one_vs_rest``, default gap 0.05."""

    gap: float | str = 0.05


@dataclass(frozen=True)
class GeometricGapsParams(FamilyParams):
    """Knobs of :class:`GeometricGaps`."""

    gap: float = 0.1
    best_mean: float = 0.25


@dataclass(frozen=True)
class MixedGapsParams(FamilyParams):
    """Knobs of :class:`MixedGaps`."""

    gap: float = 0.05
    large_gap: float = 0.4
    best_mean: float = 0.25


@dataclass(frozen=True)
class StationaryCorrelatedParams(GapBaseParams, NoiseScaleParams):
    """Knobs of :class:`StationaryCorrelated`: the shift ``correlated``'s but the schedule."""


@register_family("stochastic", "one_vs_rest", OneVsRestParams)
class OneVsRest(PlantedModel):
    """Stochastic family ``one_vs_rest``: best mean ``center - gap/2``, the others ``+ gap/2``.

    Bernoulli losses. Knobs: :class:`OneVsRestParams` (``gap`` in (0, 2 min(center, 1 - center)]
    or ``"hard"`` = ``sqrt(ln N / T)``, capped; ``center`` in (0, 1)). ``privacy_dominated`` and
    ``statistics_dominated`` are this family with default gaps 0.5 and 0.05.
    """

    has_segments = False
    # privacy_dominated and statistics_dominated differ only in their declared default gap.
    _params_type: type[OneVsRestParams] = OneVsRestParams

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: OneVsRestParams | None = None,
        **knobs: Any,
    ) -> None:
        p = self._params_type.resolve(params, knobs)
        super().__init__(n_experts, horizon, ShiftParams(n_shifts=0))
        gap = p.gap
        self.center = check_float(
            "center", p.center, minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=False
        )
        self.gap = GapSpec(gap, 2.0 * min(self.center, 1.0 - self.center))

    def _segment_values(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        half = 0.5 * self.gap.values(lengths, self.n_experts)
        return self.center - half, self.center + half


@register_family("stochastic", "privacy_dominated", PrivacyDominatedParams)
class PrivacyDominated(OneVsRest):
    """Stochastic family ``privacy_dominated``: ``one_vs_rest`` with default gap 0.5."""

    _params_type = PrivacyDominatedParams


@register_family("stochastic", "statistics_dominated", StatisticsDominatedParams)
class StatisticsDominated(OneVsRest):
    """Stochastic family ``statistics_dominated``: ``one_vs_rest`` with default gap 0.05."""

    _params_type = StatisticsDominatedParams


@register_family("stochastic", "comonotone", OneVsRestParams)
class Comonotone(OneVsRest):
    """Stochastic family ``comonotone``: ``one_vs_rest`` means, ``X_j = 1{U_t < mu_j}``, one U_t."""

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        return (rng.random((1,)) < params).astype(np.float64)


class _RankedProfile(SegmentModel):
    """Sorted mean profile (best first) assigned to experts by a random permutation per run."""

    has_segments = False

    def __init__(self, n_experts: int, horizon: int) -> None:
        super().__init__(n_experts, horizon, ShiftParams(n_shifts=0))

    @abstractmethod
    def _profile(self) -> np.ndarray:
        """(N,) means sorted from the best expert to the worst."""

    def _build(self, rng: BatchRNG, change_points: np.ndarray) -> None:
        # Expert order[b, r] gets the r-th smallest mean.
        order = np.argsort(rng.random((self.n_experts,)), axis=1)
        means = np.empty(order.shape)
        np.put_along_axis(means, order, np.broadcast_to(self._profile(), order.shape), axis=1)
        self._mu = means

    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._mu, self._mu

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        return bernoulli_losses(rng, params)


@register_family("stochastic", "geometric_gaps", GeometricGapsParams)
class GeometricGaps(_RankedProfile):
    """Stochastic family ``geometric_gaps``: gaps Delta, 2 Delta, 4 Delta, ... capped at 1.

    Bernoulli losses, labels shuffled per run. Knobs: :class:`GeometricGapsParams` (``gap`` =
    Delta in (0, 1 - best_mean], ``best_mean`` in [0, 1)).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: GeometricGapsParams | None = None,
        **knobs: Any,
    ) -> None:
        super().__init__(n_experts, horizon)
        p = GeometricGapsParams.resolve(params, knobs)
        gap, best_mean = p.gap, p.best_mean
        self.best_mean = check_float(
            "best_mean", best_mean, minimum=0.0, maximum=1.0, max_inclusive=False
        )
        self.gap = check_float(
            "gap", gap, minimum=0.0, maximum=1.0 - self.best_mean, min_inclusive=False
        )

    def _profile(self) -> np.ndarray:
        k = np.arange(self.n_experts - 1, dtype=np.float64)
        rest = np.minimum(1.0, self.best_mean + self.gap * 2.0**k)
        return np.concatenate([[self.best_mean], rest])


@register_family("stochastic", "mixed_gaps", MixedGapsParams)
class MixedGaps(_RankedProfile):
    """Stochastic family ``mixed_gaps``: half the suboptimal experts near, half far.

    ``ceil((N-1)/2)`` experts at ``best_mean + gap``, the rest at ``best_mean + large_gap``.
    Knobs: :class:`MixedGapsParams` (``0 < gap <= large_gap``, ``best_mean + large_gap <= 1``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: MixedGapsParams | None = None,
        **knobs: Any,
    ) -> None:
        super().__init__(n_experts, horizon)
        p = MixedGapsParams.resolve(params, knobs)
        gap, large_gap, best_mean = p.gap, p.large_gap, p.best_mean
        self.best_mean = check_float(
            "best_mean", best_mean, minimum=0.0, maximum=1.0, max_inclusive=False
        )
        self.large_gap = check_float(
            "large_gap", large_gap, minimum=0.0, maximum=1.0 - self.best_mean, min_inclusive=False
        )
        self.gap = check_float("gap", gap, minimum=0.0, maximum=self.large_gap, min_inclusive=False)

    def _profile(self) -> np.ndarray:
        n_rest = self.n_experts - 1
        n_small = (n_rest + 1) // 2
        return np.concatenate(
            [
                [self.best_mean],
                np.full(n_small, self.best_mean + self.gap),
                np.full(n_rest - n_small, self.best_mean + self.large_gap),
            ]
        )


@register_family("stochastic", "correlated", StationaryCorrelatedParams)
class StationaryCorrelated(Correlated):
    """Stochastic family ``correlated``: the shift family ``correlated`` with no change point.

    Knobs: :class:`StationaryCorrelatedParams`, as for
    :class:`~dp_experts_env.adversaries.shifting.Correlated` (``gap="hard"`` uses L = T).
    """

    has_segments = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: StationaryCorrelatedParams | None = None,
        **knobs: Any,
    ) -> None:
        p = StationaryCorrelatedParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, CorrelatedParams(n_shifts=0, **p.knobs()))


@register_family("stochastic", "uniform_means", MeansLawParams)
class StationaryUniformMeans(UniformMeans):
    """Stochastic family ``uniform_means``: the shift family ``uniform_means`` with K = 0.

    Knobs: :class:`MeansLawParams`.
    """

    has_segments = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: MeansLawParams | None = None,
        **knobs: Any,
    ) -> None:
        p = MeansLawParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, UniformMeansParams(n_shifts=0, **p.knobs()))
