"""Loss and advice models: pure, seeded, batched; no Gymnasium inside."""

from dp_experts_env.adversaries import advice as _advice  # noqa: F401  (registers bandit families)
from dp_experts_env.adversaries.adaptive import (
    ActionHistory,
    AdaptivePolicy,
    BaseLosses,
    PolicyAdversary,
)
from dp_experts_env.adversaries.base import Adversary, Neighbor, Round
from dp_experts_env.adversaries.params import FamilyParams
from dp_experts_env.adversaries.registry import (
    ENV_KINDS,
    families,
    family_factory,
    family_params,
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
    "family_params",
    "FamilyParams",
    "make_adversary",
    "register_family",
    "ActionHistory",
    "AdaptivePolicy",
    "BaseLosses",
    "PolicyAdversary",
]

# The remaining family modules register their families on import.
from dp_experts_env.adversaries import advice_minimax as _advice_minimax  # noqa: E402,F401
from dp_experts_env.adversaries import advice_replay as _advice_replay  # noqa: E402,F401
from dp_experts_env.adversaries import bandit as _bandit  # noqa: E402,F401
from dp_experts_env.adversaries import oblivious as _oblivious  # noqa: E402,F401
from dp_experts_env.adversaries import real_tasks as _real_tasks  # noqa: E402,F401
from dp_experts_env.adversaries import shifting as _shifting  # noqa: E402,F401
from dp_experts_env.adversaries import stochastic as _stochastic  # noqa: E402,F401
