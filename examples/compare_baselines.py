"""Compare the non-private baselines: final static and dynamic regret over a few seeds.

Run ``python examples/compare_baselines.py`` (``--horizon 300 --seeds 3`` for a quick look).
Full-information baselines play ``DPExperts-Shift-v0``; bandit baselines play
``DPExperts-BanditAdvice-v0`` and ``DPExperts-Bandit-v0``. All seeds of a (env, agent) pair run in
one batch on the native vector env: run b uses env seed ``seed + b`` and agent seed ``seed + b``,
so every agent faces the same loss sequences. Dynamic regret is against the best expert sequence
with at most S switches (S = the env's ``n_switches``); on the bandit envs the experts' losses are
``<advice_j, l_t>``.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)

SUITE = [
    (
        "DPExperts-Shift-v0",
        {},
        [
            ("uniform", {}),
            ("follow-the-leader", {}),
            ("hedge", {}),
            ("hedge", {"rate": "anytime"}),
            ("fixed-share", {}),
            ("shrinking-dartboard", {}),
        ],
    ),
    (
        "DPExperts-BanditAdvice-v0",
        {},
        [
            ("exp3", {}),
            ("exp3", {"over": "experts"}),
            ("tsallis-inf", {}),
            ("tsallis-inf", {"over": "experts"}),
            ("ftpl-gr", {}),
            ("exp4", {}),
        ],
    ),
    (
        "DPExperts-Bandit-v0",
        {"n_arms": 5},
        [("exp3", {}), ("tsallis-inf", {}), ("ftpl-gr", {}), ("exp4", {})],
    ),
]


def label(name: str, params: dict) -> str:
    """``hedge`` or ``hedge(rate=anytime)``."""
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"


def run(
    env_id: str, env_kwargs: dict, name: str, params: dict, horizon: int, seeds: int, seed: int
):
    """Play one batched episode; return the final (B,) static and dynamic regrets and S."""
    env = gym.make_vec(
        env_id,
        num_envs=seeds,
        vectorization_mode="vector_entry_point",
        horizon=horizon,
        **env_kwargs,
    )
    agent = agents.make(name, env=env, seed=seed, **params)
    obs, info = env.reset(seed=seed)
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if np.all(terminated) or np.all(truncated):
            break
    switches = int(env.unwrapped.n_switches)
    env.close()
    return np.asarray(info["static_regret"]), np.asarray(info["dynamic_regret"]), switches


def main(horizon: int = 1000, seeds: int = 5, seed: int = 0) -> dict[tuple[str, str], dict]:
    """Run the suite and print one table per env; returns {(env id, agent label): results}."""
    results: dict[tuple[str, str], dict] = {}
    for env_id, env_kwargs, learners in SUITE:
        print(f"\n{env_id}  (T={horizon}, {seeds} seeds)")
        print(f"{'agent':<34} {'static regret':>18} {'dynamic regret':>18}")
        for name, params in learners:
            static, dynamic, switches = run(env_id, env_kwargs, name, params, horizon, seeds, seed)
            key = (env_id, label(name, params))
            results[key] = {"static": static, "dynamic": dynamic, "n_switches": switches}
            print(
                f"{key[1]:<34} {static.mean():>9.1f} ± {static.std():<6.1f} "
                f"{dynamic.mean():>9.1f} ± {dynamic.std():<6.1f}"
            )
        print(f"(dynamic regret: best sequence with at most S = {switches} switches)")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.horizon, args.seeds, args.seed)
