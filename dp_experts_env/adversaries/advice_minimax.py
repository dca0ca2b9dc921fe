"""Instances built for sqrt(T) regret: the classic minimax construction, with a settable gap.

The lower-bound instance of the adversarial bandit (Auer, Cesa-Bianchi, Freund & Schapire 2002,
"The nonstochastic multiarmed bandit problem", Thm 5.1): every arm has Bernoulli(1/2) losses
except one, Bernoulli(1/2 - gap), with ``gap`` of order ``sqrt(K/T)``. Uniform play then pays
``gap (1 - 1/K) T``, of order ``sqrt(K T)``, and no learner can do better than a constant
fraction of that; with a larger constant in front of ``sqrt(K/T)`` good learners find the best
arm and the instance separates them from non-learners, while every regret still scales as
``sqrt(T)``. Rate checks set ``gap`` per (T, epsilon) themselves (e.g. ``4 sqrt(K / (eps T))``).

Family ``minimax`` of the ``bandit`` kind is that instance (identity experts). Family ``minimax``
of the ``bandit_advice`` kind lifts it to experts: each round a fresh good arm (uniform on [K]),
one planted expert always recommends it, every other expert a uniform arm, so the expert gap is
``gap (1 - 1/K)`` and no arm is better than another over time (learning the arms is useless;
only following the advice helps). Seen through the experts it is the same construction over N
meta-arms, one better than the others.

Default gap (public quantities only): ``min(1/2, gap_scale * sqrt(N / T))``, N the number of
experts (= K for the ``bandit`` kind), ``gap_scale = DEFAULT_GAP_SCALE``; pass ``gap`` or
``gap_scale`` to change it (not both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dp_experts_env._validation import check_float, check_int
from dp_experts_env.adversaries.advice import PlantedExpert
from dp_experts_env.adversaries.bandit import BanditBernoulliGap
from dp_experts_env.adversaries.params import BanditParams
from dp_experts_env.adversaries.registry import register_family

__all__ = ["MinimaxBandit", "MinimaxAdvice", "DEFAULT_GAP_SCALE", "minimax_gap"]

#: The constant c of the default gap c sqrt(N/T) (docs/environments.md: where learners separate).
DEFAULT_GAP_SCALE = 4.0


def minimax_gap(n_experts: Any, horizon: Any, gap: float | None, gap_scale: float | None) -> Any:
    """The gap of a minimax instance: ``gap`` as given (the family checks it), else the default.

    The default is ``min(1/2, c sqrt(N/T))``, ``c = gap_scale`` or ``DEFAULT_GAP_SCALE``.
    """
    if gap is not None and gap_scale is not None:
        raise ValueError(
            f"give gap or gap_scale, not both (got gap={gap!r}, gap_scale={gap_scale!r}): gap "
            "sets the gap, gap_scale the c of the default gap c * sqrt(n_experts / horizon)"
        )
    if gap is not None:
        return gap  # validated by the family
    n = check_int("n_experts", n_experts, minimum=1)
    t = check_int("horizon", horizon, minimum=1)
    scale = DEFAULT_GAP_SCALE if gap_scale is None else gap_scale
    scale = check_float("gap_scale", scale, minimum=0.0, min_inclusive=False)
    return min(0.5, scale * math.sqrt(n / t))


class MinimaxBandit(BanditBernoulliGap):
    """K-armed minimax instance: Bernoulli(1/2) arms but one, Bernoulli(1/2 - gap).

    Identity experts (N = K). The best arm is uniform on [K] at reset (or ``best_arm``).
    Knobs (:class:`MinimaxBanditParams`, or keywords): ``gap`` in (0, 1/2] (None:
    ``min(1/2, gap_scale sqrt(K/T))``), ``gap_scale`` > 0 (None: ``DEFAULT_GAP_SCALE``; give
    ``gap`` or ``gap_scale``), ``best_arm``.
    """

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: MinimaxBanditParams | None = None,
        **knobs: Any,
    ) -> None:
        p = MinimaxBanditParams.resolve(params, knobs)
        gap, gap_scale, best_arm = p.gap, p.gap_scale, p.best_arm
        n_choices = n_arms if n_experts is None else n_experts  # N = K, checked by the base
        gap = minimax_gap(n_choices, horizon, gap, gap_scale)
        super().__init__(n_experts, horizon, n_arms, gap=gap, best_arm=best_arm)
        self.gap_scale = gap_scale


class MinimaxAdvice(PlantedExpert):
    """Minimax instance with advice: a planted expert always right about the round's good arm.

    Each round a good arm ``g_t`` is uniform on [K] (losses Bernoulli(1/2 - gap 1{i = g_t})); the
    planted expert (uniform on [N] at reset) recommends ``g_t``, the others a uniform arm each.
    Knobs (:class:`MinimaxAdviceParams`, which holds the defaults, or keywords): ``gap`` in
    (0, 1/2] (None: ``min(1/2, gap_scale sqrt(N/T))``), ``gap_scale`` as in
    :class:`MinimaxBandit`; ``rho_star``, ``rho`` and ``smoothing`` as in
    :class:`~dp_experts_env.adversaries.advice.PlantedExpert` (here an always-right planted
    expert: 1, 0, 0).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        n_arms: int,
        params: MinimaxAdviceParams | None = None,
        **knobs: Any,
    ) -> None:
        p = MinimaxAdviceParams.resolve(params, knobs)
        gap = minimax_gap(n_experts, horizon, p.gap, p.gap_scale)
        super().__init__(
            n_experts,
            horizon,
            n_arms,
            gap=gap,
            rho_star=p.rho_star,
            rho=p.rho,
            smoothing=p.smoothing,
        )
        self.gap_scale = p.gap_scale


@dataclass(frozen=True)
class MinimaxBanditParams(BanditParams):
    """Knobs of :class:`MinimaxBandit`."""

    gap: float | None = None
    gap_scale: float | None = None
    best_arm: int | None = None


@dataclass(frozen=True)
class MinimaxAdviceParams(BanditParams):
    """Knobs of :class:`MinimaxAdvice`."""

    gap: float | None = None
    gap_scale: float | None = None
    rho_star: float = 1.0
    rho: float = 0.0
    smoothing: float = 0.0


register_family("bandit", "minimax", MinimaxBanditParams)(MinimaxBandit)
register_family("bandit_advice", "minimax", MinimaxAdviceParams)(MinimaxAdvice)
