"""The one table of environment ids: id -> kind, entry points, defaults.

:func:`register_envs` (called when :mod:`dp_experts_env` is imported) registers every id with
Gymnasium, so ``gymnasium.make(id, **kwargs)`` builds the single env and
``gymnasium.make_vec(id, num_envs=B, vectorization_mode="vector_entry_point", **kwargs)`` the
native vector env. Registering again is a no-op (no "overriding" warning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from dp_experts_env.envs.factory import KINDS

__all__ = ["RegisteredEnv", "ENVS", "ENV_IDS", "register_envs", "env_entry"]

_FULL = ("dp_experts_env.envs:ExpertsEnv", "dp_experts_env.envs:ExpertsVectorEnv")
_BANDIT = ("dp_experts_env.envs:BanditAdviceEnv", "dp_experts_env.envs:BanditAdviceVectorEnv")


@dataclass(frozen=True)
class RegisteredEnv:
    """One registered environment.

    Attributes:
        id: the Gymnasium id.
        kind: the environment kind (fixes feedback and default loss model).
        entry_point: the single env class.
        vector_entry_point: the native vector env class.
        defaults: the defaults a bare ``gym.make(id)`` uses (for listings; the env applies them).
    """

    id: str
    kind: str
    entry_point: str
    vector_entry_point: str
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def feedback(self) -> str:
        """``"full"``, ``"bandit"`` or ``"oco"`` (continuous actions, gradient feedback)."""
        if self.kind == "oco":
            return "oco"
        return KINDS[self.kind].feedback

    @property
    def summary(self) -> str:
        """One line describing the loss model."""
        if self.kind == "oco":
            return _OCO_SUMMARY
        return KINDS[self.kind].summary


def _entry(env_id: str, kind: str) -> RegisteredEnv:
    spec = KINDS[kind]
    single, vector = _BANDIT if spec.feedback == "bandit" else _FULL
    defaults: dict[str, Any] = {
        "family": spec.family,
        "n_experts": spec.n_experts,
        "horizon": spec.horizon,
    }
    if spec.n_arms is not None:
        defaults["n_arms"] = spec.n_arms
    return RegisteredEnv(env_id, kind, single, vector, defaults)


_OCO_SUMMARY = (
    "online linear optimisation on a box or ball: Box actions, losses <g_t, x>, ||g_t|| <= G"
)
_OCO = RegisteredEnv(
    "DPExperts-OCO-v0",
    "oco",
    "dp_experts_env.envs.oco:OCOEnv",
    "dp_experts_env.envs.oco:OCOVectorEnv",
    {"family": "stochastic", "dim": 5, "horizon": 1000, "body": "box"},
)

ENVS: tuple[RegisteredEnv, ...] = (
    _entry("DPExperts-Shift-v0", "shift"),
    _entry("DPExperts-Stochastic-v0", "stochastic"),
    _entry("DPExperts-Oblivious-v0", "oblivious"),
    _entry("DPExperts-Adaptive-v0", "adaptive"),
    _entry("DPExperts-BanditAdvice-v0", "bandit_advice"),
    _entry("DPExperts-Bandit-v0", "bandit"),
    _OCO,
)

ENV_IDS: tuple[str, ...] = tuple(e.id for e in ENVS)


def env_entry(env_id: str) -> RegisteredEnv:
    """The table row of ``env_id``."""
    for entry in ENVS:
        if entry.id == env_id:
            return entry
    raise ValueError(f"env id must be one of {list(ENV_IDS)}, got {env_id!r}")


def register_envs() -> None:
    """Register every id with Gymnasium (idempotent)."""
    for entry in ENVS:
        if entry.id in gym.registry:
            continue
        gym.register(
            id=entry.id,
            entry_point=entry.entry_point,
            vector_entry_point=entry.vector_entry_point,
            kwargs={"kind": entry.kind},
        )
