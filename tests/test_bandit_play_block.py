"""The bandit block protocol: ``play_bandit_block`` equals K calls of ``act``, bit for bit.

For every learner that has ``play_bandit_block`` (the batched conversions, the batched EXP4 and
uniform play), one agent plays a synthetic episode round by round and a twin (same seed) plays it in
blocks of several sizes (one round, blocks crossing batch ends, one block for the whole
episode). The block agent's losses are NaN everywhere except at the arms the round-by-round
agent played (the protocol: a learner reads only its played arm's loss, after choosing it), so
reading anything else shows up as different actions or a refused NaN. Actions, the state
afterwards and the next random draws must be equal. At the episode level, rows equal the
per-round loop's (``DP_EXPERTS_NO_JIT=1``), and the episode really calls the block method.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import agents
from agents._bandit_block import segment_starts
from dp_experts_env import samplers
from dp_experts_env.batch_rng import BatchRNG

B, S = 3, 2  # runs of the agent, loss streams (run r plays stream ROWS[r])
ROWS = np.array([1, 0, 1])

# (name, params, N, K arms, T): batch ends inside blocks, a trailing partial batch, tau = 1.
CASES = [
    ("private-batched-exp4", {"release": "estimates", "tau": 7}, 4, 3, 60),
    ("private-batched-exp4", {"release": "estimates", "composition": "pure", "tau": 5}, 3, 4, 48),
    ("private-batched-exp4", {"release": "loss", "tau": 6}, 4, 3, 50),
    ("private-batched-exp4", {"release": "loss", "tau": 1}, 2, 3, 30),
    ("private-batched-exp4", {"epsilon": math.inf}, 3, 3, 40),
    ("private-batched-exp4", {"release": "estimates", "tau": 4, "gamma": 0.3}, 3, 3, 9),
    ("private-batched-bandit", {"tau": 7}, 2, 3, 60),
    ("private-batched-bandit", {"tau": 6, "tail": "sample", "base": "exp3"}, 2, 4, 53),
    ("private-batched-bandit", {"tau": 5, "base": "ftpl-gr"}, 2, 3, 37),
    ("private-batched-bandit", {"tau": 1}, 2, 3, 25),
    ("private-batched-bandit", {"tau": 6, "base": "ftpl-gr", "rate": "adaptive"}, 2, 3, 45),
    ("private-bandit-over-experts", {"tau": 6}, 3, 4, 50),
    ("private-bandit-over-experts", {"tau": 4, "tail": "sample", "base": "exp3"}, 3, 3, 43),
    ("private-bandit-over-experts", {"tau": 1}, 2, 3, 20),
    ("uniform", {}, 3, 4, 30),
]

BLOCKINGS = ["ones", "mixed", "whole"]


def _sizes(blocking: str, horizon: int) -> list[int]:
    if blocking == "ones":
        return [1] * horizon
    if blocking == "whole":
        return [horizon]
    out, pattern, i = [], [3, 1, 11, 5, 2, 17], 0
    while sum(out) < horizon:
        out.append(min(pattern[i % len(pattern)], horizon - sum(out)))
        i += 1
    return out


def _game(n: int, k: int, horizon: int, seed: int = 5, identity: bool = False):
    rng = np.random.default_rng(seed)
    losses = rng.random((horizon, S, k))
    if identity:
        return losses, None
    advice = rng.dirichlet(np.full(k, 0.4), size=(horizon, S, n))
    return losses, advice[:, ROWS]  # (T, B, N, K): each run its stream's advice


def _make(name: str, params: dict, n: int, k: int, horizon: int):
    params = params if name == "uniform" else {"epsilon": 1.0, **params}
    return agents.make(
        name, n_experts=n, n_arms=k, horizon=horizon, num_envs=B, seed=[4, 9, 2], **params
    )


def _obs(advice, identity_flat, t: int, last_action, last_loss) -> dict:
    adv = identity_flat if advice is None else advice[t].reshape(B, -1)
    return {"advice": adv, "last_action": last_action, "last_loss": last_loss}


def _reference(agent, losses, advice, identity_flat) -> np.ndarray:
    horizon = len(losses)
    actions = np.empty((horizon, B), dtype=np.int64)
    last_action, last_loss = np.zeros(B, dtype=np.int64), np.zeros((B, 1))
    for t in range(horizon):
        actions[t] = agent.act(_obs(advice, identity_flat, t, last_action, last_loss))
        last_action = actions[t].copy()
        last_loss = losses[t][ROWS, last_action][:, None]
    return actions


def _in_blocks(agent, losses, advice, identity_flat, sizes, poison_from) -> np.ndarray:
    """Play in blocks; every loss the reference did not read is NaN."""
    seen = np.full_like(losses, np.nan)
    steps = np.arange(len(losses))[:, None]
    seen[steps, ROWS[None, :], poison_from] = losses[steps, ROWS[None, :], poison_from]
    out, t = [], 0
    last_action, last_loss = np.zeros(B, dtype=np.int64), np.zeros((B, 1))
    for size in sizes:
        first = _obs(advice, identity_flat, t, last_action, last_loss)
        block_advice = None if advice is None else advice[t : t + size]
        chosen = agent.play_bandit_block(first, block_advice, seen[t : t + size], ROWS)
        assert chosen.shape == (size, B) and chosen.dtype == np.int64
        out.append(chosen)
        t += size
        last_action = chosen[-1].copy()
        last_loss = losses[t - 1][ROWS, last_action][:, None]
    return np.concatenate(out)


_SKIP = {"rng", "_trusted_advice", "_advice_finite", "_cache", "_seed"}


def _same_state(a, b, where: str = "agent") -> None:
    for key, value in vars(a).items():
        if key in _SKIP:
            continue
        other = vars(b)[key]
        if isinstance(value, np.ndarray):
            assert value.shape == other.shape and value.tobytes() == other.tobytes(), (where, key)
        elif hasattr(value, "__dict__") and hasattr(value, "rng"):  # a core / base learner
            _same_state(value, other, f"{where}.{key}")
        elif isinstance(value, (int, float, str, bool)) and not isinstance(value, float):
            assert value == other, (where, key)
    # the random streams continue identically
    assert a.rng.random((40,)).tobytes() == b.rng.random((40,)).tobytes(), where


@pytest.mark.parametrize("blocking", BLOCKINGS)
@pytest.mark.parametrize(("name", "params", "n", "k", "horizon"), CASES)
def test_block_play_equals_act(name, params, n, k, horizon, blocking):
    losses, advice = _game(n, k, horizon)
    ref = _make(name, params, n, k, horizon)
    expected = _reference(ref, losses, advice, None)
    agent = _make(name, params, n, k, horizon)
    got = _in_blocks(agent, losses, advice, None, _sizes(blocking, horizon), expected)
    assert got.tobytes() == expected.tobytes()
    _same_state(agent, ref)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("private-batched-bandit", {"tau": 5}),
        ("private-bandit-over-experts", {"tau": 5}),
        ("private-batched-exp4", {"release": "loss", "tau": 5}),
        ("private-batched-exp4", {"release": "estimates", "tau": 5}),
        ("uniform", {}),
    ],
)
def test_identity_advice_blocks_equal_act(name, params):
    """advice=None: every round's advice is first["advice"], a read-only broadcast view."""
    k, horizon = 4, 41
    losses, _ = _game(k, k, horizon, identity=True)
    flat = np.eye(k).reshape(k * k)
    flat.setflags(write=False)
    identity_flat = np.broadcast_to(flat, (B, k * k))
    ref = _make(name, params, k, k, horizon)
    expected = _reference(ref, losses, None, identity_flat)
    agent = _make(name, params, k, k, horizon)
    got = _in_blocks(agent, losses, None, identity_flat, _sizes("mixed", horizon), expected)
    assert got.tobytes() == expected.tobytes()
    _same_state(agent, ref)


