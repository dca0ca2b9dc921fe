"""The one table of environment kinds: every kind is declared here once.

A *kind* is what an environment id serves (feedback, default loss model and sizes). A new kind
is one :class:`KindSpec` row plus its families; a new feedback also a :class:`FeedbackSpec` row.
This module imports nothing from the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "ID_KIND",
    "FeedbackSpec",
    "FEEDBACKS",
    "KindSpec",
    "KINDS",
    "ENV_KINDS",
    "kinds_of",
]

#: The keyword carrying a registered id's kind: it survives a ``kind=`` given to ``gym.make``, so
#: :func:`dp_experts_env.envs.factory.check_id_kind` can refuse the contradiction.
ID_KIND = "_id_kind"


@dataclass(frozen=True)
class FeedbackSpec:
    """What a learner observes, and the env classes that implement it.

    Attributes:
        name: ``"full"``, ``"bandit"`` or ``"oco"``.
        observation: the observation layout, in words (for listings and docs).
        entry_point: the single env class (``"module:Class"``).
        vector_entry_point: the native vector env class.
    """

    name: str
    observation: str
    entry_point: str
    vector_entry_point: str


FEEDBACKS: Mapping[str, FeedbackSpec] = MappingProxyType({
    "full": FeedbackSpec(
        "full",
        "Box(0, 1, (N,)): the whole loss vector of the round just played",
        "dp_experts_env.envs:ExpertsEnv",
        "dp_experts_env.envs:ExpertsVectorEnv",
    ),
    "bandit": FeedbackSpec(
        "bandit",
        "Dict(advice: Box(0, 1, (N*K,)), last_action: Discrete(K), last_loss: Box(0, 1, (1,)))",
        "dp_experts_env.envs:BanditAdviceEnv",
        "dp_experts_env.envs:BanditAdviceVectorEnv",
    ),
    "oco": FeedbackSpec(
        "oco",
        "Box(-G, G, (d,)): the gradient of the round just played",
        "dp_experts_env.envs.oco:OCOEnv",
        "dp_experts_env.envs.oco:OCOVectorEnv",
    ),
})  # fmt: skip


@dataclass(frozen=True)
class KindSpec:
    """One environment kind.

    Attributes:
        kind: the kind's name.
        env_id: the Gymnasium id serving it.
        feedback: a key of :data:`FEEDBACKS`.
        family: the default family.
        defaults: the sizes (and other settings) a bare ``gymnasium.make(env_id)`` uses.
        oblivious_only: True when the kind promises losses that ignore the learner's actions.
        summary: one line for listings.
    """

    kind: str
    env_id: str
    feedback: str
    family: str
    defaults: Mapping[str, Any]
    oblivious_only: bool
    summary: str

    @property
    def n_experts(self) -> int | None:
        """Default N (None for kinds without experts)."""
        return self.defaults.get("n_experts")

    @property
    def horizon(self) -> int | None:
        """Default T."""
        return self.defaults.get("horizon")

    @property
    def n_arms(self) -> int | None:
        """Default K (bandit kinds), else None."""
        return self.defaults.get("n_arms")

    @property
    def observation(self) -> str:
        """The observation layout of this kind's feedback."""
        return FEEDBACKS[self.feedback].observation


def _kind(
    kind: str,
    env_id: str,
    feedback: str,
    family: str,
    defaults: dict[str, Any],
    oblivious_only: bool,
    summary: str,
) -> tuple[str, KindSpec]:
    spec = KindSpec(
        kind, env_id, feedback, family, MappingProxyType(defaults), oblivious_only, summary
    )
    return kind, spec


KINDS: Mapping[str, KindSpec] = MappingProxyType(dict([
    _kind(
        "shift", "DPExperts-Shift-v0", "full", "bernoulli_gap",
        {"n_experts": 10, "horizon": 1000}, True,
        "shifting stochastic: change points, i.i.d. losses within a segment",
    ),
    _kind(
        "stochastic", "DPExperts-Stochastic-v0", "full", "one_vs_rest",
        {"n_experts": 10, "horizon": 1000}, True,
        "stationary i.i.d. losses with a gap",
    ),
    _kind(
        "oblivious", "DPExperts-Oblivious-v0", "full", "anti_lazy",
        {"n_experts": 10, "horizon": 1000}, True,
        "loss sequence fixed before play (hard families, replay of a user matrix)",
    ),
    _kind(
        "adaptive", "DPExperts-Adaptive-v0", "full", "punish_last",
        {"n_experts": 10, "horizon": 1000}, False,
        "losses react to the learner's past actions (never the current one)",
    ),
    _kind(
        "bandit_advice", "DPExperts-BanditAdvice-v0", "bandit", "planted_expert",
        {"n_experts": 20, "horizon": 1000, "n_arms": 5}, False,
        "N experts advise distributions over K arms; only the played arm's loss is seen",
    ),
    _kind(
        "bandit", "DPExperts-Bandit-v0", "bandit", "bernoulli_gap",
        {"n_experts": 5, "horizon": 1000, "n_arms": 5}, False,
        "K-armed adversarial bandit: bandit with advice from the K identity experts",
    ),
    _kind(
        "oco", "DPExperts-OCO-v0", "oco", "stochastic",
        {"dim": 5, "horizon": 1000, "body": "box"}, False,
        "online linear optimisation on a box or ball: Box actions, losses <g_t, x>, "
        "||g_t|| <= G",
    ),
]))  # fmt: skip


def kinds_of(feedback: str) -> tuple[str, ...]:
    """The kinds with a given feedback, in table order (``kinds_of("full")``: the experts envs)."""
    if feedback not in FEEDBACKS:
        raise ValueError(f"feedback must be one of {list(FEEDBACKS)}, got {feedback!r}")
    return tuple(k for k, spec in KINDS.items() if spec.feedback == feedback)


#: The kinds whose loss models are ``register_family`` families (not OCO's gradient models).
ENV_KINDS: tuple[str, ...] = kinds_of("full") + kinds_of("bandit")
