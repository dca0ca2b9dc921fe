"""The learners: ``agents.make(name, env=..., **params)`` and ``agents.available()``."""

# Learner modules register themselves on import.
from agents import bandit, full_info  # noqa: E402,F401  (non-private baselines)
from agents.base import Agent, BanditObs, PrivacyClaim, no_privacy
from agents.registry import AgentSpec, available, make, register, spec

__all__ = [
    "Agent",
    "AgentSpec",
    "BanditObs",
    "PrivacyClaim",
    "available",
    "make",
    "no_privacy",
    "register",
    "spec",
]
