"""The SB3 VecEnv adapter of the native vector env, and evaluate_policy with our agents."""

import warnings

import gymnasium as gym
import numpy as np
import pytest

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)

pytest.importorskip("stable_baselines3")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor  # noqa: E402

from dp_experts_env.sb3 import SB3VecEnv, make_sb3_vec_env  # noqa: E402

H = 12


def dummy(env_id, n, **kwargs):
    return DummyVecEnv([lambda: Monitor(gym.make(env_id, horizon=H, **kwargs))] * n)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("DPExperts-Shift-v0", {"n_experts": 4}), ("DPExperts-BanditAdvice-v0", {})],
)
def test_adapter_plays_dummyvecenv_game_step_by_step(env_id, kwargs):
    ours = make_sb3_vec_env(env_id, num_envs=3, horizon=H, **kwargs)
    ref = dummy(env_id, 3, **kwargs)
    ours.seed(11)
    ref.seed(11)
    o1, o2 = ours.reset(), ref.reset()
    rng = np.random.default_rng(0)
    n_actions = ours.action_space.n
    for step in range(2 * H + 3):  # crosses two episode boundaries
        actions = rng.integers(0, n_actions, size=3)
        o1, r1, d1, i1 = ours.step(actions)
        o2, r2, d2, i2 = ref.step(actions)
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_allclose(r1, r2)
        if isinstance(o1, dict):
            for key in o1:
                np.testing.assert_allclose(o1[key], o2[key])
        else:
            np.testing.assert_allclose(o1, o2)
        for a, b in zip(i1, i2, strict=True):
            assert a["dynamic_regret"] == pytest.approx(b["dynamic_regret"])
            assert a["TimeLimit.truncated"] is False
            assert ("terminal_observation" in a) == ("terminal_observation" in b)
        if d1.all():
            assert step + 1 in (H, 2 * H)


def test_ppo_vecmonitor_and_evaluate_policy_on_the_adapter():
    venv = VecMonitor(make_sb3_vec_env("DPExperts-Shift-v0", num_envs=4, horizon=H))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # VecMonitor found: no "not wrapped with Monitor" warning
        rewards, lengths = evaluate_policy(
            model, venv, n_eval_episodes=6, return_episode_rewards=True
        )
    assert lengths == [H] * 6
    assert all(-H <= r <= 0 for r in rewards)


@pytest.mark.parametrize("n_eval_episodes", [1, 2, 3, 5, 7])
def test_our_agents_evaluate_for_any_episode_count(n_eval_episodes):
    # 3 sub-envs: episode quotas (n + i) // 3 are unequal unless n is a multiple of 3.
    ours = VecMonitor(make_sb3_vec_env("DPExperts-Shift-v0", num_envs=3, horizon=H))
    ref = dummy("DPExperts-Shift-v0", 3)
    results = []
    for venv in (ours, ref):
        venv.seed(3)
        agent = agents.make("hedge", env=venv, seed=0)
        out = evaluate_policy(
            agent, venv, n_eval_episodes=n_eval_episodes, return_episode_rewards=True
        )
        results.append(out)
    (r1, l1), (r2, l2) = results
    assert l1 == l2 == [H] * n_eval_episodes
    np.testing.assert_allclose(sorted(r1), sorted(r2), atol=1e-5)  # same games, same learner


def test_num_envs_mismatch_names_the_constraint():
    venv = VecMonitor(make_sb3_vec_env("DPExperts-Shift-v0", num_envs=2, horizon=H))
    agent = agents.make("hedge", n_experts=10, horizon=H, seed=0)  # num_envs = 1
    with pytest.raises(ValueError, match=r"built for num_envs=1.*num_envs=2"):
        evaluate_policy(agent, venv, n_eval_episodes=2)


def test_a_run_restarting_alone_is_refused():
    agent = agents.make("hedge", n_experts=3, horizon=10, num_envs=2, seed=0)
    obs = np.zeros((2, 3))
    agent.predict(obs, episode_start=np.array([True, True]))
    agent.predict(obs, episode_start=np.array([False, False]))
    with pytest.raises(ValueError, match=r"episode_start: runs \[1\] restarted alone at round 2"):
        agent.predict(obs, episode_start=np.array([False, True]))


def test_agent_resets_itself_after_its_horizon():
    agent = agents.make("hedge", n_experts=3, horizon=2, seed=0)
    for _ in range(2):
        agent.predict(np.zeros(3))
    assert agent.t == 2
    agent.predict(np.zeros(3))  # the third call starts the next episode
    assert agent.t == 1


