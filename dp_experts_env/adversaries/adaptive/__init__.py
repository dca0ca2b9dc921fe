"""Adaptive loss models: round ``t``'s losses react to past actions, never to the current one.

Asi, Raman & Saha, Section 2.1 (the ``l_t(., J_{1:t-1}, z_t)`` form), and the lower-bound
constructions of Asi, Feldman, Koren & Talwar, Section 4 and Appendix C. Every model
here is a :class:`PolicyAdversary`: a *base* generator produces the protected datum ``z_t`` of shape
(B, N) (the neighbouring relation of event-level DP replaces exactly this vector), and an
:class:`AdaptivePolicy` maps ``(t, z_t, past actions)`` to the loss vector. The adversary is the
same function in neighbouring games (Asi, Raman & Saha, Definition 2.1), so an audit that swaps one
``z_t`` measures the learner, not the adversary.

Timing: ``next_round()`` computes round ``t``'s losses from the actions recorded for rounds
``1..t-1``; the env then calls ``record(actions)`` with round ``t``'s actions. The adversary refuses
to run ahead (``next_round`` before ``record`` of the previous round raises), so the current action
can never leak into the current losses.

Randomness: the base datum comes from the DATA stream with a fixed number of uniforms per round;
any randomness of a policy (public coins) comes from the ADVICE stream, never from the agent.

Families of kind ``"adaptive"`` (factories ``f(n_experts, horizon, **knobs) -> PolicyAdversary``):
``punish_last`` (default), ``punish_frequent``, ``sign_estimation``, ``hidden_sign_vector``,
``block_restart``.

Modules: :mod:`.framework` (history, policy and base-data interfaces, :class:`PolicyAdversary`),
:mod:`.policies` (the simple punishing policies), :mod:`.lower_bounds` (the lower-bound
constructions). Their public names are re-exported here.
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
