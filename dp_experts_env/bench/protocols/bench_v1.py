"""Protocol ``bench-v1`` (docs/bench.md). Its hash is pinned: a change is a new version."""

TEXT = r"""
version = "bench-v1"
epsilons = [0.5, 1.0, 2.0, 8.0, inf]
base_seed = 0
n_record = 16
# A task is scored only where the best reference beats the control by this fraction of the
# control's mean regret (below it the scale C - B is noise and scores explode).
min_gap = 0.2

# Per feedback kind: the no-learning control (score 0) and the non-private reference learners
# (score 1 is the best of them on each task). Each is [name, {keywords}, label].
[feedback.full]
control = ["uniform", {}, "uniform"]
references = [
    ["follow-the-leader", {}, "follow-the-leader"],
    ["hedge", {}, "hedge"],
    ["fixed-share", {}, "fixed-share"],
    ["shrinking-dartboard", {}, "shrinking-dartboard"],
]

[feedback.bandit]
control = ["uniform", {}, "uniform"]
references = [
    ["exp3", {}, "exp3"],
    ["exp4", {}, "exp4"],
    ["tsallis-inf", {}, "tsallis-inf"],
]

[feedback.oco]
control = ["ogd", {step = 0.0}, "centre"]
references = [
    ["ogd", {}, "ogd"],
    ["ftrl-oco", {}, "ftrl-oco"],
    ["lazy-ftrl-oco", {}, "lazy-ftrl-oco"],
]

[[task]]
name = "shift"
capability = "tracking"
env = "DPExperts-Shift-v0"
family = "bernoulli_gap"
sizes = {n_experts = 10, horizon = 10000, n_shifts = 4, gap = 0.3}
seeds = 10
metric = "dynamic_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "switching"
capability = "tracking"
env = "DPExperts-Oblivious-v0"
family = "switching_deterministic"
sizes = {n_experts = 10, horizon = 10000}
seeds = 10
metric = "dynamic_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "anti-lazy"
capability = "static-worst-case"
env = "DPExperts-Oblivious-v0"
family = "anti_lazy"
sizes = {n_experts = 10, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "ftl-trap"
capability = "static-worst-case"
env = "DPExperts-Oblivious-v0"
family = "ftl_trap"
sizes = {n_experts = 10, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "stochastic"
capability = "stationary"
env = "DPExperts-Stochastic-v0"
family = "one_vs_rest"
sizes = {n_experts = 10, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "punish-frequent"
capability = "adaptive"
env = "DPExperts-Adaptive-v0"
family = "punish_frequent"
sizes = {n_experts = 10, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "bandit"
capability = "bandit"
env = "DPExperts-Bandit-v0"
family = "bernoulli_gap"
sizes = {n_arms = 5, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "bandit-advice"
capability = "bandit-advice"
env = "DPExperts-BanditAdvice-v0"
family = "planted_expert"
sizes = {n_experts = 20, n_arms = 5, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "oco-stochastic"
capability = "continuous"
env = "DPExperts-OCO-v0"
family = "stochastic"
sizes = {dim = 5, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "oco-anti-ftl"
capability = "continuous"
env = "DPExperts-OCO-v0"
family = "anti_ftl"
sizes = {dim = 5, horizon = 10000}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 2000}, seeds = 4}

[[task]]
name = "digits"
capability = "real-data"
env = "DPExperts-Oblivious-v0"
family = "digits"
sizes = {horizon = 1797}
seeds = 10
metric = "static_regret"
quick = {sizes = {horizon = 800}, seeds = 4}
"""
