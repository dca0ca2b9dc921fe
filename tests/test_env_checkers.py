"""Every registered DPExperts id passes Gymnasium's and Stable-Baselines3's env checkers.

Parametrised over the Gymnasium registry, so an id added to the table is covered automatically.
Warnings are errors: the checkers must pass silently. The native vector env is checked against
Gymnasium's own SyncVectorEnv over the same single envs (same seeds -> same everything).
"""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import dp_experts_env
from dp_experts_env.envs import BanditAdviceVectorEnv, ExpertsVectorEnv

IDS = sorted(i for i in gym.registry if i.startswith("DPExperts"))
# The experts ids (Discrete actions); the continuous DPExperts-OCO-v0 passes both checkers above
# and has its own protocol tests in tests/test_oco_env.py.
EXPERTS_IDS = [
    i for i in IDS if i in dp_experts_env.ENV_IDS and dp_experts_env.env_entry(i).feedback != "oco"
]  # DPExperts-Attack-v0 (the learned adversary's env) is checked above and in test_attack_env
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env(env_id):
    env = gym.make(env_id, horizon=40)
    gym_check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", IDS)
def test_stable_baselines3_check_env(env_id):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(env_id, horizon=40))


@pytest.mark.parametrize("env_id", EXPERTS_IDS)
def test_default_construction_and_a_full_episode_through_the_wrappers(env_id):
    env = gym.make(env_id)  # PassiveEnvChecker and OrderEnforcing wrap it
    base = env.unwrapped
    entry = dp_experts_env.env_entry(env_id)
    assert base.kind == entry.kind and base.feedback == entry.feedback
    assert base.family == entry.defaults["family"]
    assert base.horizon == entry.defaults["horizon"]
    if entry.feedback == "bandit":
        assert base.n_arms == entry.defaults["n_arms"]
    env.close()
    env = gym.make(env_id, horizon=25)
    obs, _ = env.reset(seed=0)
    for t in range(1, 26):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs in env.observation_space and -1.0 <= reward <= 0.0
        assert terminated == (t == 25) and info["round"] == t


@pytest.mark.parametrize("env_id", EXPERTS_IDS)
def test_native_vector_env_matches_gymnasium_sync_vector_env(env_id):
    b_runs, horizon = 3, 15
    native = gym.make_vec(
        env_id, num_envs=b_runs, vectorization_mode="vector_entry_point", horizon=horizon
    )
    assert isinstance(native.unwrapped, (ExpertsVectorEnv, BanditAdviceVectorEnv))
    assert native.num_envs == native.unwrapped.num_envs == b_runs
    assert native.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    sync = gym.make_vec(env_id, num_envs=b_runs, vectorization_mode="sync", horizon=horizon)
    assert native.single_observation_space == sync.single_observation_space
    assert native.single_action_space == sync.single_action_space
    assert native.observation_space == sync.observation_space
    obs_n, _ = native.reset(seed=30)
    obs_s, _ = sync.reset(seed=30)
    _assert_same(obs_n, obs_s)
    native.action_space.seed(0)
    for _ in range(2 * horizon + 1):  # two episodes and the autoreset step between them
        actions = native.action_space.sample()
        out_n, out_s = native.step(actions), sync.step(actions)
        assert out_n[0] in native.observation_space
        for x, y in zip(out_n, out_s, strict=True):
            _assert_same(x, y)
    native.close()
    sync.close()


def _assert_same(x, y):
    if isinstance(x, dict):
        assert x.keys() == y.keys()
        for key in x:
            _assert_same(x[key], y[key])
    else:
        assert np.array_equal(np.asarray(x), np.asarray(y)), (x, y)


def test_quickstart_runs_every_id():
    module = runpy.run_path(str(QUICKSTART))
    results = module["main"](["--horizon", "30"])
    assert set(results) == set(EXPERTS_IDS)
    for info in results.values():
        # A comparator allowed S switches is at least as good as the best fixed expert and at
        # most as good as the best expert of every round.
        assert info["round"] == 30
        assert info["static_regret"] <= info["dynamic_regret"] + 1e-9
        assert info["dynamic_regret"] <= info["per_round_best_regret"] + 1e-9
