"""Private shrinking dartboard (Algorithm 1) and its batched variant (Thm 5 / Cor. 6).

Source: Asi, Feldman, Koren & Talwar 2023, "Private Online Prediction from Experts: Separations
and Faster Rates", Algorithm 1, Theorem 2, Corollaries 3-4, Theorem 5, Corollary 6
(Section 3.1; errata E-AFKT-1 to E-AFKT-12). The mechanism is the shared core of
:mod:`agents._lazy_sampler` with weights ``(1 - eta)^L = exp(-lam L)``, ``lam = ln(1/(1 - eta))``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agents._lazy_sampler import LazySampler
from agents.base import PrivacyClaim
from agents.private import common_args
from agents.private_dartboard_tuning import (
    P_MAX,
    DartboardParameters,
    balanced_batch_size,
    calibrated_batch_size,
    dartboard_parameters,
    max_resamples,
    paper_batch_size,
    selection_bound,
)
from agents.registry import register
from dp_experts_env._validation import check_int
from dp_experts_env.privacy.declaration import Mechanism, SamplingSteps
from dp_experts_env.privacy.exact_accountants import (
    dartboard_resample_cost,
    dartboard_switch_cost,
)
from dp_experts_env.privacy.noise import NoiseBackend

# The tuning's public names stay importable from here (tests and docs import them so).
__all__ = [
    "P_MAX",
    "BatchedPrivateShrinkingDartboard",
    "DartboardParameters",
    "PrivateShrinkingDartboard",
    "balanced_batch_size",
    "dartboard_parameters",
    "max_resamples",
    "paper_batch_size",
    "selection_bound",
]


@register(
    "private-shrinking-dartboard",
    private=True,
    summary="lazy Hedge with forced resamples and a switch budget (Asi et al. 2023 Alg. 1)",
)
class PrivateShrinkingDartboard(LazySampler):
    """Private shrinking dartboard: Hedge's marginals, few data-dependent switches.

    Source: Asi, Feldman, Koren & Talwar 2023, "Private Online Prediction from Experts:
    Separations and Faster Rates", Section 3.1: Algorithm 1, Theorem 2, Corollaries 3 and 4.
    For oblivious (and stochastic) adversaries: the regret bound
    ``eta T + ln(d)/eta + 2 T exp(-T p / 3)`` holds against them only.

    Round 1 plays a uniform expert. Each later round keeps the held expert ``x`` with
    probability ``(1 - p)(1 - eta)^{l(x)}`` and otherwise draws afresh from
    ``P(i) ~ (1 - eta)^{L(i)}`` (exponential mechanism) while ``k < K``; k starts at 1 (erratum
    E-AFKT-1), so at most ``K - 1`` resamples, then the expert is frozen (E-AFKT-2); a resample
    may return the same expert and still counts (E-AFKT-15).

    Claim: ``(epsilon, delta)``-DP (pure when ``delta = 0``) of the actions under
    replace-one-round neighbours, against adaptive adversaries, by the exact per-step
    accountant (switch coin ``max(lam, ln((1 - (1-p)(1-eta))/p))`` plus ``K - 1`` resamples of
    ``2 lam``; basic, or the better of basic and advanced composition). It states the exact
    epsilon, below the requested one once eta reaches Hedge's rate.

    Args:
        delta: default 1e-6 (approximate DP, Corollary 3); 0 for pure DP.
        mode: ``"strict"`` (the exact accountant calibrates) or ``"paper"`` (Theorem 2's closed
            form calibrates, reported as ``epsilon_paper``; the exact accountant certifies).
        tuning: ``"calibrated"`` (default: grid over p, bisection on eta, eta capped at Hedge's
            ``sqrt(8 ln d / T)``, smallest :func:`selection_bound`) or ``"paper"`` (Corollary 3
            or 4 at ``min(epsilon, 1)``, erratum E-AFKT-5); :mod:`agents.private_dartboard_tuning`.
        noise: ``"fast"`` only (float inverse-CDF sampling; no Laplace noise for ``"grid"``).
        eta, p, budget: overrides of the derived values (``0 < eta <= p < 1/2``, spending at
            most epsilon). ``epsilon=inf``: p = 0, no budget, Hedge's rate.
        n_experts (d), horizon (T, needed in advance), epsilon, num_envs, seed: as
            :class:`PrivateAgent`; n_arms: ignored.

    Deviations: integer ``K = max(1, floor(4 T p))`` (E-AFKT-3); derived p capped at 0.45 and
    eta at p; losses clipped to [0, 1].

    Attributes: eta, p, budget, ``max_resamples = min(K - 1, decisions)``, epsilon_spent (exact),
    epsilon_paper and regret_bound (Theorem 2 at these parameters), inverse_temperature
    (``lam = ln(1/(1 - eta))``). Per-round cost: O(N) per run, O(N) per resample.
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"budget": 2, "delta": 0.0},
        "p_top": 0.45,  # the dartboards need p < 1/2
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
        eta: float | None = None,
        p: float | None = None,
        budget: int | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self._overrides = (eta, p, budget)
        self._configure(self._parameters(self.epsilon))
        self.reset(seed)

    def _batch_size(self, epsilon: float) -> int:
        return 1

    def _parameters(self, epsilon: float) -> DartboardParameters:
        """The learner's parameters at ``epsilon`` (everything else as constructed)."""
        eta, p, budget = self._overrides
        return dartboard_parameters(
            self.n_experts,
            self.horizon,
            epsilon,
            self.delta,
            tuning=self.tuning,
            mode=self.mode,
            batch=self._batch_size(epsilon),
            eta=eta,
            p=p,
            budget=budget,
        )

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon; True when applied (False: nothing changed).

        Run b then samples with the rate, forced-switch probability and resample budget of an
        agent built with ``epsilon=epsilons[b]`` and the same seed (the same floats), so an
        evaluation can play this learner's epsilons as one batch. Refused (False) when the
        epsilons' block sizes differ. :attr:`privacy` then refuses to state one claim; build an
        agent at each epsilon to read its claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        found = {}
        for e in dict.fromkeys(values):
            params = self._parameters(e)
            found[e] = (
                params.batch,
                -math.log1p(-params.eta),
                params.p,
                int(max_resamples(params.budget, self.horizon, params.batch)),
            )
        return self._apply_run_parameters(values, found)

    def _configure(self, params: DartboardParameters) -> None:
        self.parameters = params
        self.batch = params.batch
        self.eta, self.p, self.budget = params.eta, params.p, params.budget
        self.max_resamples = int(max_resamples(self.budget, self.horizon, self.batch))
        self.inverse_temperature = -math.log1p(-self.eta)
        self.epsilon_spent = params.epsilon_exact
        self.epsilon_paper = params.epsilon_paper
        self.regret_bound = params.regret_bound

    def _paper_rule(self) -> str:
        return "Theorem 2 closed form"

    @property
    def privacy(self) -> PrivacyClaim:
        """Exact per-step accountant (exact_accountants.py); adaptive DP."""
        self._check_one_epsilon()
        which = "exact per-step" if self.mode == "strict" else self._paper_rule()
        comp = "basic composition" if self.delta == 0 else "min(basic, advanced) composition"
        par = self.parameters  # scalars: per-run arrays hold this value once checked
        notes = (
            f"eta={par.eta:.4g}, p={par.p:.4g}, K={par.budget}, batch={self.batch}; spends "
            f"{self.epsilon_spent:.4g} by the exact accountant, {self.epsilon_paper:.4g} by the "
            f"{self._paper_rule()}; regret guarantee against oblivious losses only"
        )
        accountant = (
            f"exact per-step accountant (switch coin + K-1 resamples of 2 lam, {comp})"
            if self.mode == "strict"
            else f"calibrated by the {which}; certified by the exact per-step accountant"
        )
        return self._declared_claim(source=accountant if self.mode != "strict" else "", notes=notes)

    @property
    def declaration(self) -> Mechanism | None:
        """The switch coin that reads the changed loss + at most K - 1 fresh samples."""
        if not self.is_private:
            return None
        comp = "basic composition" if self.delta == 0 else "min(basic, advanced) composition"
        # The scalar parameters: after set_run_epsilons the per-run arrays all hold them (a
        # declaration at several epsilons is refused before this body runs).
        par = self.parameters
        resamples = int(max_resamples(par.budget, self.horizon, self.batch))
        return SamplingSteps(
            "lazy Hedge sampling (one switch coin reads the changed block, then at most "
            f"{resamples} exponential-mechanism resamples)",
            epsilon=self.epsilon_spent,
            delta=self.delta,
            accountant="exact per-step accountant dartboard_epsilon (switch coin + resamples of "
            f"2 lam, {comp})",
            coin_epsilon=float(dartboard_switch_cost(par.eta, par.p, self.batch)),
            resample_epsilon=float(dartboard_resample_cost(par.eta, self.batch)),
            resamples=resamples,
        )


