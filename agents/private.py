"""Plumbing shared by the private learners: budget, mode, tuning and noise-backend arguments.

Every private learner takes the same keywords, validated here once:

* ``epsilon`` (> 0, or ``math.inf``) and ``delta`` (in [0, 1)) -- the target privacy of the whole
  run. ``epsilon=math.inf`` runs the same algorithm with its noise removed (its claim says "not
  private"): the right end of a privacy-utility curve.
* ``mode`` -- ``"strict"`` (default: privacy-correct noise and sensitivities) or ``"paper"``
  (reproduces the paper as printed; the claim says ``certified=False`` where the paper is wrong).
* ``tuning`` -- ``"paper"`` (the theorem's constants) or ``"calibrated"`` (the default: picked
  from public quantities (N, K, T, S, epsilon, delta) alone, never from the losses being
  protected; each learner's derivation is in docs/algorithms.md).
* ``noise`` -- the noise backend, ``"fast"`` (simulation-grade floats) or ``"grid"`` (lattice).
  A learner lists the backends it can use in ``noise_backends`` and refuses the others: one whose
  privacy comes from sampling probabilities alone (no Laplace release) has nothing for the
  lattice to replace, and a claim naming a backend that never ran would mislead. The audit-only
  wrappers of :mod:`dp_experts_env.privacy.noise` (ScaledBackend, RecordingBackend) are accepted
  over any listed backend.

Privacy as data: a learner declares the mechanisms it runs in :attr:`PrivateAgent.declaration`
(:mod:`dp_experts_env.privacy.declaration`); :meth:`PrivateAgent._declared_claim` composes the
claim from it with the one accountant (:func:`~dp_experts_env.privacy.declaration.account`), so
the claim's numbers and text come from the declaration, and the audit reads the same declaration.
A learner that declares nothing (``declaration`` is None) keeps stating its claim through
:meth:`PrivateAgent._claim`; the audit then falls back to its generic scenarios and says so.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import Agent, PrivacyClaim
from dp_experts_env._validation import (
    check_choice,
    check_delta,
    check_learner_epsilon,
)
from dp_experts_env.privacy.declaration import Mechanism, account
from dp_experts_env.privacy.guarantee import Guarantee
from dp_experts_env.privacy.mechanisms import laplace_calibration
from dp_experts_env.privacy.noise import BACKENDS, NoiseBackend, get_backend, root_backend

__all__ = ["COMMON_ARGS", "MODES", "TUNINGS", "PrivateAgent", "common_args"]

MODES = ("strict", "paper")
TUNINGS = ("paper", "calibrated")
#: the keywords a learner's ``__init__`` forwards to :class:`PrivateAgent`'s
COMMON_ARGS = ("epsilon", "delta", "mode", "tuning", "noise", "num_envs", "seed", "n_arms")


def common_args(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The common keywords among a learner's ``__init__`` arguments, to forward unchanged.

    Called as ``super().__init__(n_experts, horizon, **common_args(locals()))`` first thing in
    ``__init__``: each learner keeps its explicit signature (the registry and the CLI read it)
    without restating the forwarding, keyword by keyword.
    """
    return {key: arguments[key] for key in COMMON_ARGS if key in arguments}


