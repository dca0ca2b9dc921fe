"""PPO as a non-private reinforcement-learning baseline on DPExperts-Shift-v0.

PPO sees what our learners see (the last loss vector) and is trained across episodes, so it can
learn "play the expert that just did well" but nothing about the future change points. It is
scored with Stable-Baselines3's ``evaluate_policy`` next to our learners, which follow the same
``predict`` protocol. Rewards are minus losses, so a higher mean reward is a lower loss.

Needs the ``sb3`` extra (install ``torch==2.13.0`` first for the CPU build).

Usage: python examples/sb3_ppo_baseline.py [--timesteps 20000] [--horizon 500]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

import agents
import dp_experts_env  # noqa: F401 - registers the env ids

ENV_ID = "DPExperts-Shift-v0"


def main(timesteps: int = 20_000, horizon: int = 500, episodes: int = 4, seed: int = 0) -> dict:
    """Train PPO, evaluate it and three of our learners; return mean episode rewards."""
    # The policy is a tiny MLP: thread hand-offs cost far more than they save on a small CPU.
    torch.set_num_threads(1)
    env_kwargs = {"n_experts": 10, "horizon": horizon, "n_shifts": 4}
    train_env = make_vec_env(ENV_ID, n_envs=2, seed=seed, env_kwargs=env_kwargs)
    model = PPO(
        "MlpPolicy", train_env, n_steps=256, batch_size=64, seed=seed, verbose=0, device="cpu"
    )
    model.learn(total_timesteps=timesteps)

    scores = {}
    eval_env = make_vec_env(ENV_ID, n_envs=1, seed=seed + 1000, env_kwargs=env_kwargs)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=episodes, deterministic=True)
    scores["ppo"] = (mean, std)
    for name, params in [("uniform", {}), ("hedge", {}), ("fixed-share", {})]:
        eval_env = make_vec_env(ENV_ID, n_envs=1, seed=seed + 1000, env_kwargs=env_kwargs)
        single = gym.make(ENV_ID, **env_kwargs)
        agent = agents.make(name, env=single, seed=seed, **params)
        mean, std = evaluate_policy(agent, eval_env, n_eval_episodes=episodes)
        scores[name] = (mean, std)
    print(f"mean episode reward on {ENV_ID} (T = {horizon}; reward = -loss, higher is better)")
    for name, (mean, std) in sorted(scores.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:14s} {mean:9.2f} +- {std:.2f}")
    return scores


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--horizon", type=int, default=500)
    parser.add_argument("--episodes", type=int, default=4)
    args = parser.parse_args()
    main(args.timesteps, args.horizon, args.episodes)
