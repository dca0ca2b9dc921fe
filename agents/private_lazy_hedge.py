"""Private lazy Hedge: the discrete (experts) form of P-COMW, unnormalised-ratio variant.

Source: Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy Online Convex
Optimization", Algorithm 1 (P-COMW) specialised to N experts (derived for this suite,
docs/algorithms.md): on a finite set the strong-convexity term is constant, the Gibbs law is Hedge's
``exp(-beta L)``, and the rejection step becomes the Geulen-Voecking-Winkler dartboard with forced
resampling and a switch budget. The mechanism is :mod:`agents._lazy_sampler` with inverse
temperature ``beta``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from agents._lazy_sampler import LazySampler
from agents._public_cache import public_cache
from agents.base import PrivacyClaim
from agents.registry import register
from dp_experts_env._validation import check_float
from dp_experts_env.privacy.declaration import Mechanism, SamplingSteps
from dp_experts_env.privacy.exact_accountants import (
    calibrate,
    lazy_hedge_budget,
    lazy_hedge_epsilon,
    lazy_hedge_regret_bound,
)
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["LazyHedgeParameters", "PrivateLazyHedge", "lazy_hedge_parameters"]

_P_GRID = 64
_SLACK = 1e-9


@dataclass(frozen=True)
class LazyHedgeParameters:
    """Parameters of private lazy Hedge and what they spend.

    Attributes:
        beta: inverse temperature.
        p: forced-switch probability per round.
        budget: real switch budget B (the learner switches while ``b < B``: ``ceil(B)`` at most).
        composition_delta: the delta the composition is charged with (``delta`` in strict mode,
            ``delta / 2`` in paper mode).
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

    The spend is recomputed with the accountant from the loaded beta, p and budget: the claim
    a learner states is never read from the cache.
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

    ``tuning="paper"`` is the derivation's recipe: ``p = (6T)^{-1/3}``, beta by bisection on the
    accountant, then ``beta <- min(beta, sqrt(8 ln N / T))`` (Hedge's non-private rate), budget
    ``3 ptilde T``. ``tuning="calibrated"`` also searches ``p`` on a geometric grid for the
    smallest regret bound. ``mode="paper"`` charges the composition with ``delta/2`` (the
    paper's Theorem "DP" split); ``"strict"`` uses the full delta,
    which is valid because every per-step delta is 0.

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
        # No privacy: Hedge's rate, no forced resamples, a budget that never binds -- exactly
        # the non-private lazy Hedge (shrinking dartboard with exp(-beta l) weights).
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


@register(
    "private-lazy-hedge",
    private=True,
    summary="Hedge sampled lazily with forced resamples and a budget (P-COMW on experts, 001)",
)
class PrivateLazyHedge(LazySampler):
    """Private lazy Hedge (unnormalised ratio): exponential weights, resampled rarely.

    Source: the discrete form of Algorithm 1 (P-COMW, Section 4) of Agarwal, Kale, Singh &
    Thakurta, "Improved Differentially Private and Lazy Online Convex Optimization" (derived for
    this suite; same mechanism as Asi, Feldman, Koren & Talwar's private shrinking dartboard with
    ``e^{-beta l}`` in place of ``(1 - eta)^l``). Built for oblivious (and stochastic) adversaries:
    the regret bound ``ln(N)/beta + beta T/8 + 2 T exp(-ptilde T)`` holds against them only.

    Algorithm: ``I_1`` uniform, ``b = 0``. After round t: ``L += g_t``; switch when ``b < B`` and
    (``U' < p`` or ``U >= exp(-beta g_t(I_t))``); a switch sets ``b += 1`` and draws
    ``I_{t+1} ~ softmax(-beta L)`` (exponential mechanism); otherwise ``I_{t+1} = I_t``. With
    ``B = inf`` the law of ``I_t`` is exactly Hedge's.

    Privacy claim: ``(epsilon, delta)``-DP of the action sequence (pure when ``delta = 0``),
    replace-one-round neighbours, against adaptive adversaries (the paper's footnote 3: adaptive
    composition). Accountant (:mod:`dp_experts_env.privacy.exact_accountants`): ``beta/p`` for the
    coin reading the changed loss, ``2 beta`` per later resample (at most ``ceil(B)``); composed by
    ``1.5 S2 + sqrt(6 S2 ln(1/delta'))``, ``S2 = (beta/p)^2 + 4 beta^2 ceil(B)``, or by basic
    composition when that is smaller (always when ``delta = 0``).

    Modes: ``"strict"`` -- ``delta' = delta`` (valid: all per-step deltas are 0); ``"paper"`` --
    ``delta' = delta/2``, the split of the paper's Theorem "DP". Tuning:
    ``"calibrated"`` (default) -- also picks p on a grid, smallest regret bound; ``"paper"`` --
    ``p = (6T)^{-1/3}``, beta by bisection, capped at ``sqrt(8 ln N / T)``. The claim states the
    accountant's epsilon (below the requested one once beta reaches that cap).
    ``epsilon=math.inf``: ``p = 0``, an unlimited budget and Hedge's rate (non-private lazy
    Hedge).

    Args:
        n_experts: N. horizon: T (needed in advance).
        epsilon: target epsilon. delta: target delta; default 1e-6; 0 for pure DP.
        mode, tuning: see above. noise: ``"fast"`` only (the sampler is float inverse-CDF;
            ``"grid"`` is refused).
        beta, p, budget: explicit overrides (must spend at most epsilon); ``budget`` is the real
            switch budget B (default ``3 ptilde T``, ``ptilde = p + (1 - p)(1 - e^{-beta})``).
        num_envs: B runs. seed: int, sequence or None. n_arms: ignored.

    Deviations: the discrete derivation itself is the suite's, not the paper's (the paper has
    no experts algorithm); losses are clipped to [0, 1], the range the accountant assumes.

    Attributes:
        beta, p, budget: parameters in use; ``max_resamples = min(ceil(budget), T - 1)``.
        epsilon_spent: the accountant's epsilon (<= epsilon). regret_bound: the bound above.
        inverse_temperature: ``beta``.

    Per-round cost: O(N) per run.
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"budget": 1, "delta": 0.0},
        "p_top": 0.7,
        "runs": 200_000,
    }

    default_delta = 1e-6

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        beta: float | None = None,
        p: float | None = None,
        budget: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(
            n_experts,
            horizon,
            epsilon=epsilon,
            delta=delta,
            mode=mode,
            tuning=tuning,
            noise=noise,
            num_envs=num_envs,
            seed=seed,
            n_arms=n_arms,
        )
        self._overrides = (beta, p, budget)
        params = self._parameters(self.epsilon)
        self.parameters = params
        self.beta, self.p, self.budget = params.beta, params.p, params.budget
        self.batch = 1
        self.max_resamples = min(math.ceil(self.budget), self.horizon - 1)
        self.inverse_temperature = self.beta
        self.epsilon_spent = params.epsilon_spent
        self.regret_bound = params.regret_bound
        self.reset(seed)

    def _parameters(self, epsilon: float) -> LazyHedgeParameters:
        """The accountant's parameters at ``epsilon`` (the constructor's overrides applied)."""
        beta, p, budget = self._overrides
        return lazy_hedge_parameters(
            self.n_experts,
            self.horizon,
            epsilon,
            self.delta,
            tuning=self.tuning,
            mode=self.mode,
            beta=beta,
            p=p,
            budget=budget,
        )

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon; True when applied (False: nothing changed).

        Run b then samples with the beta, forced-switch probability and budget of an agent
        built with ``epsilon=epsilons[b]`` and the same seed (the same floats), so an
        evaluation can play this learner's epsilons as one batch. :attr:`privacy` then refuses
        to state one claim; build an agent at each epsilon to read its claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        found = {}
        for e in dict.fromkeys(values):
            params = self._parameters(e)
            found[e] = (
                1,
                params.beta,
                params.p,
                min(math.ceil(params.budget), self.horizon - 1),
            )
        return self._apply_run_parameters(values, found)

    @property
    def privacy(self) -> PrivacyClaim:
        """The exact accountant of the discrete form; adaptive DP, oblivious-only regret."""
        self._check_one_epsilon()
        return self._declared_claim(
            notes=f"beta={self.parameters.beta:.4g}, p={self.parameters.p:.4g}, "
            f"B={self.parameters.budget:.4g}; spends "
            f"{self.epsilon_spent:.4g}; regret guarantee against oblivious losses only",
        )

    @property
    def declaration(self) -> Mechanism | None:
        """The coin that reads the changed loss (beta/p) + at most ceil(B) resamples (2 beta)."""
        if not self.is_private:
            return None
        comp = (
            "basic composition"
            if self.delta == 0
            else f"min(basic, 1.5 S2 + sqrt(6 S2 ln(1/{self.parameters.composition_delta:g})))"
        )
        # The scalar parameters: after set_run_epsilons the per-run arrays all hold them (a
        # declaration at several epsilons is refused before this body runs).
        par = self.parameters
        resamples = min(math.ceil(par.budget), self.horizon - 1)
        return SamplingSteps(
            "lazy Hedge sampling (the coin beta/p reads the changed loss, then at most "
            f"{resamples} fresh samples of 2 beta)",
            epsilon=self.epsilon_spent,
            delta=self.delta,
            accountant=f"exact per-step accountant lazy_hedge_epsilon ({comp})",
            coin_epsilon=float(par.beta / par.p),
            resample_epsilon=float(2.0 * par.beta),
            resamples=int(resamples),
        )
