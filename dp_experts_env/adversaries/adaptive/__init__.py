"""Adaptive loss models: round ``t``'s losses react to past actions, never to the current one.

Asi, Raman & Saha, Section 2.1 (``l_t(., J_{1:t-1}, z_t)``; Definition 2.1), and the lower bounds
of Asi, Feldman, Koren & Talwar, Section 4 and Appendix C. A :class:`PolicyAdversary` draws the
protected datum ``z_t`` (DATA stream; a neighbour replaces it) and its :class:`AdaptivePolicy`
maps ``(t, z_t, past actions)`` to losses, with public coins (ADVICE stream) only.
``next_round`` before ``record`` of the previous round raises.
"""

from dp_experts_env.adversaries.adaptive.framework import (
    BASES,
    ActionHistory,
    AdaptivePolicy,
    BaseLosses,
    PolicyAdversary,
    PolicyAdversaryParams,
)
from dp_experts_env.adversaries.adaptive.lower_bounds import (
    BlockRestartParams,
    BlockRestartPolicy,
    HiddenSignVectorParams,
    SignEstimationParams,
    SignEstimationPolicy,
    block_restart,
    hidden_sign_vector,
    sign_estimation,
)
from dp_experts_env.adversaries.adaptive.policies import (
    PunishFrequentParams,
    PunishFrequentPolicy,
    PunishLastParams,
    PunishLastPolicy,
    punish_frequent,
    punish_last,
)

__all__ = [
    "ActionHistory",
    "AdaptivePolicy",
    "BaseLosses",
    "PolicyAdversary",
    "PunishLastPolicy",
    "PunishFrequentPolicy",
    "SignEstimationPolicy",
    "BlockRestartPolicy",
    "BASES",
    "punish_last",
    "punish_frequent",
    "sign_estimation",
    "hidden_sign_vector",
    "block_restart",
    "PolicyAdversaryParams",
    "PunishLastParams",
    "PunishFrequentParams",
    "SignEstimationParams",
    "HiddenSignVectorParams",
    "BlockRestartParams",
]
