"""PPO as a non-private RL baseline, scored with Stable-Baselines3 next to the suite's learners.

Two PPO policies are trained on episodes of the env (training seeds of their own) and then
evaluated, with every learner, by SB3's ``evaluate_policy`` on the same held-out episodes (the
native vector env through ``dp_experts_env.sb3``, seeded, wrapped in ``VecMonitor``):

* ``ppo`` -- the suite's RL baseline (``agents.make("ppo", env=...)``): loss statistics as the
  observation and one shared scorer per expert. It learns.
* ``ppo-raw`` -- SB3's default ``MlpPolicy`` on the raw observation (last round's losses only):
  it cannot tell which expert is best and stays near uniform play.

Rewards are minus losses and every learner plays the same loss sequences, so the differences of
mean episode reward are differences of regret. Needs the ``sb3`` extra (install
``torch==2.13.0`` first for the CPU build).

Usage: python examples/sb3_ppo_baseline.py [--env DPExperts-Shift-v0] [--timesteps 100000]
       [--horizon 1000] [--episodes 32]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecMonitor

import agents
from dp_experts_env.sb3 import make_sb3_vec_env

EVAL_SEED = 1_000  # held-out episodes; training seeds come from SeedSequence([seed, 0x5EED])


def main(
    timesteps: int = 100_000,
    horizon: int = 1_000,
    episodes: int = 8,
    seed: int = 0,
    env_id: str = "DPExperts-Shift-v0",
) -> dict[str, tuple[float, float]]:
    """Train both PPO variants, evaluate them and three learners; return mean/std reward."""
    torch.set_num_threads(1)  # tiny networks: threads cost more than they save
    env_kwargs = {"horizon": horizon}

    def eval_env() -> VecMonitor:
        venv = VecMonitor(make_sb3_vec_env(env_id, num_envs=episodes, **env_kwargs))
        venv.seed(EVAL_SEED)  # every learner plays the same `episodes` loss sequences
        return venv

    players = {}
    venv = eval_env()
    players["ppo"] = agents.make("ppo", env=venv, seed=seed, timesteps=timesteps, train_seed=seed)
    raw_train = VecMonitor(make_sb3_vec_env(env_id, num_envs=16, **env_kwargs))
    raw_train.seed(int(np.random.SeedSequence([seed, 0x5EED]).generate_state(1)[0]))
    # Same rollout size as the baseline (SB3's default n_steps=2048 x 16 runs would collect
    # 32k steps before the first update).
    raw = PPO(
        "MlpPolicy", raw_train, n_steps=128, batch_size=256, seed=seed, device="cpu", verbose=0
    )
    players["ppo-raw"] = raw.learn(timesteps)
    for name in ("uniform", "hedge", "fixed-share"):
        players[name] = agents.make(name, env=venv, seed=seed)

    scores = {}
    for name, player in players.items():
        mean, std = evaluate_policy(player, eval_env(), n_eval_episodes=episodes)
        scores[name] = (float(mean), float(std))
    print(f"mean episode reward on {env_id} (T = {horizon}, {episodes} held-out episodes, ")
    print(f"PPO trained for {timesteps} steps; reward = -loss, higher is better)")
    for name, (mean, std) in sorted(scores.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:12s} {mean:9.2f} +- {std:.2f}")
    return scores


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="DPExperts-Shift-v0")
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--horizon", type=int, default=1_000)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.timesteps, args.horizon, args.episodes, args.seed, args.env)
