"""The learners: ``agents.make(name, env=..., **params)`` and ``agents.available()``."""

# Learner modules register themselves on import.
import agents.dp_ftrl  # noqa: F401  (private full-information, DP-FTRL)
import agents.limited_updates  # noqa: F401
import agents.meta_expert  # noqa: F401
import agents.noisy_clipped_hedge  # noqa: F401
import agents.oco_baselines  # noqa: F401  (continuous actions: OGD, FTRL, DP-FTRL for OCO)
import agents.p_comw  # noqa: F401  (P-COMW, Agarwal-Kale-Singh-Thakurta, continuous actions)
import agents.ppo  # noqa: F401  (RL baseline; trains with the sb3 extra when built)
import agents.private_bandit  # noqa: F401  (private bandit learners)
import agents.private_dartboard  # noqa: F401  (lazy private learners, RPS)
import agents.private_exp4  # noqa: F401
import agents.private_lazy_hedge  # noqa: F401
import agents.randomized_prefix  # noqa: F401
import agents.svt_restart  # noqa: F401
from agents import bandit, full_info  # noqa: E402,F401  (non-private baselines)
from agents.base import Agent, BanditObs, PrivacyClaim, no_privacy
from agents.registry import AgentSpec, available, load_plugins, make, register, source, spec

__all__ = [
    "Agent",
    "AgentSpec",
    "BanditObs",
    "PrivacyClaim",
    "available",
    "load_plugins",
    "make",
    "no_privacy",
    "register",
    "source",
    "spec",
]
