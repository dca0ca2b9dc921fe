"""The dartboards' parameters: step size, forced-switch probability, budget and block size.

Public quantities only: Corollaries 3, 4 and 6 of Asi, Feldman, Koren & Talwar 2023 (``"paper"``)
and the calibrated grid (docs/algorithms.md, "Calibration"); memoised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents._public_cache import public_cache
from dp_experts_env._validation import check_float, check_int
from dp_experts_env.privacy.exact_accountants import (
    calibrate,
    dartboard_budget,
    dartboard_epsilon,
    dartboard_paper_epsilon,
    dartboard_regret_bound,
)

__all__ = [
    "P_MAX",
    "DartboardParameters",
    "balanced_batch_size",
    "calibrated_batch_size",
    "dartboard_parameters",
    "max_resamples",
    "paper_batch_size",
    "selection_bound",
]

P_MAX = 0.45  # derived forced-switch probabilities stay inside the theorems' p < 1/2
_P_GRID = 64  # candidate p values of tuning="calibrated"
_SLACK = 1e-9  # relative float slack when comparing a spend with its target


@dataclass(frozen=True)
class DartboardParameters:
    """Parameters of a (batched) private shrinking dartboard and what they spend.

    Attributes:
        eta: step size (weights ``(1 - eta)^L``).
        p: forced-switch probability per decision.
        budget: the paper's K; at most ``K - 1`` resamples (k starts at 1).
        batch: rounds per block (1 for Alg. 1).
        epsilon_exact: the exact accountant's epsilon for :func:`max_resamples` resamples.
        epsilon_paper: the paper's closed form (Thm 2 / Thm 5; the pure analogue for batch > 1).
        regret_bound: Thm 2 / Thm 5's ``eta T + B ln(d)/eta + 2 T exp(-T p / (3 B))``.
    """

    eta: float
    p: float
    budget: int
    batch: int
    epsilon_exact: float
    epsilon_paper: float
    regret_bound: float


def _ln_inv(delta: float) -> float:
    return math.log(1.0 / delta)


def paper_batch_size(n_experts: int, horizon: int, epsilon: float, delta: float) -> int:
    """Corollary 6's printed batch ``ln^{2/5}(1/delta) ln^{3/5}(d) / (T^{1/5} eps^{3/5})``.

    Rounded into [1, T].
    """
    b = _ln_inv(delta) ** 0.4 * math.log(n_experts) ** 0.6 / (horizon**0.2 * epsilon**0.6)
    return int(min(max(round(b), 1), horizon))


def balanced_batch_size(n_experts: int, horizon: int, epsilon: float, delta: float) -> int:
    """The batch balancing Cor. 6's two regret terms (E-AFKT-9), rounded into [1, T].

    ``B* = (400 ln^{2/3}(1/delta) ln(d) / (T^{1/3} eps^2))^{3/5}``.
    """
    # Past eps ~ 1e150 eps**2 overflows a float; such budgets all give a block of 1.
    eps = min(epsilon, 1e100)
    b = (
        400.0 * _ln_inv(delta) ** (2 / 3) * math.log(n_experts) / (horizon ** (1 / 3) * eps**2)
    ) ** 0.6
    return int(min(max(round(b), 1), horizon))


def _paper_p(horizon: int, delta: float, batch: int) -> float:
    """Corollary 3 / 4 / 6's forced-switch probability."""
    if delta == 0:
        return (batch / horizon) ** 0.5  # Cor. 4 (batch 1); its batched analogue otherwise
    return (batch / (horizon * _ln_inv(delta))) ** (1 / 3)


def _spend(mode: str, eta, p, k, horizon: int, delta: float, batch: int):
    """Epsilon spent under the mode's accountant (``k`` = the paper's K)."""
    if mode == "paper":
        return dartboard_paper_epsilon(eta, p, horizon, delta, batch)
    return dartboard_epsilon(eta, p, max_resamples(k, horizon, batch), delta, batch)


def max_resamples(budget, horizon: int, batch: int = 1):
    """Resamples a run can make: ``K - 1``, at most the ``ceil(T / B) - 1`` decisions."""
    return np.minimum(np.maximum(np.asarray(budget) - 1, 0), math.ceil(horizon / batch) - 1)


