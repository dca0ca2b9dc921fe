"""Learned adversaries: an RL agent plays the adversary against any registered learner.

Modules: :mod:`.env` (``DPExperts-Attack-v0``), :mod:`.bounds` (declared regret bounds),
:mod:`.run` (training and evaluation), :mod:`.command` (``dp-experts attack``). The package sits
above ``agents/``; nothing below imports it (docs/attack.md).
"""

from dp_experts_env.learner_package import check_learner_package

# Every module here imports the learners: refuse a foreign "agents" module first.
check_learner_package()
