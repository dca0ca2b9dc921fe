"""Name -> learner table, and construction from an environment."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.base import Agent

__all__ = ["AgentSpec", "register", "make", "available", "spec"]


@dataclass(frozen=True)
class AgentSpec:
    """A registered learner.

    Attributes:
        name: registry name (``agents.make(name, ...)``).
        cls: the Agent subclass.
        feedback: ``"full"`` or ``"bandit"``.
        private: whether the learner makes a finite-epsilon claim.
        summary: one line for listings.
    """

    name: str
    cls: type[Agent]
    feedback: str
    private: bool
    summary: str


_REGISTRY: dict[str, AgentSpec] = {}


def register(name: str, *, private: bool, summary: str) -> Callable[[type[Agent]], type[Agent]]:
    """Class decorator adding a learner to the registry under ``name``."""

    def decorator(cls: type[Agent]) -> type[Agent]:
        if name in _REGISTRY:
            raise ValueError(f"agent {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = AgentSpec(name, cls, cls.feedback, private, summary)
        return cls

    return decorator


def spec(name: str) -> AgentSpec:
    """The registry entry of ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"agent name must be a string, got {type(name).__name__}")
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; available: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def _game_of(env: Any) -> dict[str, Any]:
    """Read N, T, K, feedback and B from a single or vector env without importing envs."""
    base = getattr(env, "unwrapped", env)
    missing = [a for a in ("n_experts", "horizon", "feedback") if not hasattr(base, a)]
    if missing:
        raise TypeError(
            f"env must be a dp-experts-env environment (missing {missing}); pass n_experts=, "
            "horizon= (and n_arms= for bandit learners) instead"
        )
    return {
        "n_experts": base.n_experts,
        "horizon": base.horizon,
        "n_arms": getattr(base, "n_arms", None),
        "feedback": base.feedback,
        "num_envs": getattr(env, "num_envs", getattr(base, "num_envs", 1)),
        "n_switches": getattr(base, "n_switches", None),
    }


def _accepts(cls: type[Agent], keyword: str) -> bool:
    """True when the learner's constructor takes ``keyword``."""
    return keyword in inspect.signature(cls.__init__).parameters


def make(name: str, env: Any = None, **params: Any) -> Agent:
    """Build learner ``name``.

    With ``env``, N, T, K and B (``num_envs``) are read from it, and a learner that cannot use
    the env's feedback is refused. Learners tuned for a switch budget (those whose constructor
    takes ``n_switches``) receive the env's comparator budget S unless it is given: S is public
    in the tracking-the-best-expert setting (brief 000 §1.2). Without ``env``, pass
    ``n_experts=``, ``horizon=`` (and ``n_arms=``). Every other keyword goes to the learner
    (``epsilon``, ``seed``, ``mode``, ...).
    """
    entry = spec(name)
    if env is not None:
        game = _game_of(env)
        feedback = game.pop("feedback")
        if feedback != entry.feedback:
            raise ValueError(
                f"agent {name!r} needs {entry.feedback}-information feedback but the env gives "
                f"{feedback} feedback; pick a {feedback}-feedback agent "
                f"({', '.join(s.name for s in _REGISTRY.values() if s.feedback == feedback)})"
            )
        switches = game.pop("n_switches")
        if switches is not None and _accepts(entry.cls, "n_switches"):
            params.setdefault("n_switches", switches)
        for key, value in game.items():
            if key in params and params[key] != value:
                raise ValueError(f"{key}={params[key]} contradicts the env's {key}={value}")
            if value is not None:
                params.setdefault(key, value)
    return entry.cls(**params)


def available() -> list[dict[str, Any]]:
    """Registered learners: name, feedback, whether private, one-line summary."""
    return [
        {"name": s.name, "feedback": s.feedback, "private": s.private, "summary": s.summary}
        for s in sorted(_REGISTRY.values(), key=lambda s: (s.private, s.feedback, s.name))
    ]
