"""Private lazy Hedge: the discrete (experts) form of P-COMW, unnormalised-ratio variant.

The mechanism is :mod:`agents._lazy_sampler` with inverse temperature ``beta``; the discrete
derivation is in docs/algorithms.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agents._lazy_sampler import LazySampler
from agents.base import PrivacyClaim
from agents.private import common_args
from agents.private_lazy_hedge_tuning import LazyHedgeParameters, lazy_hedge_parameters
from agents.registry import register
from dp_experts_env.privacy.declaration import Mechanism, SamplingSteps
from dp_experts_env.privacy.noise import NoiseBackend

# The tuning's public names stay importable from here.
__all__ = ["LazyHedgeParameters", "PrivateLazyHedge", "lazy_hedge_parameters"]


@register(
    "private-lazy-hedge",
    private=True,
    summary="Hedge sampled lazily with forced resamples and a budget (P-COMW on experts, 001)",
)
class PrivateLazyHedge(LazySampler):
    """Private lazy Hedge (unnormalised ratio): exponential weights, resampled rarely.

    Source: the discrete form of Algorithm 1 (P-COMW, Section 4) of Agarwal, Kale, Singh & Thakurta,
    "Improved Differentially Private and Lazy Online Convex Optimization". Derived for this suite
    (docs/algorithms.md, "Notes on the lazy private learners"); its regret bound holds against
    oblivious (and stochastic) adversaries only.

    After round t, switch when ``b < B`` and (``U' < p`` or ``U >= exp(-beta g_t(I_t))``), drawing
    ``I_{t+1} ~ softmax(-beta L)``. Claim: ``(epsilon, delta)``-DP of the actions, replace-one-round
    neighbours, against adaptive adversaries, by the exact accountant (it may state less than the
    request). Losses are clipped to [0, 1].

    Args:
        n_experts: N (also ``horizon``, ``epsilon``, ``num_envs``, ``seed``; ``n_arms`` ignored).
        delta: default 1e-6; 0 for pure DP.
        mode: ``"strict"`` (``delta' = delta``) or ``"paper"`` (``delta' = delta/2``, Theorem "DP").
        tuning: ``"calibrated"`` (default) or ``"paper"``; :mod:`agents.private_lazy_hedge_tuning`.
        noise: ``"fast"`` only (float inverse-CDF sampler).
        beta: override (also ``p`` and ``budget``, the real switch budget B; spending <= epsilon).

    Attributes:
        epsilon_spent: the accountant's epsilon (also ``regret_bound``, ``max_resamples``).
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
        super().__init__(n_experts, horizon, **common_args(locals()))
        self._overrides = (beta, p, budget)
        self._configure(self._parameters(self.epsilon))
        self.reset(seed)

    def _configure(self, params: LazyHedgeParameters) -> None:
        """Adopt the accountant's parameters (the sampler reads these attributes)."""
        self.parameters = params
        self.beta, self.p, self.budget = params.beta, params.p, params.budget
        self.batch = 1
        self.max_resamples = min(math.ceil(self.budget), self.horizon - 1)
        self.inverse_temperature = self.beta
        self.epsilon_spent = params.epsilon_spent
        self.regret_bound = params.regret_bound

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
        """Run b plays as if built with ``epsilon=epsilons[b]`` (finite); True when applied.

        :attr:`privacy` then refuses to state one claim.
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
        # Several epsilons are refused before this body runs: the arrays hold one value.
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
