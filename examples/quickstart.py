"""Quickstart: a uniformly random policy on every registered DPExperts environment.

Run ``python examples/quickstart.py`` (``--horizon 200`` for a quick look). For each id it plays
one episode with a single env, then eight runs at once with the native vector env, and prints
the final static and dynamic regret (dynamic: against the best expert sequence with at most S
switches, S = ``env.unwrapped.n_switches``).
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import dp_experts_env


def play_single(env_id: str, horizon: int, seed: int) -> dict:
    """One episode of the single env; returns the last ``info``."""
    env = gym.make(env_id, horizon=horizon)
    policy_rng = np.random.default_rng(seed)  # the policy's own randomness, never the env's
    obs, info = env.reset(seed=seed)
    while True:
        action = int(policy_rng.integers(env.action_space.n))
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    env.close()
    return info


def play_vector(env_id: str, horizon: int, seed: int, num_envs: int = 8) -> dict:
    """One episode of ``num_envs`` runs in lockstep; returns the last ``info`` ((B,) arrays)."""
    envs = gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", horizon=horizon
    )
    policy_rng = np.random.default_rng(seed)
    n_actions = envs.single_action_space.n
    obs, info = envs.reset(seed=seed)  # run b uses seed + b, like a single env seeded seed + b
    while True:
        actions = policy_rng.integers(n_actions, size=num_envs)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        if terminated.all() or truncated.all():
            break
    envs.close()
    return info


def main(argv: list[str] | None = None) -> dict[str, dict]:
    """Play every registered id; returns id -> final single-env info."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1000, help="rounds per episode (T)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    print(f"uniform random play, T = {args.horizon}")
    header = f"{'env id':28s} {'N':>4s} {'K':>4s} {'S':>3s} {'static':>9s} {'dynamic':>9s}"
    print(header + f"  {'dynamic, mean of 8 runs':>24s}")
    results = {}
    for env_id in dp_experts_env.ENV_IDS:
        if dp_experts_env.env_entry(env_id).feedback == "oco":
            print(f"{env_id:28s} continuous actions: see examples/oco_pcomw.py")
            continue
        info = play_single(env_id, args.horizon, args.seed)
        batch = play_vector(env_id, args.horizon, args.seed)
        base = gym.make(env_id, horizon=args.horizon).unwrapped
        arms = "-" if base.n_arms is None else str(base.n_arms)
        print(
            f"{env_id:28s} {base.n_experts:4d} {arms:>4s} {base.n_switches:3d} "
            f"{info['static_regret']:9.2f} {info['dynamic_regret']:9.2f}  "
            f"{batch['dynamic_regret'].mean():24.2f}"
        )
        results[env_id] = info
    return results


if __name__ == "__main__":
    main()
