"""The registered environment ids: one per row of the kind table (:mod:`dp_experts_env.kinds`).

:func:`register_envs` (run at ``import dp_experts_env``) registers the single and native vector
entry points of every id with Gymnasium; registering again is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from dp_experts_env.kinds import FEEDBACKS, ID_KIND, KINDS

__all__ = ["RegisteredEnv", "ENVS", "ENV_IDS", "ATTACK_ID", "register_envs", "env_entry"]

#: The learned-adversary env (dp_experts_env.attack.env); registered beside the kind table's ids.
ATTACK_ID = "DPExperts-Attack-v0"


@dataclass(frozen=True)
class RegisteredEnv:
    """One registered environment (a view of its row of the kind table).

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
        return KINDS[self.kind].feedback

    @property
    def summary(self) -> str:
        """One line describing the loss model."""
        return KINDS[self.kind].summary


def _entry(kind: str) -> RegisteredEnv:
    spec = KINDS[kind]
    feedback = FEEDBACKS[spec.feedback]
    defaults: dict[str, Any] = {"family": spec.family, **spec.defaults}
    return RegisteredEnv(
        spec.env_id, kind, feedback.entry_point, feedback.vector_entry_point, defaults
    )


ENVS: tuple[RegisteredEnv, ...] = tuple(_entry(kind) for kind in KINDS)
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
            # The id fixes the kind (see dp_experts_env.kinds.ID_KIND's comment).
            kwargs={"kind": entry.kind, ID_KIND: entry.kind},
        )
    # The learned adversary's env embeds a learner, so it lives above agents/ (not a kind row).
    if ATTACK_ID not in gym.registry:
        gym.register(
            id=ATTACK_ID,
            entry_point="dp_experts_env.attack.env:AttackEnv",
            vector_entry_point="dp_experts_env.attack.env:AttackVectorEnv",
        )
