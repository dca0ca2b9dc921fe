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
        from dp_experts_env._validation import did_you_mean

        raise ValueError(
            f"unknown agent {name!r}{did_you_mean(name, _REGISTRY)}; available: "
            f"{sorted(_REGISTRY)}"
        )
    return _REGISTRY[name]


# body, radius, grad_bound: the public geometry of DPExperts-OCO-v0 (None on the experts envs).
_GAME_ATTRS = (
    "n_experts", "horizon", "feedback", "n_arms", "n_switches", "body", "radius", "grad_bound",
)  # fmt: skip


def _game_of(env: Any) -> dict[str, Any]:
    """Read N, T, K, feedback and B from a single or vector env without importing envs.

    Accepts our single and native vector envs (attributes on the env or its ``unwrapped``), and
    wrappers that hold several of our envs and expose ``get_attr`` and ``num_envs``
    (Gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv``, Stable-Baselines3's ``DummyVecEnv``/
    ``SubprocVecEnv``); their sub-environments must agree on every attribute.
    """
    base = getattr(env, "unwrapped", env)
    if all(hasattr(base, a) for a in ("n_experts", "horizon", "feedback")):
        game = {a: getattr(base, a, None) for a in _GAME_ATTRS}
        game["num_envs"] = getattr(env, "num_envs", getattr(base, "num_envs", 1))
        return game
    if callable(getattr(env, "get_attr", None)) and hasattr(env, "num_envs"):
        game = {}
        for attr in _GAME_ATTRS:
            try:
                values = list(env.get_attr(attr))
            except AttributeError:
                values = [None]
            if any(v != values[0] for v in values):
                raise ValueError(f"the sub-environments of env differ in {attr}: {values}")
            game[attr] = values[0]
        if all(game[a] is not None for a in ("n_experts", "horizon", "feedback")):
            game["num_envs"] = int(env.num_envs)
            return game
    missing = [a for a in ("n_experts", "horizon", "feedback") if not hasattr(base, a)]
    raise TypeError(
        f"env must be a dp-experts-env environment (missing {missing}); pass n_experts=, "
        "horizon= (and n_arms= for bandit learners) instead"
    )


def _accepts(cls: type[Agent], keyword: str) -> bool:
    """True when the learner's constructor takes ``keyword``."""
    return keyword in inspect.signature(cls.__init__).parameters


def make(name: str, env: Any = None, **params: Any) -> Agent:
    """Build learner ``name``.

    With ``env``, N, T, K and B (``num_envs``) are read from it, and a learner that cannot use
    the env's feedback is refused. Learners tuned for a switch budget (those whose constructor
    takes ``n_switches``) receive the env's comparator budget S unless it is given: S is public
    in the tracking-the-best-expert setting (Asi, Raman & Saha, Section 2.1). Without ``env``, pass
    ``n_experts=``, ``horizon=`` (and ``n_arms=``). Every other keyword goes to the learner
    (``epsilon``, ``seed``, ``mode``, ...).
    """
    entry = spec(name)
    if env is not None:
        game = _game_of(env)
        feedback = game.pop("feedback")
        # "any" learners play Discrete actions: never on the continuous-action OCO env.
        if entry.feedback != feedback and (entry.feedback != "any" or feedback == "oco"):
            raise ValueError(
                f"agent {name!r} needs {entry.feedback}-information feedback but the env gives "
                f"{feedback} feedback; pick a {feedback}-feedback agent "
                f"({', '.join(s.name for s in _REGISTRY.values() if s.feedback == feedback)})"
            )
        switches = game.pop("n_switches")
        if switches is not None and _accepts(entry.cls, "n_switches"):
            params.setdefault("n_switches", switches)
        if _accepts(entry.cls, "env_spec"):
            # Learners that train on simulated episodes (the PPO baseline) need the env's id
            # and keywords; online learners never see them.
            base = getattr(env, "unwrapped", env)
            found = getattr(env, "spec", None) or getattr(base, "spec", None)
            if found is None and callable(getattr(env, "get_attr", None)):
                found = env.get_attr("spec")[0]  # SB3 DummyVecEnv / SubprocVecEnv
            params.setdefault("env_spec", found)
        for key, value in game.items():
            if key in params and params[key] != value:
                raise ValueError(f"{key}={params[key]} contradicts the env's {key}={value}")
            if value is not None:
                params.setdefault(key, value)
    return entry.cls(**params)


def _claim_of(entry: AgentSpec) -> str:
    """The kind of privacy claim a learner makes (its exact numbers need its parameters)."""
    if not entry.private:
        return "none (not private)"
    return getattr(entry.cls, "claim_summary", "") or "DP (see agent.privacy once built)"


def available() -> list[dict[str, Any]]:
    """Registered learners: name, feedback, whether private, the kind of claim, one-line summary.

    ``claim`` is ``"none (not private)"`` for baselines; private learners may describe their
    claim with a class attribute ``claim_summary`` (the exact epsilon/delta depend on the
    parameters: read ``agent.privacy`` of a built agent).
    """
    return [
        {
            "name": s.name,
            "feedback": s.feedback,
            "private": s.private,
            "claim": _claim_of(s),
            "summary": s.summary,
        }
        for s in sorted(_REGISTRY.values(), key=lambda s: (s.private, s.feedback, s.name))
    ]
