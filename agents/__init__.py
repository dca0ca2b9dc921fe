"""The learners: ``agents.make(name, env=..., **params)`` and ``agents.available()``."""

# Learner modules register themselves on import.
import agents.dp_ftrl  # noqa: F401  (private full-information, DP-FTRL)
import agents.dp_klucb  # noqa: F401  (AdaP-KLUCB, private stochastic bandit, #38)
import agents.gaussian_tree_hedge  # noqa: F401  (Hedge on a Gaussian tree, #38)
import agents.limited_updates  # noqa: F401
import agents.meta_expert  # noqa: F401
import agents.noisy_clipped_hedge  # noqa: F401
import agents.oco_baselines  # noqa: F401  (continuous actions: OGD, FTRL, DP-FTRL for OCO)
import agents.oco_fair  # noqa: F401  (P-COMW's fair opponents: lazy FTRL, Gaussian DP-FTRL)
import agents.p_comw  # noqa: F401  (P-COMW, Agarwal-Kale-Singh-Thakurta, continuous actions)
import agents.paper_modes  # noqa: F401  (name:paper rows of the suite variants, #38)
import agents.ppo  # noqa: F401  (RL baseline; trains with the sb3 extra when built)
import agents.private_bandit  # noqa: F401  (private bandit learners)
import agents.private_dartboard  # noqa: F401  (lazy private learners, RPS)
import agents.private_exp4  # noqa: F401
import agents.private_fixed_share  # noqa: F401  (batched noisy Fixed-Share, #38)
import agents.private_lazy_hedge  # noqa: F401
import agents.private_ucb  # noqa: F401  (AdaP-UCB, private stochastic bandit)
import agents.randomized_prefix  # noqa: F401
import agents.svt_restart  # noqa: F401
import agents.ucb  # noqa: F401  (stochastic-bandit baselines: UCB1, KL-UCB, Thompson)
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
