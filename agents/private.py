"""Plumbing shared by the private learners: budget, mode, tuning and noise-backend arguments.

Every private learner takes the same keywords, validated here once: ``epsilon`` (> 0, or
``math.inf``: the same algorithm without noise, "not private") and ``delta`` (in [0, 1)) for the
whole run; ``mode`` (``"strict"``, or ``"paper"`` as printed, uncertified where the paper is wrong);
``tuning`` (``"paper"`` or ``"calibrated"``: public quantities alone); ``noise`` (``"fast"`` or
``"grid"``, among the learner's ``noise_backends``, or an audit-only wrapper of one of them such as
``ScaledBackend``; docs/privacy.md).

A learner declares its mechanisms in :attr:`PrivateAgent.declaration`; its claim is composed from
that by the one accountant (:meth:`PrivateAgent._declared_claim`) and the audit reads it too. A
learner declaring nothing states its claim through :meth:`PrivateAgent._claim`.
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

    Use: ``super().__init__(n_experts, horizon, **common_args(locals()))``.
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
    #: noise backends the learner draws from (others are refused; docs/privacy.md).
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

    #: public hyper-parameters under which the declared mechanisms are most exposed to an audit:
    #: ``params`` (every scenario), ``exposed`` (the hardest), ``variants`` (public alternatives),
    #: ``max_horizon``, ``runs``; sampling learners add ``p_top`` and ``batch_sizes``, bandit
    #: learners ``agree`` (docs/privacy.md)
    audit_hints: ClassVar[Mapping[str, Any]] = {}

    #: per-run epsilons after ``set_run_epsilons`` (learners that offer it), else None.
    _run_epsilons: list[float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Make every subclass's ``declaration`` (outside ones too) refuse several epsilons."""
        super().__init_subclass__(**kwargs)
        # Through the MRO: a declaration inherited from a non-PrivateAgent mixin is wrapped too.
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

        Run b then plays as an agent built with ``epsilon=epsilons[b]`` and the same seed. Infinite
        epsilons are refused (None): no noise is drawn then, so the runs would not match.
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
        """The scale of the Laplace release at ``epsilon`` (default the learner's).

        Sets ``_release``.
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

        The claim and the audit read it; it describes the noise actually added, in both modes.
        """
        return None

    def _declared_claim(self, *, source: str = "", **kwargs: object) -> PrivacyClaim:
        """The claim composed from :attr:`declaration`.

        ``source`` ends its text; ``kwargs`` are those of :meth:`_claim`.
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

        Never the requested values restated; "not private" at ``epsilon = inf``; names the backend.
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
