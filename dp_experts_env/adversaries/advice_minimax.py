"""Instances built for sqrt(T) regret: the classic minimax construction, with a settable gap.

Auer, Cesa-Bianchi, Freund & Schapire 2002, "The nonstochastic multiarmed bandit problem",
Thm 5.1; the ``bandit_advice`` family lifts it to N experts as meta-arms (docs/environments.md).
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
    """``gap`` as given, else ``min(1/2, c sqrt(N/T))`` with ``c = gap_scale`` or the default."""
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

    Identity experts (N = K); the best arm is uniform on [K] at reset (or ``best_arm``). Knobs:
    :class:`MinimaxBanditParams` (``gap`` in (0, 1/2] or ``gap_scale`` > 0, not both).
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

    Each round a good arm ``g_t`` is uniform on [K]; the planted expert recommends it, the others
    a uniform arm: only following the advice helps. Knobs: :class:`MinimaxAdviceParams` (``gap``
    as in :class:`MinimaxBandit`; ``rho_star``, ``rho``, ``smoothing`` as in
    :class:`~dp_experts_env.adversaries.advice.PlantedExpert`, defaults 1, 0, 0).
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
