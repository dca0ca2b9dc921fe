"""Learned adversaries: an RL agent plays the adversary against any registered learner.

* :mod:`dp_experts_env.attack.env`: the ``DPExperts-Attack-v0`` env (single and native vector);
* :mod:`dp_experts_env.attack.bounds`: the learners' declared worst-case regret bounds;
* :mod:`dp_experts_env.attack.run`: training (Stable-Baselines3 PPO), evaluation against the
  hand-built families and a random adversary, the report and the oblivious replay export;
* :mod:`dp_experts_env.attack.command`: the ``dp-experts attack`` subcommand.

This package sits above ``agents/`` (like ``evaluation/``); nothing below imports it, and the env
id is registered by a string entry point.
"""

from dp_experts_env.learner_package import check_learner_package

# Every module of this package imports the learners: a foreign module named "agents" earlier on
# sys.path is refused here, by name, before anything runs with it.
check_learner_package()