def _check_loaded(
    params: DartboardParameters,
    n_experts: int,
    horizon: int,
    epsilon: float,
    delta: float,
    *,
    tuning: str = "paper",
    mode: str = "strict",
    batch: int = 1,
    eta: float | None = None,
    p: float | None = None,
    budget: int | None = None,
) -> str:
    """Why parameters read from the disk cache cannot be used ("" when they can).

    spends are recomputed.
    """
    if params.batch != batch:
        return f"its batch {params.batch} is not {batch}"
    for name, given in (("eta", eta), ("p", p), ("budget", budget)):
        if given is not None and getattr(params, name) != given:
            return f"its {name} is not the explicit {name}={given!r}"
    if math.isinf(epsilon):
        return "" if math.isinf(params.epsilon_exact) else "a finite spend at epsilon = inf"
    if not 0 < params.eta <= params.p < 0.5 or params.budget < 1:
        return "its parameters are outside the theorems' range (0 < eta <= p < 1/2)"
    args = (params.eta, params.p, params.budget, horizon, delta, batch)
    exact = float(_spend("strict", *args))
    paper = float(_spend("paper", *args))
    if (
        exact > epsilon * (1 + _SLACK)
        or not math.isclose(exact, params.epsilon_exact, rel_tol=1e-9)
        or not math.isclose(paper, params.epsilon_paper, rel_tol=1e-9)
    ):
        return (
            f"the accountant gives epsilon {exact:.6g} for its parameters (the entry says "
            f"{params.epsilon_exact:.6g}, the target is {epsilon:g})"
        )
    return ""


@public_cache(check=_check_loaded)
def dartboard_parameters(
    n_experts: int,
    horizon: int,
    epsilon: float,
    delta: float,
    *,
    tuning: str = "paper",
    mode: str = "strict",
    batch: int = 1,
    eta: float | None = None,
    p: float | None = None,
    budget: int | None = None,
) -> DartboardParameters:
    """Step size, forced-switch probability and budget from (N, T, epsilon, delta) alone.

    ``tuning="paper"``: Corollary 3 (``delta > 0``) or 4 (``delta = 0``), Corollary 6 for
    ``batch > 1`` (approximate DP only), at ``min(epsilon, 1)`` (E-AFKT-5). ``"calibrated"``: per
    ``p`` on a geometric grid the largest eta (:func:`_calibrated_eta`) spending at most epsilon
    under the mode's accountant; the ``p`` with the smallest :func:`selection_bound` wins. Explicit
    ``eta``, ``p`` or ``budget`` override.

    Raises:
        ValueError: on parameters outside ``0 < eta <= p < 1/2`` or spending more than ``epsilon``
            under the exact accountant.
    """
    d, t = n_experts, horizon
    blocks = math.ceil(t / batch)
    if p is not None:
        p = check_float("p", p, minimum=0.0, maximum=0.5, min_inclusive=False, max_inclusive=False)
    if eta is not None:
        eta = check_float(
            "eta", eta, minimum=0.0, maximum=0.5, min_inclusive=False, max_inclusive=False
        )
    if budget is not None:
        budget = check_int("budget", budget, minimum=1)
    hedge_rate = min(P_MAX, math.sqrt(8.0 * batch * math.log(d) / t)) if d > 1 else P_MAX
    if math.isinf(epsilon):
        # No privacy: the non-private shrinking dartboard (Hedge's marginals).
        eta = hedge_rate if eta is None else eta
        p = 0.0 if p is None else p
        k = blocks + 1 if budget is None else budget
        return DartboardParameters(
            eta=float(eta),
            p=float(p),
            budget=int(k),
            batch=batch,
            epsilon_exact=math.inf,
            epsilon_paper=math.inf,
            regret_bound=float(eta * t + batch * math.log(d) / eta),
        )
    if tuning == "paper":
        eps = min(epsilon, 1.0)
        p_paper = _paper_p(t, delta, batch)
        if batch == 1 and delta > 0:  # Corollary 3
            eps0 = min(eps / 2, _ln_inv(delta) ** (1 / 3) * t ** (-1 / 6) * math.sqrt(math.log(d)))
            scale = (eps0 if eps0 > 0 else eps / 2) / 20  # d = 1: nothing to learn
        elif batch == 1:  # Corollary 4
            scale = eps / 20
        elif delta > 0:  # Corollary 6
            scale = batch * eps / 40
        elif eta is None:
            raise ValueError(
                "the batched dartboard's paper tuning (Theorem 5 / Corollary 6) is approximate DP "
                "only: pass delta > 0, or tuning='calibrated' for the derived pure-DP accountant"
            )
        p = min(p_paper, P_MAX) if p is None else p
        if eta is None:  # eta <= p (E-AFKT-4); Cor. 6 can ask for eta > p when B > 40/eps.
            eta = min(p * scale, p, P_MAX)
    elif p is None:
        # Corollary 3/4/6's p is a candidate, so calibrating never does worse than the paper.
        grid = np.geomspace(min(P_MAX, 1.0 / blocks), P_MAX, _P_GRID)
        grid = np.unique(np.append(grid, min(_paper_p(t, delta, batch), P_MAX)))
        ks = dartboard_budget(grid, t, batch) if budget is None else np.full(grid.shape, budget)
        etas = (
            _calibrated_eta(d, t, epsilon, delta, mode, batch, grid, ks, hedge_rate)
            if eta is None
            else np.full(grid.shape, eta)
        )
        bounds = selection_bound(etas, grid, t, d, batch)
        best = int(np.argmin(bounds))
        p, eta = float(grid[best]), float(etas[best])
    elif eta is None:
        k = dartboard_budget(p, t, batch) if budget is None else budget
        eta = float(
            _calibrated_eta(
                d, t, epsilon, delta, mode, batch, np.array([p]), np.array([k]), hedge_rate
            )[0]
        )
    k = dartboard_budget(p, t, batch) if budget is None else budget
    if eta > p:
        raise ValueError(f"eta must be <= p (docs/errata.md E-AFKT-4), got eta={eta:g} > p={p:g}")
    exact = float(_spend("strict", eta, p, k, t, delta, batch))
    if exact > epsilon * (1 + _SLACK):
        raise ValueError(
            f"eta={eta:g}, p={p:g}, budget={k} spend epsilon {exact:.6g} > epsilon={epsilon:g} "
            "(exact accountant); lower eta or budget, or raise epsilon"
        )
    return DartboardParameters(
        eta=float(eta),
        p=float(p),
        budget=int(k),
        batch=batch,
        epsilon_exact=exact,
        epsilon_paper=float(_spend("paper", eta, p, k, t, delta, batch)),
        regret_bound=float(dartboard_regret_bound(eta, p, t, d, batch)),
    )


