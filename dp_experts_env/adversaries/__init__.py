"""Loss and advice models: pure, seeded, batched; no Gymnasium inside."""

from dp_experts_env.adversaries import advice as _advice  # noqa: F401  (registers bandit families)
from dp_experts_env.adversaries.adaptive import (
    ActionHistory,
    AdaptivePolicy,
    BaseLosses,
    PolicyAdversary,
)
from dp_experts_env.adversaries.base import Adversary, Neighbor, Round
from dp_experts_env.adversaries.registry import (
    ENV_KINDS,
    families,
    family_factory,
    make_adversary,
    register_family,
)

__all__ = [
    "Adversary",
    "Neighbor",
    "Round",
    "ENV_KINDS",
    "families",
    "family_factory",
    "make_adversary",
    "register_family",
    "ActionHistory",
    "AdaptivePolicy",
    "BaseLosses",
    "PolicyAdversary",
]