def test_a_learner_that_reads_an_unplayed_loss_is_caught():
    """The NaN poison catches a learner that reads the losses of arms it did not play."""

    class Peeking(agents.spec("private-batched-bandit").cls):
        def play_bandit_block(self, first, advice, losses, rows):
            actions = super().play_bandit_block(first, advice, losses, rows)
            if np.isnan(losses[:, rows, :]).any():  # a peek at the whole block
                raise ValueError("read a loss it did not play")
            return actions

    losses, advice = _game(2, 3, 30)
    ref = _make("private-batched-bandit", {"tau": 4}, 2, 3, 30)
    expected = _reference(ref, losses, advice, None)
    peeking = Peeking(2, 30, n_arms=3, num_envs=B, seed=[4, 9, 2], tau=4)
    with pytest.raises(ValueError, match="did not play"):
        _in_blocks(peeking, losses, advice, None, [30], expected)


def test_block_past_the_horizon_is_refused_like_act():
    losses, advice = _game(3, 3, 12)
    agent = _make("private-batched-exp4", {"release": "estimates", "tau": 3}, 3, 3, 10)
    first = _obs(advice, None, 0, np.zeros(B, dtype=np.int64), np.zeros((B, 1)))
    with pytest.raises(ValueError, match="played its horizon=10 rounds"):
        agent.play_bandit_block(first, advice, losses, ROWS)


