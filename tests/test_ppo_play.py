"""The PPO baseline's play reads SB3's policy without its distribution objects, same floats."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

import agents  # noqa: E402
from agents.ppo import policy_log_probs  # noqa: E402

ENV_KW = {"horizon": 60, "n_experts": 5}


@pytest.fixture(scope="module")
def agent():
    torch.set_num_threads(1)
    return agents.make(
        "ppo", n_experts=5, horizon=60, env_id="DPExperts-Shift-v0", env_kwargs=ENV_KW,
        timesteps=256, num_envs=4, seed=0,
    )


def _observations(agent, rows: int) -> torch.Tensor:
    rng = np.random.default_rng(3)
    space = agent.train().policy.observation_space
    obs = rng.uniform(0.0, 1.0, (rows, *space.shape))
    obs[::7] = 0.0  # the first round's all-zero features
    return torch.as_tensor(obs, dtype=torch.float32)


def test_log_probs_equal_sb3s_distribution_bit_for_bit(agent):
    policy = agent.train().policy
    for rows in (1, 4, 37):
        obs = _observations(agent, rows)
        with torch.no_grad():
            ours = policy_log_probs(policy, obs).numpy()
            theirs = policy.get_distribution(obs).distribution.logits.numpy()
        assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()


def test_a_missing_normalisation_is_caught(agent):
    """Control: the raw actor output (no logsumexp) is not what SB3 holds."""
    policy = agent.train().policy
    obs = _observations(agent, 8)
    with torch.no_grad():
        raw = policy.action_net(policy.mlp_extractor.forward_actor(obs)).numpy()
        theirs = policy.get_distribution(obs).distribution.logits.numpy()
    assert raw.tobytes() != theirs.tobytes()


def test_actions_equal_the_distribution_path(agent, monkeypatch):
    """Episodes played through the agent equal those played through SB3's distribution."""
    import agents.ppo as ppo

    def through_sb3(policy, obs):
        return policy.get_distribution(obs).distribution.logits

    rng = np.random.default_rng(5)
    losses = rng.uniform(0.0, 1.0, (60, 4, 5))

    def play():
        agent.reset(11)
        return [agent.act(losses[t]) for t in range(60)]

    ours = play()
    monkeypatch.setattr(ppo, "policy_log_probs", through_sb3)
    assert all(np.array_equal(a, b) for a, b in zip(ours, play(), strict=True))


def test_nan_logits_are_refused_as_sb3_refuses_them(agent):
    """A diverged policy (NaN weights): SB3's distribution raises; so must the direct read."""
    import copy

    policy = copy.deepcopy(agent.train().policy)
    with torch.no_grad():
        for p in policy.mlp_extractor.score.parameters():
            p.fill_(float("nan"))
    obs = _observations(agent, 3)
    with torch.no_grad(), pytest.raises(ValueError):
        policy.get_distribution(obs)
    with torch.no_grad(), pytest.raises(ValueError, match="NaN"):
        policy_log_probs(policy, obs)