def selection_bound(eta, p, horizon: int, n_experts: int, batch: int):
    """What ``tuning="calibrated"`` minimises over (B, p): ``lam T/8 + B ln d/lam + 2T e^{-Tp/3B}``.

    Theorem 2 / 5's bound with Hoeffding's 1/8 (``lam = ln(1/(1 - eta))``), so eta can reach Hedge's
    rate.
    """
    eta = np.asarray(eta, dtype=np.float64)
    lam = -np.log1p(-eta)
    p = np.asarray(p, dtype=np.float64)
    return (
        lam * horizon / 8.0
        + batch * math.log(max(n_experts, 2)) / lam
        + 2.0 * horizon * np.exp(-horizon * p / (3.0 * batch))
    )


def _calibrated_eta(
    d: int,
    t: int,
    epsilon: float,
    delta: float,
    mode: str,
    batch: int,
    ps: np.ndarray,
    ks,
    hedge_rate: float,
) -> np.ndarray:
    """Largest eta per p (<= p and <= Hedge's rate ``sqrt(8 B ln d / T)``) spending <= epsilon."""
    upper = np.minimum(np.minimum(ps, P_MAX), max(hedge_rate, 1e-12))
    return np.asarray(
        calibrate(lambda x: _spend(mode, x, ps, ks, t, delta, batch), epsilon, upper * 1e-12, upper)
    ).reshape(ps.shape)


def calibrated_batch_size(
    n_experts: int, horizon: int, epsilon: float, delta: float, mode: str
) -> int:
    """The calibrated block: the power of two up to 4x Cor. 6's balance minimising the bound."""
    top = 4 * balanced_batch_size(n_experts, horizon, epsilon, delta)
    best, best_bound = 1, math.inf
    for batch in sorted({min(2**k, horizon) for k in range(top.bit_length() + 1)}):
        params = dartboard_parameters(
            n_experts,
            horizon,
            epsilon,
            delta,
            mode=mode,
            tuning="calibrated",
            batch=batch,
        )
        bound = float(selection_bound(params.eta, params.p, horizon, n_experts, batch))
        if bound < best_bound:
            best, best_bound = batch, bound
    return best
