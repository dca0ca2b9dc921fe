"""limited-updates and randomized-prefix-softmax: segment blocks against ``act``, bit for bit.

Both learners play a block as whole-array accumulations between their rare events (round 1,
the selections at t = 2^m, the block picks and prefix draws, periodic restarts) and call
``act``'s own hooks at the events. Here random block lengths (0, 1, long ones that straddle
several events, single ``act`` rounds in between, a final block cut by the horizon) are played
by one agent and the same rounds by ``act`` on a twin; the actions, every array and number of
the state (same bytes, same dtype) and the random stream (cursor, buffer, generator states)
must agree after every segment, on the compiled and the numpy paths. Per-run epsilons are set
as the default grid sets them; the randomized-prefix settings cover all three restart schemes,
the full-prefix ablation and the uncapped rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _block_plans import mixed_losses, random_segments
from conftest import JIT_PATHS, use_jit_path

import agents
from agents._kernels import running_total
from agents.limited_updates import LimitedUpdates
from agents.randomized_prefix import RandomizedPrefixSoftmax
from dp_experts_env.batch_rng import stream_states
from dp_experts_env.privacy.noise import ScaledBackend

HORIZON = 150  # past 128 = 2^7, so the last block (limited-updates' window) is left open
RUNS, EXPERTS = 4, 5
PER_RUN = [0.5, 2.0, 8.0, 32.0]  # as the default grid batches a learner's epsilons

# name -> setting -> (agent keywords, per-run epsilons or None)
SETTINGS: dict[str, dict[str, tuple[dict, list[float] | None]]] = {
    "limited-updates": {
        "rnm": ({"epsilon": 1.0}, None),
        "em": ({"epsilon": 1.0, "selector": "em"}, None),
        "inf": ({"epsilon": math.inf}, None),
        "rnm-per-run": ({"epsilon": 1.0}, PER_RUN),
        "em-per-run": ({"epsilon": 1.0, "selector": "em"}, PER_RUN),
        "audit-half": ({"epsilon": 1.0, "noise": ScaledBackend("fast", 0.5)}, None),
    },
    "randomized-prefix-softmax": {
        "none": ({"epsilon": 1.0}, None),
        "none-per-run": ({"epsilon": 1.0}, PER_RUN),
        "periodic": ({"epsilon": 1.0, "restarts": "periodic", "window": 13}, None),
        "periodic-per-run": ({"epsilon": 1.0, "restarts": "periodic", "window": 13}, PER_RUN),
        "periodic-short": ({"epsilon": 1.0, "restarts": "periodic", "window": 3}, None),
        "periodic-default": ({"epsilon": 1.0, "restarts": "periodic", "n_switches": 4}, None),
        "capped": ({"epsilon": 1.0, "restarts": "capped", "window": 8}, PER_RUN),
        "full-prefix": ({"epsilon": 1.0, "prefix": "full", "restarts": "periodic"}, None),
        "uncapped-inf": ({"epsilon": math.inf, "eta_cap": math.inf}, None),
    },
}
CASES = [(name, setting) for name, table in SETTINGS.items() for setting in table]


def _losses(seed: int, runs: int = RUNS, experts: int = EXPERTS) -> np.ndarray:
    return mixed_losses(seed, HORIZON, runs, experts)


def _segments(seed: int) -> list[tuple[str, int]]:
    return random_segments(seed, HORIZON, 0.2, [0, 1, 2, 3, 5, 7, 16, 33, 70])


# Fixed plans besides the random ones: the whole episode in one block; blocks that end exactly
# on the events (2^m - 1 rounds, so the next block opens with one) and a last partial block.
PLANS: dict[str, list[tuple[str, int]]] = {
    "one-block": [("block", HORIZON)],
    "event-aligned": [
        ("block", 1),
        ("block", 1),
        ("block", 2),
        ("block", 4),
        ("block", 8),
        ("block", 16),
        ("block", 32),
        ("block", 64),
        ("block", HORIZON - 128),
    ],
    "past-events": [
        ("block", 2),
        ("block", 3),
        ("block", 5),
        ("block", 9),
        ("block", 17),
        ("block", 33),
        ("block", 65),
        ("block", HORIZON - 134),
    ],
}


def _plans() -> list[tuple[int, list[tuple[str, int]]]]:
    plans = [(seed, _segments(seed)) for seed in range(3)]
    return plans + [(10 + i, plan) for i, plan in enumerate(PLANS.values())]


def _twins(name: str, setting: str, seed: int, runs: int, experts: int) -> list:
    kwargs, per_run = SETTINGS[name][setting]
    twins = [
        agents.make(name, n_experts=experts, horizon=HORIZON, num_envs=runs, seed=seed, **kwargs)
        for _ in range(2)
    ]
    if per_run is not None:
        for agent in twins:
            assert agent.set_run_epsilons(per_run[:runs])
            agent.reset(seed)
    return twins


def _state(agent) -> dict[str, bytes]:
    """Every array and number the agent holds (bytes and dtype), and its random stream."""
    out = {
        key: np.asarray(value).tobytes() + str(np.asarray(value).dtype).encode()
        for key, value in vars(agent).items()
        if isinstance(value, (np.ndarray, int, float, bool, np.integer, np.floating))
    }
    rng = agent.rng
    out["rng.cursor"] = str(rng._cursor).encode()
    out["rng.buffer"] = rng._buffer.tobytes() + str(rng._buffer.shape).encode()
    out["rng.streams"] = stream_states(rng._run_streams).tobytes()
    return out


def _play_against_act(name: str, setting: str, runs: int = RUNS, experts: int = EXPERTS) -> None:
    """Play every plan blocked and on a twin with ``act``; compare after every segment."""
    for seed, plan in _plans():
        per_round, blocked = _twins(name, setting, seed, runs, experts)
        obs = _losses(seed, runs, experts)
        t = 0
        for kind, k in plan:
            want = np.array([per_round.act(obs[t + i]) for i in range(k)], dtype=np.int64)
            want = want.reshape(k, runs)
            if kind == "act":
                got = np.asarray(blocked.act(obs[t]))[None]
            else:
                got = blocked.play_block(obs[t : t + k])
                assert got.dtype == np.int64 and got.shape == (k, runs)
            assert got.tobytes() == want.tobytes(), (seed, t, kind, k)
            t += k
            assert blocked.t == per_round.t == t
            a, b = _state(per_round), _state(blocked)
            assert a.keys() == b.keys()
            for key in a:
                assert a[key] == b[key], (seed, t, kind, k, key)
            if k:
                assert blocked.last_actions.tobytes() == per_round.last_actions.tobytes()
        assert t == HORIZON


@pytest.mark.parametrize("path", JIT_PATHS)
@pytest.mark.parametrize(("name", "setting"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_segment_blocks_equal_act_round_by_round(monkeypatch, path, name, setting):
    use_jit_path(path, monkeypatch)
    _play_against_act(name, setting)


@pytest.mark.parametrize("path", JIT_PATHS)
@pytest.mark.parametrize(
    ("name", "setting"),
    [("limited-updates", "rnm-per-run"), ("randomized-prefix-softmax", "none-per-run")],
)
def test_one_run_one_expert_blocks_equal_act(monkeypatch, path, name, setting):
    """A state of one number per run: the sum over rounds must not turn pairwise there."""
    use_jit_path(path, monkeypatch)
    _play_against_act(name, setting, runs=1, experts=1)


@pytest.mark.parametrize("shape", [(300, 1, 1), (300, 1, 2), (300, 2, 1), (300, 4, 5), (1, 3, 2)])
def test_running_total_adds_the_rounds_in_order(shape):
    """``running_total`` equals a loop of in-place ``+=``; numpy's reduce does not, for one number
    per row (pairwise), the control that shows the check can fail."""
    rng = np.random.default_rng(7)
    rows = rng.random(shape) * 10.0 ** rng.integers(-8, 8, size=shape)
    want = rows[0].copy()
    for row in rows[1:]:
        want += row
    assert running_total(rows).tobytes() == want.tobytes()
    if shape == (300, 1, 1):
        assert np.add.reduce(rows, axis=0).tobytes() != want.tobytes()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("limited-updates", 7),  # the selections at t = 2, 4, ..., 128
        ("randomized-prefix-softmax", 7),  # the picks ending blocks 0..6 (rounds 1..127)
    ],
)
def test_a_long_block_runs_the_hooks_at_events_only(name, expected):
    """One block of the whole episode calls ``_learn`` at the events, not every round."""
    agent = agents.make(name, n_experts=EXPERTS, horizon=HORIZON, num_envs=RUNS, seed=0)
    calls = []
    learn = agent._learn

    def counted(obs):  # noqa: ANN001, ANN202
        calls.append(agent.t)
        learn(obs)

    agent._learn = counted
    agent.play_block(_losses(0))
    assert len(calls) == expected, (name, calls)


@pytest.mark.parametrize("cls", [LimitedUpdates, RandomizedPrefixSoftmax])
def test_a_subclass_with_its_own_hook_plays_round_by_round(cls):
    """Overridden hooks are honoured: the block falls back to them, round by round."""

    class Counting(cls):
        def _learn(self, obs):  # noqa: ANN001, ANN202
            self.learned = getattr(self, "learned", 0) + 1
            super()._learn(obs)

    agent = Counting(EXPERTS, HORIZON, epsilon=1.0, num_envs=RUNS, seed=3)
    twin = cls(EXPERTS, HORIZON, epsilon=1.0, num_envs=RUNS, seed=3)
    obs = _losses(3)
    got = agent.play_block(obs[:40])
    want = np.stack([twin.act(row) for row in obs[:40]])
    assert agent.learned == 39 and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("cls", [LimitedUpdates, RandomizedPrefixSoftmax])
def test_play_block_checks_the_block(cls):
    agent = cls(EXPERTS, HORIZON, epsilon=1.0, num_envs=RUNS, seed=3)
    obs = _losses(3)[:9]
    obs[6, 2, 1] = -0.25
    with pytest.raises(ValueError, match="round 7"):
        agent.play_block(obs)
    assert agent.t == 0
    assert agent.play_block(obs[:0]).shape == (0, RUNS) and agent.t == 0
