"""Stable-Baselines3 PPO as a non-private RL baseline (skips only when the sb3 extra is absent)."""

import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sb3_ppo_baseline.py"


def test_ppo_trains_and_is_scored_next_to_our_agents():
    module = runpy.run_path(str(EXAMPLE))
    scores = module["main"](timesteps=2_048, horizon=200, episodes=2, seed=0)
    assert {"ppo", "ppo-raw", "uniform", "hedge", "fixed-share"} <= set(scores)
    for mean, std in scores.values():
        # Rewards are minus losses in [0, 1]: an episode of 200 rounds scores in [-200, 0].
        assert -200.0 <= mean <= 0.0 and np.isfinite(std)
    # A learner beats uniform play on a shifting stochastic env (losses are Bernoulli with a gap).
    assert scores["fixed-share"][0] > scores["uniform"][0]


@pytest.mark.slow
def test_example_ppo_baseline_beats_raw_ppo_on_the_stochastic_env():
    # 30k steps: the suite's baseline learns; SB3's MlpPolicy on the raw loss vector does not.
    module = runpy.run_path(str(EXAMPLE))
    scores = module["main"](
        timesteps=30_000, horizon=1_000, episodes=4, seed=0, env_id="DPExperts-Stochastic-v0"
    )
    assert scores["ppo"][0] > scores["ppo-raw"][0] + 20.0
    assert scores["ppo"][0] > scores["uniform"][0] + 20.0


def test_monitor_wrapper_records_episodes():
    import gymnasium as gym
    from stable_baselines3.common.monitor import Monitor

    import dp_experts_env  # noqa: F401

    env = Monitor(gym.make("DPExperts-Shift-v0", horizon=30))
    env.reset(seed=0)
    total = 0.0
    for _ in range(30):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += reward
    assert terminated and info["episode"]["l"] == 30
    assert info["episode"]["r"] == pytest.approx(total, abs=1e-5)
    assert "dynamic_regret" in info