def test_the_sampler_from_uniforms_is_batch_rng_laplace():
    a, b = BatchRNG([3, 4, 5]), BatchRNG([3, 4, 5])
    for scale in (0.25, 1.0, 17.0):
        expected = np.stack([a.laplace(scale, ()) for _ in range(9)], axis=1)
        got = samplers.laplace(b.random((9,)), scale)
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize(("t0", "k", "tau", "last"), [(0, 10, 3, 9), (5, 20, 4, 16), (0, 1, 1, 5)])
def test_segment_starts_brute_force(t0, k, tau, last):
    expected = [0] + [i for i in range(1, k) if (t0 + i) % tau == 0 and t0 + i <= last]
    assert segment_starts(t0, k, tau, last) == expected


# ----------------------------------------------------------------------------- the episode
def _episode_grid(env_id: str, entries: list) -> list:
    from dp_experts_env.evaluation.grid import EnvEntry, Grid

    grid = Grid(
        agents=entries,
        envs=[EnvEntry(env_id, {"horizon": 230})],
        epsilons=(1.0, 4.0, math.inf),
        n_seeds=3,
        n_record=12,
    )
    return grid.cells()


@pytest.mark.parametrize(
    ("env_id", "entries"),
    [
        (
            "DPExperts-BanditAdvice-v0",
            [
                ("private-batched-exp4", {"release": "estimates", "tau": 9}),
                ("private-batched-exp4", {"release": "loss", "tau": 6}),
                ("private-bandit-over-experts", {"tau": 7, "tail": "sample"}),
                ("uniform", {}),
            ],
        ),
        (
            "DPExperts-Bandit-v0",
            [
                ("private-batched-bandit", {"tau": 8}),
                ("private-batched-bandit", {"tau": 1, "base": "exp3"}),
                ("private-batched-exp4", {"release": "estimates", "tau": 9}),
            ],
        ),
    ],
    ids=["advice", "bandit"],
)
def test_episode_rows_equal_the_per_round_loop(env_id, entries, monkeypatch):
    pytest.importorskip("numba")
    from _block_rows import assert_same_rows, rows_on_path

    from dp_experts_env.evaluation.grid import AgentEntry

    calls = []
    for name in {name for name, _ in entries if name != "uniform"}:
        cls = agents.spec(name).cls
        original = cls.play_bandit_block

        def spy(self, *args, _original=original, **kwargs):
            calls.append(type(self).__name__)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "play_bandit_block", spy)
    cells = _episode_grid(env_id, [AgentEntry(name, params) for name, params in entries])
    blocks = rows_on_path(cells, monkeypatch, True)
    assert calls  # the block path ran the learners' block method
    calls.clear()
    assert_same_rows(blocks, rows_on_path(cells, monkeypatch, False))
    assert not calls  # the per-round loop never does
    assert {row["static_pseudo_regret"] for row in blocks} != {0.0}


def test_episode_refuses_bad_block_actions(monkeypatch):
    pytest.importorskip("numba")
    import gymnasium as gym

    from dp_experts_env.evaluation.episode import play_shared, uses_blocks

    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    env = gym.make_vec(
        "DPExperts-Bandit-v0", num_envs=2, vectorization_mode="vector_entry_point", horizon=20
    )
    assert uses_blocks(env)
    agent = agents.make("private-batched-bandit", env=env, seed=[1, 2], tau=2)
    monkeypatch.setattr(
        type(agent),
        "play_bandit_block",
        lambda self, first, advice, losses, rows: np.full((len(losses), 2), 99, dtype=np.int64),
    )
    with pytest.raises(ValueError, match=r"action must lie in \[0, "):
        play_shared(env, [agent], [1, 2], np.array([20]))
    monkeypatch.setattr(
        type(agent), "play_bandit_block", lambda self, first, advice, losses, rows: np.zeros(3)
    )
    with pytest.raises(ValueError, match="play_bandit_block of an agent of 2 runs"):
        play_shared(env, [agent], [1, 2], np.array([20]))
