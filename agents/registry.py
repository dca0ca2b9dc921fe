"""Name -> learner table, and construction from an environment."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.base import Agent
from dp_experts_env import plugins as _plugins

__all__ = ["AgentSpec", "register", "make", "available", "spec", "load_plugins", "source"]


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
#: Entry points of :data:`dp_experts_env.plugins.AGENT_GROUP` already loaded in this process.
_LOADED_ENTRY_POINTS: set[tuple[str, str]] = set()
_SCANNED = False


def load_plugins(*, rescan: bool = False) -> list[str]:
    """Register the outside learners: ``DP_EXPERTS_PLUGINS`` modules, then entry points.

    Idempotent (``rescan=True`` scans the entry points again); every registry lookup calls it. An
    entry point ``name = "module:Class"`` names a class registered under that name, or an
    undecorated :class:`~agents.base.Agent` subclass with a ``private`` (and optional ``summary``)
    attribute (docs/own_learner.md).

    Returns:
        Names registered by this call.

    Raises:
        dp_experts_env.plugins.PluginError: a module of ``DP_EXPERTS_PLUGINS`` cannot be imported.
        TypeError: an entry point names no learner class, or an undecorated one without ``private``.
        ValueError: an entry point's name is taken by another learner.
    """
    global _SCANNED
    before = set(_REGISTRY)
    _plugins.import_plugin_modules()
    if rescan or not _SCANNED:
        _SCANNED = True
        for ep, obj in _plugins.iter_new(_plugins.AGENT_GROUP, _LOADED_ENTRY_POINTS):
            _register_entry_point(ep.name, ep.value, obj)
    return sorted(set(_REGISTRY) - before)


def _register_entry_point(name: str, value: str, obj: Any) -> None:
    """Register (or check) the learner class ``obj`` loaded from entry point ``name``."""
    where = f"entry point {name!r} = {value!r} of group {_plugins.AGENT_GROUP!r}"
    if not (isinstance(obj, type) and issubclass(obj, Agent)):
        raise TypeError(f"{where} must name an agents.Agent subclass, got {obj!r}")
    known = _REGISTRY.get(name)
    if known is not None:
        if known.cls is obj:
            return  # its module registered it with @register on import
        raise ValueError(
            f"{where}: the name {name!r} is already taken by {known.cls.__module__}."
            f"{known.cls.__qualname__} ({source(name)}); rename the entry point"
        )
    private = getattr(obj, "private", None)
    if not isinstance(private, bool):
        raise TypeError(
            f"{where}: {obj.__qualname__} is not registered; decorate it with "
            "@agents.register(name, private=..., summary=...) or give it a class attribute "
            "private = True/False"
        )
    summary = getattr(obj, "summary", None)
    if not isinstance(summary, str):
        summary = (obj.__doc__ or obj.__qualname__).strip().splitlines()[0]
    register(name, private=private, summary=summary)(obj)


def source(name: str) -> str:
    """Where learner ``name`` comes from.

    ``"built-in"``, ``"package NAME VERSION"`` or ``"module M (DP_EXPERTS_PLUGINS)"``.
    """
    return _plugins.source_of(spec(name).cls.__module__)


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
        load_plugins()  # an outside learner registers on first use
    if name not in _REGISTRY:
        from dp_experts_env._validation import did_you_mean

        raise ValueError(
            f"unknown agent {name!r}{did_you_mean(name, _REGISTRY)}; available: "
            f"{sorted(_REGISTRY)} (an outside learner joins through an entry point of group "
            f"{_plugins.AGENT_GROUP!r} or a module named in {_plugins.ENV_VAR}; "
            f"docs/own_learner.md)"
        )
    return _REGISTRY[name]


# body, radius, grad_bound: the public geometry of DPExperts-OCO-v0 (None on the experts envs).
_GAME_ATTRS = (
    "n_experts", "horizon", "feedback", "n_arms", "n_switches", "body", "radius", "grad_bound",
)  # fmt: skip


def _game_of(env: Any) -> dict[str, Any]:
    """Read N, T, K, feedback and B from a single or vector env without importing envs.

    Our single and native vector envs, and wrappers exposing ``get_attr`` and ``num_envs``
    (Gymnasium's and SB3's vector envs) whose sub-environments agree on every attribute.
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

    With ``env``, N, T, K and B are read from it and a learner that cannot use its feedback is
    refused; a learner taking ``n_switches`` receives the env's public comparator budget S unless
    given (Asi, Raman & Saha, Section 2.1). Without ``env``, pass ``n_experts=``, ``horizon=`` (and
    ``n_arms=``). Other keywords go to the learner.
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
            # Learners training on simulated episodes (PPO) need the env's id and keywords.
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


def _reference(cls: type[Agent]) -> str:
    """The docstring's ``Source:`` sentence (its first sentence, whitespace collapsed)."""
    doc = " ".join((cls.__doc__ or "").split())
    start = doc.find("Source:")
    if start < 0:
        return ""
    text = doc[start + len("Source:") :].strip()
    # The first sentence: a period followed by a space and a capital (not "Alg. 1", "§5.2").
    for i in range(len(text) - 2):
        if text[i] == "." and text[i + 1] == " " and text[i + 2].isupper() and i > 12:
            prev = text[max(0, i - 4) : i]
            if not prev.endswith(("Alg", "Thm", "al", "Sec", "Eq", "eq")):
                return text[: i + 1]
    return text


def available() -> list[dict[str, Any]]:
    """Registered learners: name, feedback, private, claim kind, summary, source and reference.

    ``claim`` is ``"none (not private)"`` for baselines, else the class's ``claim_summary`` (the
    exact numbers: ``agent.privacy``); ``source`` as :func:`source`; ``reference`` the first
    sentence of the docstring's ``Source:``.
    """
    load_plugins()
    return [
        {
            "name": s.name,
            "feedback": s.feedback,
            "private": s.private,
            "claim": _claim_of(s),
            "summary": s.summary,
            "source": _plugins.source_of(s.cls.__module__),
            "reference": _reference(s.cls),
        }
        for s in sorted(_REGISTRY.values(), key=lambda s: (s.private, s.feedback, s.name))
    ]
