"""Stable-Baselines3's evaluate_policy runs our agents (skips only when the sb3 extra is absent).

SB3 drives ``agent.predict(obs, state, episode_start, deterministic)`` on an SB3 ``VecEnv``. We use
``DummyVecEnv`` over ``gym.make(...)`` envs (wrapped in ``Monitor`` so SB3 reads true episode
returns). Our native vector env is a Gymnasium ``VectorEnv``; ``dp_experts_env.sb3`` adapts it
to SB3's ``VecEnv`` (tests/test_sb3_vec.py). The test below checks that the DummyVecEnv path and
our own evaluation loop on the native vector env play the same game.
"""

import warnings

import gymnasium as gym
import numpy as np
import pytest

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

HORIZON = 40
CASES = [
    ("DPExperts-Shift-v0", {}, ["uniform", "follow-the-leader", "hedge", "fixed-share"]),
    ("DPExperts-Shift-v0", {}, ["shrinking-dartboard"]),
    ("DPExperts-BanditAdvice-v0", {}, ["exp3", "exp4", "tsallis-inf"]),
    ("DPExperts-Bandit-v0", {"n_arms": 4}, ["exp3", "tsallis-inf", "exp4"]),
]


def dummy(env_id, n, **kwargs):
    return DummyVecEnv([lambda: Monitor(gym.make(env_id, horizon=HORIZON, **kwargs))] * n)


@pytest.mark.parametrize(("env_id", "kwargs", "names"), CASES)
def test_evaluate_policy_runs_our_agents(env_id, kwargs, names):
    for name in names:
        vec_env = dummy(env_id, 2, **kwargs)
        agent = agents.make(name, env=vec_env, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no SB3 warning (e.g. missing Monitor)
            rewards, lengths = evaluate_policy(
                agent, vec_env, n_eval_episodes=4, return_episode_rewards=True
            )
        assert lengths == [HORIZON] * 4, name
        assert all(-HORIZON <= r <= 0 for r in rewards), name  # losses in [0, 1]


@pytest.mark.parametrize(
    ("env_id", "kwargs", "name"),
    [
        ("DPExperts-Shift-v0", {}, "hedge"),
        ("DPExperts-BanditAdvice-v0", {}, "exp4"),
    ],
)
def test_evaluate_policy_plays_the_same_game_as_our_loop(env_id, kwargs, name):
    # SB3 path: seeded DummyVecEnv, one episode per sub-env.
    vec_env = dummy(env_id, 2, **kwargs)
    vec_env.seed(5)
    agent = agents.make(name, env=vec_env, seed=0)
    rewards, _ = evaluate_policy(agent, vec_env, n_eval_episodes=2, return_episode_rewards=True)
    # Our path: the native vector env, reset with the same per-env seeds 5 and 6.
    native = gym.make_vec(
        env_id, num_envs=2, vectorization_mode="vector_entry_point", horizon=HORIZON, **kwargs
    )
    mine = agents.make(name, env=native, seed=0)
    obs, _ = native.reset(seed=5)
    total = np.zeros(2)
    for _ in range(HORIZON):
        obs, reward, terminated, _, _ = native.step(mine.act(obs))
        total += reward
    assert terminated.all()
    np.testing.assert_allclose(sorted(rewards), sorted(total), atol=1e-5)


def test_evaluate_policy_wraps_a_single_env():
    env = Monitor(gym.make("DPExperts-Shift-v0", horizon=HORIZON))
    agent = agents.make("hedge", env=env, seed=0)
    mean, std = evaluate_policy(agent, env, n_eval_episodes=2)
    assert -HORIZON <= mean <= 0 and std >= 0
