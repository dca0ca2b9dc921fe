"""Protocol ``bench-v2``: bench-v1's text renamed plus the learned-adversary task (both pinned)."""

from dp_experts_env.bench.protocols.bench_v1 import TEXT as _V1

_LEARNED = r"""
# Every learner against one frozen adaptive adversary: PPO's actor trained once against Hedge
# at its default (N = 2, T = 200, 50,000 steps, seed 0), played by a numpy forward pass, the
# expert labels it sees permuted per run (a fixed-label learner cannot exploit its bias).
[[task]]
name = "learned-adversary"
capability = "static-worst-case"
env = "DPExperts-Attack-v0"
family = "frozen_ppo"
sizes = {n_experts = 2, horizon = 200}
seeds = 64
metric = "static_regret"
quick = {seeds = 16}

[task.adversary]
digest = "151b3eb55677a0bafbade4bf2c2af917d156ca516746aae3261785aacf2dd780"
trained_against = "hedge"
timesteps = 50000
train_seed = 0
labels = "permuted"
"""

TEXT = _V1.replace('version = "bench-v1"', 'version = "bench-v2"', 1) + _LEARNED
