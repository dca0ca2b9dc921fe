"""DPExperts-Attack-v0: the learned adversary's env (checkers, protocol, known answers)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import dp_experts_env  # noqa: F401 - registers the ids
from dp_experts_env.attack.env import (
    ATTACK_ID,
    AttackCore,
    AttackEnv,
    AttackVectorEnv,
    losses_to_actions,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"oblivious": True},
        {"learner": "follow-the-leader", "n_switches": 2},
        {"learner": "dp-ftrl-tree", "epsilon": 1.0, "n_experts": 4},
        {"learner": "exp3", "feedback": "bandit", "n_experts": 3, "reward": "expected"},
    ],
)
def test_both_checkers_pass_silently(kwargs):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(gym.make(ATTACK_ID, horizon=30, **kwargs).unwrapped)
        sb3_checker.check_env(gym.make(ATTACK_ID, horizon=30, **kwargs))


def test_importing_the_package_does_not_import_the_learners():
    code = "import sys, dp_experts_env; print('agents' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_native_vector_env_through_make_vec():
    venv = gym.make_vec(ATTACK_ID, num_envs=3, vectorization_mode="vector_entry_point", horizon=5)
    assert isinstance(venv.unwrapped, AttackVectorEnv)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (3, 1 + 6 * 2) and obs.dtype == np.float32


def _play_single(kwargs, actions, seed):
    env = AttackEnv(**kwargs)
    obs, _ = env.reset(seed=seed)
    rewards, observations = [], [obs]
    for a in actions:
        obs, r, terminated, truncated, info = env.step(a)
        rewards.append(r)
        observations.append(obs)
    assert terminated and not truncated
    return np.array(rewards), np.array(observations), info


def test_return_is_the_final_regret_and_vector_equals_single():
    kwargs = {"learner": "hedge", "n_experts": 3, "horizon": 25}
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (2, 25, 3)).astype(np.float32)
    venv = AttackVectorEnv(2, **kwargs)
    obs, _ = venv.reset(seed=[11, 12])
    total = np.zeros(2)
    for t in range(25):
        obs, r, terminated, _, info = venv.step(actions[:, t])
        total += r
    assert terminated.all()
    np.testing.assert_allclose(total, info["static_regret"], atol=1e-9)
    for b, seed in enumerate((11, 12)):
        rewards, _, single_info = _play_single(kwargs, actions[b], seed)
        assert rewards.sum() == pytest.approx(single_info["static_regret"], abs=1e-9)
        assert single_info["static_regret"] == pytest.approx(info["static_regret"][b], abs=1e-12)
    # NEXT_STEP autoreset: the step after the last round starts the next episode.
    obs, r, terminated, _, _ = venv.step(actions[:, 0])
    assert not terminated.any() and (r == 0).all() and obs[0, 0] == 0.0


def test_known_answer_alternating_trap_against_follow_the_leader():
    # 0.5/0 first, then 1 on the leader: FTL pays 1 every round after the first; the best
    # expert pays about T / 2.
    horizon = 40
    env = AttackEnv(learner="follow-the-leader", horizon=horizon)
    obs, _ = env.reset(seed=3)
    total = 0.0
    for t in range(horizon):
        leaders = obs[1:3]
        losses = np.array([0.5, 0.0]) if t == 0 else leaders.astype(float)
        obs, r, _, _, info = env.step(losses_to_actions(losses).astype(np.float32))
        total += r
    # FTL pays 0 or 0.5 in round 1 (uniform tie-break), then 1 in each of the 39 others; the
    # leader alternates, so expert 1 pays 20 (rounds 2, 4, ..., 40) and expert 0 0.5 + 19.
    assert info["static_regret"] == pytest.approx(total)
    assert total in (pytest.approx(39.0 - 19.5), pytest.approx(39.5 - 19.5))


def test_oblivious_observation_ignores_the_learner():
    kwargs = {"oblivious": True, "n_experts": 3, "horizon": 15}
    actions = np.random.default_rng(1).uniform(-1, 1, (15, 3)).astype(np.float32)
    _, obs_a, _ = _play_single({**kwargs, "learner": "hedge"}, actions, 0)
    _, obs_b, _ = _play_single({**kwargs, "learner": "follow-the-leader"}, actions, 5)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert obs_a.shape[1] == 1 + 3 * 3


def test_adaptive_observation_shows_past_actions_never_the_current_one():
    core = AttackCore(1, learner="follow-the-leader", n_experts=2, horizon=10)
    obs = core.reset([0])
    assert obs[0, 7:9].sum() == 0  # no last action before round 1
    current = int(core.action[0])
    obs, _, info = core.step(np.array([[1.0, -1.0]]))  # losses (1, 0)
    assert int(info["learner_action"][0]) == current
    last = obs[0, 7:9]
    assert last[current] == 1.0 and last.sum() == 1.0
    # after (1, 0) FTL's next action is expert 1; the observation's leader says so, but the
    # learner's chosen action itself is not part of the observation (only the past one).
    assert int(core.action[0]) == 1 and obs[0, 1:3].tolist() == [0.0, 1.0]


def test_dynamic_reward_uses_the_switch_budget():
    env = AttackEnv(learner="hedge", horizon=20, n_switches=3)
    env.reset(seed=0)
    total = 0.0
    for t in range(20):
        losses = np.array([1.0, 0.0]) if (t // 5) % 2 else np.array([0.0, 1.0])
        _, r, _, _, info = env.step(losses_to_actions(losses))
        total += r
    assert total == pytest.approx(info["dynamic_regret"])
    assert info["dynamic_regret"] > info["static_regret"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"learner": "nope"}, "unknown agent"),
        ({"learner": "exp3"}, "needs bandit feedback"),
        ({"learner": "hedge", "feedback": "bandit"}, "needs full feedback"),
        ({"learner": "hedge", "epsilon": 1.0}, "epsilon applies to private learners"),
        ({"learner": "dp-ftrl-tree", "epsilon": -1.0}, "epsilon must be a number > 0"),
        ({"n_experts": 1}, "n_experts must be >= 2"),
        ({"horizon": 0}, "horizon must be >= 1"),
        ({"n_switches": -1}, "n_switches must be >= 0"),
        ({"learner_params": {"seed": 1}}, "learner_params must not set 'seed'"),
    ],
)
def test_bad_keywords_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttackEnv(**kwargs)


def test_non_finite_actions_are_refused():
    env = AttackEnv(horizon=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan, 0.0], dtype=np.float32))


def test_expected_reward_known_answer_with_the_uniform_learner():
    # The uniform learner's law is 1/N everywhere: the expected return is
    # sum_t mean(l_t) - min_j L_j, while info keeps the realized regret.
    losses = np.random.default_rng(4).uniform(0, 1, (30, 3))
    env = AttackEnv(learner="uniform", n_experts=3, horizon=30, reward="expected")
    env.reset(seed=0)
    total, realized = 0.0, 0.0
    for row in losses:
        _, r, _, _, info = env.step(losses_to_actions(row).astype(np.float32))
        total += r
        realized += info["learner_loss"]
    least = losses.astype(np.float32).astype(np.float64).sum(axis=0).min()
    expected = losses.astype(np.float32).astype(np.float64).mean(axis=1).sum() - least
    assert total == pytest.approx(expected, abs=1e-5)
    assert info["static_regret"] == pytest.approx(realized - least, abs=1e-5)


def test_expected_reward_needs_the_learners_law():
    with pytest.raises(ValueError, match="action_distribution"):
        AttackEnv(learner="limited-updates", reward="expected")
    with pytest.raises(ValueError, match="reward must be one of"):
        AttackEnv(reward="mean")


def test_bandit_feedback_learner_sees_only_the_played_arm():
    # EXP3 is fed the played arm's loss: the same run against the same losses gives the same
    # actions as EXP3 on DPExperts-Bandit-v0 replaying those losses.
    import agents

    # Multiples of 1/8: exact through the action encoding 2 l - 1 in float32.
    losses = (np.random.default_rng(2).integers(0, 9, (40, 3)) / 8).astype(np.float32)
    env = AttackEnv(learner="exp3", feedback="bandit", n_experts=3, horizon=40)
    env.reset(seed=7)
    ours = []
    for row in losses:
        _, _, _, _, info = env.step(losses_to_actions(row).astype(np.float32))
        ours.append(info["learner_action"])
    replay = gym.make(
        "DPExperts-Bandit-v0", family="replay", losses=losses.astype(np.float64), n_switches=0
    )
    exp3 = agents.make("exp3", env=replay, seed=7)
    obs, _ = replay.reset(seed=0)
    theirs = []
    for _ in range(40):
        action = exp3.act(obs)
        theirs.append(action)
        obs, _, _, _, replay_info = replay.step(action)
    assert ours == theirs
    assert info["static_regret"] == pytest.approx(replay_info["static_regret"], abs=1e-12)