@register(
    "batched-private-shrinking-dartboard",
    private=True,
    summary="private shrinking dartboard on blocks of B rounds (Asi et al. 2023 Thm 5 / Cor. 6)",
)
class BatchedPrivateShrinkingDartboard(PrivateShrinkingDartboard):
    """The private shrinking dartboard run on block-averaged losses, one expert per block.

    Source: Asi, Feldman, Koren & Talwar 2023, "Private Online Prediction from Experts:
    Separations and Faster Rates", Section 3.1.1: Theorem 5, Corollary 6. Built for oblivious
    adversaries in the high-privacy regime (small epsilon).

    Algorithm: rounds are cut into disjoint blocks of ``B`` rounds (erratum E-AFKT-10); Algorithm 1
    runs on the block averages ``(1/B) sum l_t`` (horizon ``ceil(T/B)``,
    ``K = max(1, floor(4 T p / B))``) and its choice is played for the whole next block. A short
    final block is never used.

    Batch size (``batch_size=``): ``"balanced"`` (default) -- the size that balances Cor. 6's two
    regret terms, ``B* = (400 ln^{2/3}(1/delta) ln d / (T^{1/3} eps^2))^{3/5}`` (erratum
    E-AFKT-9); ``"paper"`` -- Cor. 6's printed ``B ∝ eps^{-3/5}``; or an integer in [1, T].
    Under ``tuning="paper"`` both formulas use ``min(epsilon, 1)``. Under the default
    ``tuning="calibrated"``, ``"balanced"`` picks the power of two up to 4x the balance (at the
    requested epsilon) with the smallest :func:`selection_bound`; the block shrinks to 1 as
    privacy stops binding (and is 1 at ``epsilon=math.inf``).

    Privacy claim: as :class:`PrivateShrinkingDartboard` with per-step costs ``e_sw = max(lam/B,
    ln((1 - (1-p)(1-eta)^{1/B})/p))`` and ``e_rs = 2 lam / B`` (exact accountant). ``mode="paper"``
    calibrates with Theorem 5's closed form (``delta > 0``) or the derived pure analogue
    ``eta/(Bp) + 16 T p eta / B^2`` (erratum E-AFKT-11). Theorem 5's printed sqrt(12) makes that
    closed form exceed epsilon at Corollary 6's parameters (erratum E-AFKT-8); the exact accountant
    certifies them, and the claim says which is which.

    Tuning: ``"paper"`` -- Corollary 6's ``p = (B/(T ln(1/delta)))^{1/3}``, ``eta = B p eps/40``
    (capped at p), approximate DP only (``delta = 0`` raises); ``"calibrated"`` (default) -- as
    the unbatched learner, at the chosen B.

    Args:
        batch_size: ``"balanced"``, ``"paper"`` or an int in [1, T].
        (others as :class:`PrivateShrinkingDartboard`; default delta 1e-6.)

    Deviations: integer block size and K; derived p capped at 0.45; eta capped at p.

    Per-round cost: O(N) per run (block sum); one O(N) decision per block.
    """

    audit_hints: ClassVar[Mapping[str, Any]] = {
        **PrivateShrinkingDartboard.audit_hints,
        "batch_sizes": (1, 2),
    }

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
        batch_size: int | str = "balanced",
        eta: float | None = None,
        p: float | None = None,
        budget: int | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        self._batch_request = batch_size
        super().__init__(n_experts, horizon, eta=eta, p=p, budget=budget, **common_args(locals()))

    def _batch_size(self, epsilon: float) -> int:
        req = self._batch_request
        if isinstance(req, str):
            if req not in ("balanced", "paper"):
                raise ValueError(
                    f"batch_size must be 'balanced', 'paper' or an integer in [1, {self.horizon}], "
                    f"got {req!r}"
                )
            if self.delta == 0:
                raise ValueError(
                    f"batch_size={req!r} needs delta > 0 (Corollary 6 is approximate DP); pass an "
                    "integer batch_size for pure DP"
                )
            if math.isinf(epsilon):
                return 1  # nothing to amortise without privacy
            if req == "balanced" and self.tuning == "calibrated":
                return self._calibrated_batch(epsilon)
            rule = balanced_batch_size if req == "balanced" else paper_batch_size
            # The corollary's balance at the epsilon actually requested (not min(eps, 1)): the
            # block shrinks to 1 as privacy stops binding, instead of freezing at eps = 1.
            eps = min(epsilon, 1.0) if self.tuning == "paper" else epsilon
            return rule(self.n_experts, self.horizon, eps, self.delta)
        return check_int("batch_size", req, minimum=1, maximum=self.horizon)

    def _calibrated_batch(self, epsilon: float) -> int:
        """The calibrated block size: :func:`calibrated_batch_size` at this learner's setting."""
        return calibrated_batch_size(self.n_experts, self.horizon, epsilon, self.delta, self.mode)

    def _paper_rule(self) -> str:
        if self.delta == 0:
            return "derived pure analogue of Theorem 5 (erratum E-AFKT-11)"
        return "Theorem 5 closed form"
