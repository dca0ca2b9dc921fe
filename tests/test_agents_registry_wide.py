"""Every registered learner on every registered env id it can play (new ones are covered
automatically): the loop runs, actions are valid, the claim is well formed, and a batch of B runs
equals B single runs seeded s+b."""

import math

import gymnasium as gym
import numpy as np
import pytest

import agents
import dp_experts_env
from dp_experts_env.registration import ENVS

HORIZON = 40
SIZES = {"full": {"n_experts": 4}, "bandit": {"n_arms": 3}, "oco": {"dim": 3}}
# "any" learners play Discrete actions, so they never meet the continuous-action OCO env.
PAIRS = [
    (a["name"], e.id)
    for a in agents.available()
    for e in ENVS
    if a["feedback"] == e.feedback or (a["feedback"] == "any" and e.feedback != "oco")
]


def make_env(env_id, num_envs=None):
    kwargs = {"horizon": HORIZON, **SIZES[dp_experts_env.env_entry(env_id).feedback]}
    if env_id == "DPExperts-BanditAdvice-v0":
        kwargs["n_experts"] = 6
    if num_envs is None:
        return gym.make(env_id, **kwargs)
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )


def play(env, agent, seed):
    obs, _ = env.reset(seed=seed)
    actions, losses = [], []
    for _ in range(HORIZON):
        action = agent.act(obs)
        actions.append(np.copy(action))
        obs, reward, terminated, truncated, info = env.step(action)
        losses.append(-np.asarray(reward, dtype=float))
        if np.all(terminated):
            break
    return np.array(actions), np.array(losses), info


def test_every_agent_is_paired_with_some_env():
    names = {a["name"] for a in agents.available()}
    assert names == {name for name, _ in PAIRS}


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_agent_plays_every_compatible_env(name, env_id):
    single = make_env(env_id)
    private = agents.spec(name).private
    extra = {"epsilon": 1.0} if private else {}
    if name == "ppo":
        extra["timesteps"] = 256  # the RL baseline trains first: keep it short here
    agent = agents.make(name, env=single, seed=3, **extra)
    claim = agent.privacy
    oco = single.unwrapped.feedback == "oco"  # continuous actions, full-information gradients
    assert claim.feedback == ("full" if oco else single.unwrapped.feedback)
    assert claim.is_private == private
    assert (claim.model == "none") == (not private)
    assert math.isinf(claim.epsilon) or claim.epsilon <= 1.0 + 1e-12
    if private:
        assert claim.accountant, "a private claim must name its accountant"
    actions, losses, info = play(single, agent, seed=11)
    assert info["round"] == HORIZON
    if oco:
        assert actions.dtype.kind == "f" and actions.shape == (HORIZON, single.unwrapped.dim)
        assert np.all(np.abs(actions) <= single.unwrapped.radius)
        assert np.isfinite(info["static_regret"])
    else:
        limit = single.unwrapped.n_arms or single.unwrapped.n_experts
        assert actions.dtype.kind == "i" and actions.min() >= 0 and actions.max() < limit
        assert np.isfinite(info["dynamic_regret"])

    # Batch of 3 == three single runs seeded 3, 4, 5 on env seeds 11, 12, 13.
    venv = make_env(env_id, num_envs=3)
    batched = agents.make(name, env=venv, seed=3, **extra)
    b_actions, _, _ = play(venv, batched, seed=11)
    for b in range(3):
        solo = agents.make(name, env=single, seed=3 + b, **extra)
        s_actions, _, _ = play(single, solo, seed=11 + b)
        np.testing.assert_array_equal(b_actions[:, b].reshape(-1), s_actions.reshape(-1))


def test_every_agent_has_a_row_in_the_algorithms_table():
    from pathlib import Path

    table = (Path(__file__).resolve().parents[1] / "docs" / "algorithms.md").read_text()
    missing = [a["name"] for a in agents.available() if f"| `{a['name']}` |" not in table]
    assert not missing, f"docs/algorithms.md lacks rows for {missing}"


@pytest.mark.parametrize("name", [a["name"] for a in agents.available()])
def test_every_agent_docstring_names_its_source(name):
    doc = agents.spec(name).cls.__doc__ or ""
    assert "Source" in doc or "source" in doc, f"{name}'s docstring must name its source"


@pytest.mark.parametrize(
    "name", [a["name"] for a in agents.available() if a["feedback"] == "bandit"]
)
def test_bandit_learners_refuse_advice_off_the_simplex(name):
    extra = {"epsilon": 1.0} if agents.spec(name).private else {}
    agent = agents.make(name, n_experts=3, horizon=20, n_arms=2, seed=0, **extra)
    good = {"advice": np.full(6, 0.5), "last_action": 0, "last_loss": np.zeros(1)}
    agent.act(good)
    for advice in (np.full(6, 0.7), np.tile([1.5, -0.5], 3)):
        with pytest.raises(ValueError, match="advice"):
            agent.act({**good, "advice": advice, "last_action": agent.last_actions[0]})
