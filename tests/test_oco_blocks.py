"""OCO block steps: K rounds of an oblivious OCO game at once equal K single steps, bit for bit.

``OCOCore.next_block`` / ``step_block`` against ``step`` with the same points (every oblivious
family, box and ball, uneven block sizes), the adaptive family refused, misuse refused; and the
episode loop's curves in blocks against the per-round loop (``DP_EXPERTS_NO_JIT=1``) for OCO
learners.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import use_jit_path

from dp_experts_env.evaluation.episode import play_shared, uses_blocks

HORIZON = 23
BLOCKS = (1, 4, 7, 2, 9)  # uneven, the last one cut at the horizon
FAMILIES = ["stochastic", "shifting", "rademacher", "anti_ftl", "replay"]


def _env(family: str, body: str, runs: int = 3, horizon: int = HORIZON):
    kwargs: dict = {"family": family, "body": body}
    if family == "replay":
        rng = np.random.default_rng(4)
        g = rng.uniform(-1, 1, (horizon, 3))
        kwargs["gradients"] = g / np.linalg.norm(g, axis=1, keepdims=True)
    else:
        kwargs.update(horizon=horizon, dim=3)
    return gym.make_vec(
        "DPExperts-OCO-v0", num_envs=runs, vectorization_mode="vector_entry_point", **kwargs
    )


def _same(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("body", ["box", "ball"])
@pytest.mark.parametrize("family", FAMILIES)
def test_oco_blocks_equal_single_steps(family, body):
    single, block = _env(family, body), _env(family, body)
    # Points beyond the ball (projected) and float32 ones, as learners return them.
    points = np.random.default_rng(1).uniform(-1, 1, (HORIZON, 3, 3)).astype(np.float32)
    assert _same(single.reset(seed=[3, 4, 5])[0], block.reset(seed=[3, 4, 5])[0])
    t, sizes = 0, iter(BLOCKS * 5)
    while t < HORIZON:
        grads = block.unwrapped.next_block(next(sizes))
        k = len(grads)
        rewards = []
        for i in range(k):
            assert _same(grads[i], single.unwrapped.core._current)
            obs_s, reward, term_s, trunc_s, info_s = single.step(points[t + i])
            rewards.append(reward)
        obs_b, reward_b, term_b, trunc_b, info_b = block.step_block(points[t : t + k])
        assert _same(np.array(rewards), reward_b)
        assert _same(obs_s, obs_b) and _same(info_s, info_b)
        assert _same(term_s, term_b) and _same(trunc_s, trunc_b)
        t += k
    assert term_b.all()
    if family == "shifting" and body == "box":
        assert "dynamic_regret" in info_b  # the S-switch recursion ran in the block


def test_oco_block_misuse_is_refused():
    adaptive = _env("adaptive", "box")
    adaptive.reset(seed=1)
    assert not adaptive.unwrapped.core.supports_blocks
    with pytest.raises(ValueError, match="reacts to the points played"):
        adaptive.unwrapped.next_block(2)
    env = _env("stochastic", "box")
    env.reset(seed=1)
    with pytest.raises(RuntimeError, match="no block is pending"):
        env.unwrapped.step_block(np.zeros((1, 3, 3)))
    env.unwrapped.next_block(3)
    with pytest.raises(RuntimeError, match="a block is pending"):
        env.step(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"shape \(3, 3, 3\)"):
        env.unwrapped.step_block(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="coordinates must lie in"):
        env.unwrapped.step_block(np.full((3, 3, 3), 2.0))
    with pytest.raises(ValueError, match="positive integer"):
        _env("stochastic", "box").unwrapped.core.next_block(0)


def _curves(name: str, family: str, body: str, jit: bool, monkeypatch) -> dict:
    import agents

    use_jit_path("compiled" if jit else "numpy", monkeypatch)
    env = _env(family, body, runs=4, horizon=90)
    assert uses_blocks(env) == jit
    params = {} if name in ("ogd", "lazy-ftrl-oco") else {"epsilon": 1.0}
    agent = agents.make(name, env=env, seed=[1, 2, 3, 4], **params)
    return play_shared(env, [agent], [5, 6, 7, 8], np.array([1, 2, 3, 40, 41, 89, 90]))


@pytest.mark.parametrize(
    ("name", "family", "body"),
    [
        ("ogd", "stochastic", "ball"),
        ("p-comw", "shifting", "box"),
        ("dp-ftrl-oco", "rademacher", "box"),
        ("lazy-ftrl-oco", "anti_ftl", "ball"),
    ],
)
def test_oco_episode_curves_are_the_same_in_blocks(name, family, body, monkeypatch):
    pytest.importorskip("numba")
    blocks = _curves(name, family, body, True, monkeypatch)
    rounds = _curves(name, family, body, False, monkeypatch)
    assert blocks.keys() == rounds.keys() and "static_regret" in blocks
    for key in blocks:
        assert blocks[key].tobytes() == rounds[key].tobytes(), key


def test_adaptive_oco_plays_per_round(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    assert not uses_blocks(_env("adaptive", "box"))


class _LeanAgainst:
    """A test OCO learner: play -R sign of the last gradient seen, with a play_block hook.

    ``act`` is the reference; ``play_block`` computes the same K points at once (a learner's
    block hook must equal K ``act`` calls), and counts its calls so the test sees it was used.
    """

    def __init__(self, num_envs: int, dim: int, radius: float) -> None:
        self.num_envs, self.dim, self.radius = num_envs, dim, radius
        self.block_calls = 0
        self.seen = 0

    def reset(self) -> None:
        self.block_calls = self.seen = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        self.seen += 1
        return -self.radius * np.sign(np.asarray(obs)) * 0.5

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        self.block_calls += 1
        self.seen += len(obs)
        return -self.radius * np.sign(obs) * 0.5


def _hook_curves(use_hook: bool, monkeypatch) -> tuple[dict, _LeanAgainst]:
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    env = _env("shifting", "box", runs=2, horizon=50)
    agent = _LeanAgainst(2, 3, float(env.unwrapped.radius))
    if not use_hook:
        monkeypatch.setattr(agent, "play_block", None)
    curves = play_shared(env, [agent], [3, 4], np.array([1, 7, 30, 50]))
    return curves, agent


def test_an_oco_play_block_hook_is_used_and_equals_act(monkeypatch):
    pytest.importorskip("numba")
    hooked, agent = _hook_curves(True, monkeypatch)
    plain, other = _hook_curves(False, monkeypatch)
    assert agent.block_calls == 4 and other.block_calls == 0  # one call per recorded block
    assert agent.seen == other.seen == 50
    assert hooked.keys() == plain.keys()
    for key in hooked:
        assert hooked[key].tobytes() == plain[key].tobytes(), key
