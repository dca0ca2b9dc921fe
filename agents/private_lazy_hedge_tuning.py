"""private-lazy-hedge's parameters: beta, the forced-switch probability p and the budget.

Pure functions of public quantities (N, T, epsilon, delta, the mode), memoised: the derivation's
recipe (``tuning="paper"``) and the calibrated grid (docs/algorithms.md, "Calibration").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents._public_cache import public_cache
from dp_experts_env._validation import check_float
from dp_experts_env.privacy.exact_accountants import (
    calibrate,
    lazy_hedge_budget,
    lazy_hedge_epsilon,
    lazy_hedge_regret_bound,
)

__all__ = ["LazyHedgeParameters", "lazy_hedge_parameters"]

_P_GRID = 64
_SLACK = 1e-9


@dataclass(frozen=True)
class LazyHedgeParameters:
    """Parameters of private lazy Hedge and what they spend.

    Attributes:
        beta: inverse temperature.
        p: forced-switch probability per round.
        budget: real switch budget B (at most ``ceil(B)`` switches).
        composition_delta: the delta the composition is charged with (``delta / 2`` in paper mode).
        epsilon_spent: the accountant's epsilon.
        regret_bound: ``ln(N)/beta + beta T/8 + 2 T exp(-ptilde T)``.
    """

    beta: float
    p: float
    budget: float
    composition_delta: float
    epsilon_spent: float
    regret_bound: float


def _check_loaded(
    params: LazyHedgeParameters,
    n_experts: int,
    horizon: int,
    epsilon: float,
    delta: float,
    *,
    tuning: str = "paper",
    mode: str = "strict",
    beta: float | None = None,
    p: float | None = None,
    budget: float | None = None,
) -> str:
    """Why parameters read from the disk cache cannot be used ("" when they can).

    the spend is recomputed.
    """
    if math.isinf(epsilon):
        return "" if math.isinf(params.epsilon_spent) else "a finite spend at epsilon = inf"
    cdelta = delta / 2 if mode == "paper" else delta
    for name, given in (("beta", beta), ("p", p), ("budget", budget)):
        if given is not None and getattr(params, name) != given:
            return f"its {name} is not the explicit {name}={given!r}"
    if params.composition_delta != cdelta or not 0 < params.p <= 1 or params.beta <= 0:
        return "its parameters are outside the learner's range"
    spent = float(
        lazy_hedge_epsilon(params.beta, params.p, min(params.budget, horizon - 1), cdelta)
    )
    if spent > epsilon * (1 + _SLACK) or not math.isclose(
        spent, params.epsilon_spent, rel_tol=1e-9
    ):
        return (
            f"the accountant gives epsilon {spent:.6g} for its parameters (the entry says "
            f"{params.epsilon_spent:.6g}, the target is {epsilon:g})"
        )
    return ""


@public_cache(check=_check_loaded)
def lazy_hedge_parameters(
    n_experts: int,
    horizon: int,
    epsilon: float,
    delta: float,
    *,
    tuning: str = "paper",
    mode: str = "strict",
    beta: float | None = None,
    p: float | None = None,
    budget: float | None = None,
) -> LazyHedgeParameters:
    """Beta, p and budget of private lazy Hedge from (N, T, epsilon, delta) alone.

    ``tuning="paper"``: ``p = (6T)^{-1/3}``, beta by bisection on the accountant capped at Hedge's
    ``sqrt(8 ln N / T)``, budget ``3 ptilde T``. ``"calibrated"`` also searches p on a geometric
    grid for the smallest regret bound. ``mode="paper"`` charges the composition with ``delta/2``.

    Raises:
        ValueError: if explicit parameters spend more than ``epsilon``.
    """
    n, t = n_experts, horizon
    cdelta = delta / 2 if mode == "paper" else delta
    if p is not None:
        p = check_float("p", p, minimum=0.0, maximum=1.0, min_inclusive=False)
    if beta is not None:
        beta = check_float("beta", beta, minimum=0.0, min_inclusive=False)
    if budget is not None:
        budget = check_float("budget", budget, minimum=0.0)
    cap = math.sqrt(8.0 * math.log(n) / t) if n > 1 else 1.0
    if math.isinf(epsilon):
        # No privacy: the non-private lazy Hedge.
        beta = cap if beta is None else beta
        return LazyHedgeParameters(
            beta=beta,
            p=0.0 if p is None else p,
            budget=float(t) if budget is None else budget,
            composition_delta=cdelta,
            epsilon_spent=math.inf,
            regret_bound=math.log(n) / beta + beta * t / 8.0,
        )

    def spend(b, ps):
        k = lazy_hedge_budget(b, ps, t) if budget is None else budget
        # At most T - 1 switches can happen, whatever the budget: no more are charged.
        return lazy_hedge_epsilon(b, ps, np.minimum(k, t - 1), cdelta)

    def best_beta(ps: np.ndarray) -> np.ndarray:
        found = calibrate(lambda b: spend(b, ps), epsilon, np.full(ps.shape, 1e-15), 50.0)
        return np.minimum(np.asarray(found).reshape(ps.shape), cap)

    if p is None and tuning == "calibrated":
        # The recipe's p is a candidate, so calibrating never does worse than the recipe.
        grid = np.geomspace(min(0.5, 1.0 / t), 0.5, _P_GRID)
        grid = np.unique(np.append(grid, (6.0 * t) ** (-1.0 / 3.0)))
        betas = best_beta(grid) if beta is None else np.full(grid.shape, beta)
        bounds = _bound(betas, grid, t, n, budget)
        i = int(np.argmin(bounds))
        p, beta = float(grid[i]), float(betas[i])
    else:
        p = (6.0 * t) ** (-1.0 / 3.0) if p is None else p
        beta = float(best_beta(np.array([p]))[0]) if beta is None else beta
    b = float(lazy_hedge_budget(beta, p, t)) if budget is None else budget
    spent = float(spend(beta, p))
    if spent > epsilon * (1 + _SLACK):
        raise ValueError(
            f"beta={beta:g}, p={p:g}, budget={b:g} spend epsilon {spent:.6g} > epsilon="
            f"{epsilon:g}; lower beta or budget, or raise epsilon"
        )
    return LazyHedgeParameters(
        beta=beta,
        p=p,
        budget=b,
        composition_delta=cdelta,
        epsilon_spent=spent,
        regret_bound=float(_bound(beta, p, t, n, budget)),
    )


def _bound(beta, p, t: int, n: int, budget: float | None):
    """Regret bound; with a user budget the tail uses ptilde = budget / (3T) when smaller."""
    rate = np.asarray(p) + (1 - np.asarray(p)) * -np.expm1(-np.asarray(beta))
    if budget is not None:
        rate = np.minimum(rate, budget / (3.0 * t))
    return lazy_hedge_regret_bound(beta, p, t, n, switch_rate=np.clip(rate, 0.0, 1.0))