class PrivateAgent(Agent):
    """An :class:`~agents.base.Agent` with a privacy budget.

    Subclasses call ``super().__init__`` with the common arguments (:func:`common_args`), read
    ``self.epsilon``, ``self.delta``, ``self.mode``, ``self.tuning`` and ``self.noise`` (a
    backend), finish their own validation and set-up, then call ``self.reset(seed)``.
    """

    #: delta the learner needs (> 0 for approximate-DP learners); used as the default.
    default_delta: float = 0.0
    #: tunings the learner supports (subclasses may narrow this).
    tunings: tuple[str, ...] = TUNINGS
    #: the tuning used when ``tuning`` is not given.
    default_tuning: str = "calibrated"
    #: noise backends the learner draws from (others are refused, see the module docstring).
    noise_backends: tuple[str, ...] = BACKENDS
    #: why a backend outside ``noise_backends`` is refused (for the error message).
    noise_refusal: str = ""
    #: a pure epsilon-DP learner: ``delta > 0`` is refused.
    pure_dp: bool = False

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
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.epsilon = check_learner_epsilon("epsilon", epsilon)
        self.delta = check_delta("delta", self.default_delta if delta is None else delta)
        if self.pure_dp and self.delta != 0.0:
            raise ValueError(f"delta must be 0 for this pure epsilon-DP learner, got {self.delta}")
        self.mode = check_choice("mode", mode, MODES)
        default = self.default_tuning if self.default_tuning in self.tunings else self.tunings[0]
        self.tuning = check_choice("tuning", default if tuning is None else tuning, self.tunings)
        self.noise = get_backend(noise)
        kind = getattr(root_backend(self.noise), "name", "")
        if kind in BACKENDS and kind not in self.noise_backends:
            raise ValueError(
                f"noise={kind!r} does not apply to {getattr(self, 'name', type(self).__name__)}"
                f" (it accepts {', '.join(map(repr, self.noise_backends))}): {self.noise_refusal}"
            )

    #: public hyper-parameters under which the declared mechanisms are most exposed to an audit
    #: (privacy must hold for every value; the audit derives its scenarios from the declaration
    #: and these): ``params`` for every derived scenario, ``exposed`` for those that push the
    #: learner hardest, ``variants`` (a list of parameter sets) for public alternatives of the
    #: mechanism, ``max_horizon`` caps long scenarios (cost), ``runs`` the test runs a derived
    #: scenario asks for; sampling learners add ``p_top`` and ``batch_sizes``, bandit learners
    #: ``agree`` (every expert recommends one arm: importance weights near their bound).
    audit_hints: ClassVar[Mapping[str, Any]] = {}

    #: per-run epsilons after ``set_run_epsilons`` (learners that offer it), else None.
    _run_epsilons: list[float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Make every subclass's ``declaration`` refuse runs at several epsilons.

        A declaration states the noise of one epsilon; after ``set_run_epsilons`` with other
        values it would describe no single run (the claim already refuses, see
        :meth:`_check_one_epsilon`), so an audit or accountant reading it must be refused too.
        Done here, once, so a learner written outside the package inherits the check.
        """
        super().__init_subclass__(**kwargs)
        # Looked up through the MRO, so a declaration inherited from a mixin that is not a
        # PrivateAgent is wrapped too (an independent review's counterexample).
        prop = inspect.getattr_static(cls, "declaration", None)
        if isinstance(prop, property) and prop.fget is not None:
            if getattr(prop.fget, "_checks_one_epsilon", False):
                return
            fget = prop.fget

            @functools.wraps(fget)
            def checked(self: PrivateAgent) -> Mechanism | None:
                self._check_one_epsilon()
                return fget(self)

            checked._checks_one_epsilon = True  # type: ignore[attr-defined]
            wrapped = property(checked, prop.fset, prop.fdel, prop.__doc__)
            cls.declaration = wrapped  # type: ignore[method-assign,assignment]

    def _accept_run_epsilons(self, epsilons: Sequence[float]) -> list[float] | None:
        """Validated per-run epsilons for ``set_run_epsilons``, or None when they cannot apply.

        ``set_run_epsilons`` (offered by learners whose epsilon enters only through per-run
        scales and rates) gives run b the noise, rates and budget an agent built with
        ``epsilon=epsilons[b]`` and the same seed would use, the same floats, so an evaluation can
        play a learner's epsilons as one batch. Infinite epsilons are refused (None): no noise is
        drawn at all then, so the runs would not match.
        """
        eps = np.asarray(epsilons, dtype=np.float64).reshape(-1)
        if eps.shape != (self.num_envs,):
            raise ValueError(f"epsilons must hold one value per run ({self.num_envs}), got {eps}")
        if not np.all(np.isfinite(eps) & (eps > 0)):
            return None
        return [float(e) for e in eps]

    @staticmethod
    def _per_run(values: list[float], parameter: Callable[[float], float]) -> np.ndarray:
        """(B,) ``parameter(epsilon)`` of each run, computed once per distinct epsilon."""
        found = {e: parameter(e) for e in dict.fromkeys(values)}
        return np.array([found[e] for e in values])

    def _check_one_epsilon(self) -> None:
        """Refuse to state one claim for runs that play other epsilons than ``self.epsilon``."""
        if self._run_epsilons is not None and any(e != self.epsilon for e in self._run_epsilons):
            raise ValueError(
                "this agent plays several epsilons (set_run_epsilons): each run has its own "
                "claim; build an agent at each epsilon to read it"
            )

    def _calibrate_laplace(
        self, l1_sensitivity: float, epsilon: float | None = None, *, dim: int = 1
    ) -> float:
        """The scale of the learner's Laplace release (its guarantee becomes ``_release``).

        :func:`~dp_experts_env.privacy.mechanisms.laplace_calibration` at ``epsilon`` (default
        the learner's) with the learner's noise backend, so the claim states what the releases
        cost.
        """
        eps = self.epsilon if epsilon is None else epsilon
        scale, self._release = laplace_calibration(l1_sensitivity, eps, noise=self.noise, dim=dim)
        return scale

    @property
    def is_private(self) -> bool:
        """False at ``epsilon = inf`` (the noise is removed)."""
        return math.isfinite(self.epsilon)

    @property
    def declaration(self) -> Mechanism | None:
        """The mechanisms this learner runs, as data (None: not declared).

        Learners override it; the claim (:meth:`_declared_claim`) and the audit read it. It
        describes the noise actually added (the backend's effective sensitivities, the scales in
        use), in strict and paper mode alike.
        """
        return None

    def _declared_claim(self, *, source: str = "", **kwargs: object) -> PrivacyClaim:
        """The claim composed from :attr:`declaration` by the one accountant.

        ``source`` names the algorithm and proof the composition follows (it ends the text);
        ``kwargs`` are those of :meth:`_claim`.
        """
        if not self.is_private:  # epsilon = inf: no noise, nothing to compose
            return self._claim(Guarantee(math.inf, 0.0, "noise removed"), **kwargs)  # type: ignore[arg-type]
        declared = self.declaration
        if declared is None:
            raise TypeError(f"{type(self).__name__} declares no mechanisms")
        return self._claim(account(declared, source=source), **kwargs)  # type: ignore[arg-type]

    def reset(self, seed: int | Sequence[int] | None = None) -> None:
        """Start a new episode (see :meth:`Agent.reset`); warn once if the claim is uncertified."""
        super().reset(seed)
        if self.mode == "paper" and not getattr(self, "_uncertified_warned", False):
            self._uncertified_warned = True
            try:
                claim = self.privacy
            except ValueError:  # several per-run epsilons: no single claim to check
                return
            if claim.is_private and not claim.certified:
                warnings.warn(
                    f"{getattr(self, 'name', type(self).__name__)} with mode='paper' is NOT "
                    f"CERTIFIED: {claim.notes or claim.accountant}",
                    UserWarning,
                    stacklevel=3,
                )

    def _claim(
        self,
        guarantee: Guarantee,
        *,
        certified: bool = True,
        holds_against: str = "adaptive",
        model: str = "central",
        feedback: str | None = None,
        notes: str = "",
    ) -> PrivacyClaim:
        """The learner's claim, read off the guarantee its accountant composed.

        The epsilon and delta are those of ``guarantee`` (never the requested values restated),
        so a claim cannot say more than the noise added certifies. At ``epsilon = inf`` the
        claim is "not private". The noise backend is recorded.
        """
        feedback = feedback or ("bandit" if self.feedback == "bandit" else "full")
        if not self.is_private or math.isinf(guarantee.epsilon):
            return PrivacyClaim(
                epsilon=math.inf,
                feedback=feedback,
                model="none",
                accountant="none: epsilon=inf removes the noise",
                noise_backend="none",
                notes="the learner's algorithm with its noise removed (the non-private limit)",
            )
        return PrivacyClaim(
            epsilon=guarantee.epsilon,
            delta=guarantee.delta,
            feedback=feedback,
            model=model,
            certified=certified,
            accountant=guarantee.accountant,
            holds_against=holds_against,
            noise_backend=self.noise.name,
            requested_epsilon=self.epsilon,
            notes=notes,
        )
