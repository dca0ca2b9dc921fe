"""The agent contract (act/predict/reset, PrivacyClaim) and the registry (make/available/spec)."""

import math

import gymnasium as gym
import numpy as np
import pytest

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents import registry
from agents.base import Agent, PrivacyClaim, no_privacy

BASELINES = {
    "uniform": "any",
    "follow-the-leader": "full",
    "hedge": "full",
    "fixed-share": "full",
    "shrinking-dartboard": "full",
    "exp3": "bandit",
    "tsallis-inf": "bandit",
    "ftpl-gr": "bandit",
    "exp4": "bandit",
}


# ----------------------------------------------------------------------------- PrivacyClaim
def test_privacy_claim_validation_and_summary():
    claim = PrivacyClaim(epsilon=1.0, delta=1e-6, accountant="basic composition")
    assert claim.is_private and claim.summary().startswith("(1, 1e-06)-DP central")
    assert "certified [basic composition; noise: none]" in claim.summary()
    uncertified = PrivacyClaim(epsilon=0.5, certified=False).summary()
    assert uncertified.startswith("NOT CERTIFIED: states 0.5-DP")
    none = no_privacy("bandit")
    assert not none.is_private and none.summary() == "not private"
    assert none.feedback == "bandit" and none.model == "none"
    for bad, match in [
        ({"epsilon": 0.0}, "epsilon must be > 0"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta must lie in"),
        ({"epsilon": 1.0, "feedback": "partial"}, "feedback must be one of"),
        ({"epsilon": 1.0, "model": "shuffle"}, "model must be one of"),
        ({"epsilon": 1.0, "holds_against": "nobody"}, "holds_against must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            PrivacyClaim(**bad)
    with pytest.raises(AttributeError):
        claim.epsilon = 2.0  # frozen


# ----------------------------------------------------------------------------- act / predict
class Recorder(Agent):
    """A minimal learner that records what the hooks receive."""

    def __init__(self, n_experts, horizon, **kw):
        super().__init__(n_experts, horizon, **kw)
        self.reset(kw.get("seed"))

    @property
    def privacy(self):
        return no_privacy()

    def _init_state(self):
        self.seen = []

    def _learn(self, obs):
        self.seen.append(obs.copy())

    def _choose(self, obs):
        return self.rng.integers(self.n_experts)


def test_act_learns_from_the_second_call_and_counts_rounds():
    agent = Recorder(3, 10, num_envs=2, seed=0)
    agent.act(np.full((2, 3), 0.5))  # the reset observation: nothing learned
    assert agent.seen == [] and agent.t == 1
    agent.act(np.ones((2, 3)))
    assert len(agent.seen) == 1 and agent.t == 2
    np.testing.assert_array_equal(agent.seen[0], np.ones((2, 3)))


def test_single_obs_returns_int_and_batch_returns_array():
    single = agents.make("hedge", n_experts=4, horizon=10, seed=0)
    assert isinstance(single.act(np.zeros(4)), int)
    batch = agents.make("hedge", n_experts=4, horizon=10, num_envs=3, seed=0)
    actions = batch.act(np.zeros((3, 4)))
    assert actions.shape == (3,) and actions.dtype == np.int64


def test_predict_follows_sb3_and_resets_on_episode_start():
    agent = agents.make("hedge", n_experts=3, horizon=10, num_envs=2, seed=0)
    obs = np.zeros((2, 3))
    actions, state = agent.predict(obs, state="s", episode_start=np.array([True, True]))
    assert actions.shape == (2,) and state == "s" and agent.t == 1
    agent.predict(np.ones((2, 3)), episode_start=np.array([False, False]))
    assert agent.t == 2
    agent.predict(obs, episode_start=np.array([True, True]))
    assert agent.t == 1 and np.all(agent.cum_loss == 0)
    # A flag left True (evaluate_policy's finished sub-envs) is stale; one turning True in
    # mid-episode is a run restarting alone, which the shared round clock cannot follow.
    agent.predict(obs, episode_start=np.array([True, False]))
    assert agent.t == 2
    agent.predict(obs, episode_start=np.array([False, False]))
    with pytest.raises(ValueError, match="restarted alone"):
        agent.predict(obs, episode_start=np.array([True, False]))
    one = agents.make("hedge", n_experts=3, horizon=10, seed=0)
    actions, _ = one.predict(np.zeros(3))
    assert actions.shape == (1,)  # predict always returns an array


def test_reset_without_seed_continues_the_streams():
    agent = agents.make("uniform", n_experts=50, horizon=10, seed=3)
    first = [agent.act(np.zeros(50)) for _ in range(5)]
    agent.reset()
    second = [agent.act(np.zeros(50)) for _ in range(5)]
    agent.reset(seed=3)
    third = [agent.act(np.zeros(50)) for _ in range(5)]
    assert first != second and first == third


def test_seed_sequences_and_bad_seeds():
    a = agents.make("uniform", n_experts=9, horizon=5, num_envs=2, seed=[4, 9])
    b = agents.make("uniform", n_experts=9, horizon=5, num_envs=1, seed=9)
    assert a.act(np.zeros((2, 9)))[1] == b.act(np.zeros(9))
    with pytest.raises(ValueError, match="one seed per run"):
        agents.make("uniform", n_experts=3, horizon=5, num_envs=2, seed=[1])
    with pytest.raises(ValueError, match="non-negative"):
        agents.make("uniform", n_experts=3, horizon=5, seed=-1)
    with pytest.raises(TypeError, match="seed must be"):
        agents.make("uniform", n_experts=3, horizon=5, seed=1.5)


# ----------------------------------------------------------------------------- registry
def test_available_lists_every_baseline_with_feedback_and_claim():
    listed = {row["name"]: row for row in agents.available()}
    for name, feedback in BASELINES.items():
        row = listed[name]
        assert row["feedback"] == feedback and row["private"] is False
        assert row["claim"] == "none (not private)" and row["summary"]
    assert set(next(iter(listed.values()))) == {
        "name", "feedback", "private", "claim", "summary", "source", "reference"
    }


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_claim_matches_its_feedback(name):
    agent = agents.make(name, n_experts=3, horizon=10, n_arms=3, seed=0)
    # "any" learners (uniform) report the env's feedback: bandit here, since n_arms is given.
    expected = "bandit" if BASELINES[name] == "any" else BASELINES[name]
    assert agent.privacy == no_privacy(expected)
    assert agents.spec(name).cls is type(agent) and agent.name == name


def test_unknown_and_malformed_names():
    with pytest.raises(
        ValueError, match=r"unknown agent 'hegde' \(did you mean 'hedge'\?\); available: \["
    ):
        agents.make("hegde", n_experts=2, horizon=5)
    with pytest.raises(TypeError, match="agent name must be a string"):
        agents.spec(3)


def test_register_refuses_duplicates(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    with pytest.raises(ValueError, match="already registered"):
        registry.register("hedge", private=False, summary="again")(Recorder)


def test_make_reads_the_game_from_single_and_native_vector_envs():
    env = gym.make("DPExperts-Shift-v0", n_experts=6, horizon=40, n_switches=3)
    agent = agents.make("fixed-share", env=env, seed=0)
    assert (agent.n_experts, agent.horizon, agent.num_envs, agent.n_switches) == (6, 40, 1, 3)
    venv = gym.make_vec(
        "DPExperts-BanditAdvice-v0",
        num_envs=3,
        vectorization_mode="vector_entry_point",
        n_experts=7,
        n_arms=3,
        horizon=30,
    )
    bandit = agents.make("exp4", env=venv, seed=0)
    assert (bandit.n_experts, bandit.n_arms, bandit.horizon, bandit.num_envs) == (7, 3, 30, 3)
    with pytest.raises(ValueError, match="num_envs=2 contradicts the env's num_envs=3"):
        agents.make("exp4", env=venv, num_envs=2)


def test_make_reads_wrapper_vector_envs():
    sync = gym.vector.SyncVectorEnv(
        [lambda: gym.make("DPExperts-Shift-v0", n_experts=5, horizon=20) for _ in range(2)]
    )
    agent = agents.make("hedge", env=sync, seed=0)
    assert (agent.n_experts, agent.horizon, agent.num_envs) == (5, 20, 2)
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    dummy = DummyVecEnv([lambda: gym.make("DPExperts-BanditAdvice-v0", horizon=20)] * 2)
    bandit = agents.make("exp3", env=dummy, seed=0)
    assert (bandit.num_envs, bandit.n_arms, bandit.horizon) == (2, 5, 20)


def test_make_refuses_feedback_mismatch_and_foreign_envs():
    bandit_env = gym.make("DPExperts-BanditAdvice-v0")
    with pytest.raises(ValueError, match="'hedge' needs full-information feedback but the env"):
        agents.make("hedge", env=bandit_env)
    full_env = gym.make("DPExperts-Shift-v0")
    with pytest.raises(ValueError, match="'exp3' needs bandit-information feedback"):
        agents.make("exp3", env=full_env)
    with pytest.raises(TypeError, match="env must be a dp-experts-env environment"):
        agents.make("hedge", env=gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="n_experts=4 contradicts the env's n_experts=10"):
        agents.make("hedge", env=full_env, n_experts=4)
    assert math.isinf(agents.make("hedge", env=full_env).privacy.epsilon)


# ----------------------------------------------------------------------------- advice checks
def _bandit_obs(advice, b, last_action=None):
    last = np.zeros(b, np.int64) if last_action is None else last_action
    return {"advice": advice, "last_action": last, "last_loss": np.zeros(b)}


def test_advice_checks_refuse_bad_values_in_every_layout():
    k, b = 3, 4
    agent = agents.make("exp4", n_experts=k, n_arms=k, horizon=50, num_envs=b, seed=0)
    eye = np.eye(k).reshape(k * k)
    shared = np.broadcast_to(eye, (b, k * k))  # read-only, stride 0 over runs
    agent.act(_bandit_obs(shared, b))
    for bad, match in [(np.full(k * k, np.nan), "finite"), (-eye, "distributions"),
                       (2 * eye, "distributions"), (np.full(k * k, np.inf), "distributions")]:
        for view in (np.broadcast_to(bad, (b, k * k)), np.tile(bad, (b, 1))):
            with pytest.raises(ValueError, match=match):
                agent.act(_bandit_obs(view, b))
    # One bad run among good ones (a writable array is always checked in full).
    mixed = np.tile(eye, (b, 1))
    mixed[2, 0] = 0.5
    with pytest.raises(ValueError, match="distributions"):
        agent.act(_bandit_obs(mixed, b))


def test_shared_read_only_advice_is_checked_once_and_writable_memory_always():
    k, b = 4, 3
    agent = agents.make("exp3", n_experts=k, n_arms=k, horizon=50, num_envs=b, seed=0)
    eye = np.eye(k).reshape(k * k)
    eye.setflags(write=False)
    agent.act(_bandit_obs(np.broadcast_to(eye, (b, k * k)), b, agent.last_actions))
    assert agent._trusted_advice[0].base is not None  # remembered: the same memory is trusted
    agent.act(_bandit_obs(np.broadcast_to(eye, (b, k * k)), b, agent.last_actions))
    # A writable broadcast view is never trusted: its memory may change between rounds.
    writable = np.eye(k).reshape(k * k)
    view = np.lib.stride_tricks.as_strided(writable, (b, k * k), (0, 8), writeable=True)
    agent.act(_bandit_obs(view, b, agent.last_actions))
    writable[1] = 0.5
    with pytest.raises(ValueError, match="distributions"):
        agent.act(_bandit_obs(view, b, agent.last_actions))


def test_identity_advice_check_does_not_allocate_per_run():
    # Bandit-v0's advice is a read-only (B, K*K) broadcast of one identity: checking it must
    # not build (B, K, K) temporaries (8.7 GB at K = 1000, B = 256 before).
    import tracemalloc

    k, b = 300, 64
    env = gym.make_vec("DPExperts-Bandit-v0", num_envs=b, vectorization_mode="vector_entry_point",
                       n_arms=k, horizon=20)  # fmt: skip
    agent = agents.make("exp3", env=env, seed=0)
    obs, _ = env.reset(seed=0)
    agent.act(obs)
    obs, *_ = env.step(agent.last_actions)
    tracemalloc.start()
    agent.act(obs)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < b * k * k // 4  # a (B, K, K) bool array alone is 4x this