def test_adapter_rejects_non_vector_env_and_uneven_options():
    with pytest.raises(TypeError, match="env must be a Gymnasium VectorEnv"):
        SB3VecEnv(gym.make("DPExperts-Shift-v0"))
    venv = make_sb3_vec_env("DPExperts-Shift-v0", num_envs=2, horizon=H)
    assert venv.get_attr("n_experts") == [10, 10]
    venv.set_options([{}, {"neighbor": {"round": 1, "loss": np.zeros(10)}}])
    with pytest.raises(ValueError, match="options must be the same"):
        venv.reset()


def test_bandit_agents_evaluate_on_the_adapter_with_dict_observations():
    venv = VecMonitor(make_sb3_vec_env("DPExperts-BanditAdvice-v0", num_envs=2, horizon=H))
    venv.seed(0)
    agent = agents.make("exp4", env=venv, seed=0)
    rewards, lengths = evaluate_policy(agent, venv, n_eval_episodes=3, return_episode_rewards=True)
    assert lengths == [H] * 3 and all(-H <= r <= 0 for r in rewards)


def _split_one_by_one(info, b):
    """The adapter's split as first written: each run's value read alone (the reference)."""
    out = [{} for _ in range(b)]
    for key, values in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        arr = np.asarray(values)
        for i in range(b):
            if mask is None or mask[i]:
                out[i][key] = arr[i].item() if arr[i].ndim == 0 else arr[i]
    return out


def test_split_info_reads_whole_rows_as_each_run_alone():
    """The split reads a numeric (B,) value with ``tolist`` at once: the same Python scalars,
    type and bits, as each run's ``item()`` (-0.0, NaN, float32, ints past 2^53, bools,
    complex); partly masked keys, a list mask, (B, N) rows and strings keep the run by run
    path. Mutant: a split writing every scalar as ``float`` is caught (types differ)."""
    from dp_experts_env import sb3

    b = 3
    venv = make_sb3_vec_env("DPExperts-Shift-v0", num_envs=b, horizon=H)
    nan_payload = np.array([0x7FF8000000000123], dtype=np.int64).view(np.float64)[0]
    info = {
        "f8": np.array([-0.0, nan_payload, 1e-310]),
        "f4": np.array([0.1, -2.5, np.inf], dtype=np.float32),
        "i8": np.array([2**53 + 1, -(2**62), 0]),
        "u1": np.array([0, 255, 7], dtype=np.uint8),
        "flag": np.array([True, False, True]),
        "z": np.array([1 + 2j, -0.0j, 3j]),
        "list": [1.5, 2.5, 3.5],
        "masked": np.array([1.0, 2.0, 3.0]),
        "_masked": np.array([True, False, True]),
        "by_list": np.array([4, 5, 6]),
        "_by_list": [True, True, False],
        "rows": np.arange(6.0).reshape(b, 2),
        "names": np.array(["a", "bb", "c"]),
        "all_on": np.array([7.0, 8.0, 9.0]),
        "_all_on": np.ones(b, dtype=bool),
    }
    got, want = venv._split_info(info), _split_one_by_one(info, b)
    assert [sorted(r) for r in got] == [sorted(r) for r in want]
    for run_got, run_want in zip(got, want, strict=True):
        for key, value in run_want.items():
            mine = run_got[key]
            assert type(mine) is type(value), (key, type(mine), type(value))
            if isinstance(value, np.ndarray):
                assert mine.tobytes() == value.tobytes() and mine.dtype == value.dtype
            elif isinstance(value, (float, complex)):
                assert np.array(mine).tobytes() == np.array(value).tobytes(), key
            else:
                assert mine == value, key
    assert sb3._truncated_only(np.array([True, False, True]), np.array([True, True, False]), b) == [
        False,
        True,
        False,
    ]
    assert sb3._truncated_only([False, True, False], [True, True, True], b) == [True, False, True]

    def as_floats(info):  # the mutant: every scalar a float
        return [{k: float(v) for k, v in run.items()} for run in _split_one_by_one(info, b)]

    plain = {k: info[k] for k in ("i8", "flag")}
    assert [{k: type(v) for k, v in r.items()} for r in venv._split_info(plain)] != [
        {k: type(v) for k, v in r.items()} for r in as_floats(plain)
    ]
