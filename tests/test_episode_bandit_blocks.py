"""Bandit feedback in blocks: the episode loop's rows equal the per-round loop's, float for float.

With an oblivious bandit adversary (``DPExperts-Bandit-v0``, ``DPExperts-BanditAdvice-v0``) the
loop fetches K rounds at once, each learner still acts round by round on the observation a single
step gives (the round's advice, its own last action and loss) and the env charges the block and
updates the regret at once. Compared with ``DP_EXPERTS_NO_JIT=1`` (the per-round reference loop):
several learners sharing loss streams (``copies``), batched epsilons, one learner alone, and every
registered bandit family.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from _block_rows import assert_same_rows, rows_on_path
from _family_cases import FAMILY_CASES, case_id, family_inputs
from conftest import use_jit_path

from dp_experts_env.evaluation.episode import (
    _as_seen_alone,
    group_key,
    play_shared,
    uses_blocks,
)
from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid

ADVICE = EnvEntry("DPExperts-BanditAdvice-v0", {"horizon": 150})
BANDIT = EnvEntry("DPExperts-Bandit-v0", {"horizon": 150})


def _grid(env: EnvEntry, names: list[str], epsilons=(1.0, 4.0, math.inf)) -> Grid:
    return Grid(
        agents=[AgentEntry(name) for name in names],
        envs=[env],
        epsilons=epsilons,
        n_seeds=3,
        n_record=12,
    )


@pytest.mark.parametrize(
    ("env", "names"),
    [
        (ADVICE, ["uniform", "exp4", "ldp-exp4", "private-batched-exp4"]),
        (BANDIT, ["uniform", "exp3", "private-batched-bandit", "ldp-exp4"]),
    ],
    ids=["advice", "bandit"],
)
def test_bandit_rows_are_the_same_in_blocks(env, names, monkeypatch):
    pytest.importorskip("numba")
    cells = _grid(env, names).cells()
    assert len({group_key(c) for c in cells}) == 1  # one shared episode (copies)
    blocks = rows_on_path(cells, monkeypatch, True)
    assert_same_rows(blocks, rows_on_path(cells, monkeypatch, False))
    assert {row["static_pseudo_regret"] for row in blocks} != {0.0}  # the game was played


def _play(env_id: str, kwargs: dict, name: str, monkeypatch, jit: bool) -> dict:
    import agents

    use_jit_path("compiled" if jit else "numpy", monkeypatch)
    env = gym.make_vec(env_id, num_envs=5, vectorization_mode="vector_entry_point", **kwargs)
    assert uses_blocks(env) == jit
    agent = agents.make(name, env=env, seed=list(range(5)), epsilon=2.0)
    rounds = np.array([1, 2, 3, 40, 41, 97, int(env.unwrapped.horizon)])
    return play_shared(env, [agent], list(range(10, 15)), rounds)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "name"),
    [
        # Many arms: <advice_j, l_t> over 20 arms is a pairwise sum, the same per row in blocks.
        ("DPExperts-BanditAdvice-v0", {"horizon": 120, "n_experts": 7, "n_arms": 20}, "ldp-exp4"),
        ("DPExperts-Bandit-v0", {"horizon": 120, "n_arms": 6}, "private-batched-bandit"),
    ],
)
def test_one_learner_alone_is_the_same_in_blocks(env_id, kwargs, name, monkeypatch):
    pytest.importorskip("numba")
    blocks = _play(env_id, kwargs, name, monkeypatch, True)
    rounds = _play(env_id, kwargs, name, monkeypatch, False)
    assert blocks.keys() == rounds.keys() and "static_pseudo_regret" in blocks
    for key in blocks:
        assert blocks[key].tobytes() == rounds[key].tobytes(), key


class _BadArm:
    """A learner that plays a valid arm, then arm K (out of range) from round 3 on."""

    num_envs = 2

    def __init__(self, n_arms: int) -> None:
        self.n_arms, self.t = n_arms, 0

    def reset(self) -> None:
        self.t = 0

    def act(self, obs):
        self.t += 1
        return np.full(2, self.n_arms if self.t >= 3 else 0, dtype=np.int64)


def test_an_out_of_range_arm_is_refused_in_blocks(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    env = gym.make_vec(
        "DPExperts-Bandit-v0", num_envs=2, vectorization_mode="vector_entry_point", horizon=20
    )
    assert uses_blocks(env)
    with pytest.raises(ValueError, match=r"action must lie in \[0, "):
        play_shared(env, [_BadArm(int(env.single_action_space.n))], [1, 2], np.array([20]))


BANDIT_CASES = [c for c in FAMILY_CASES if c[1] in ("bandit", "bandit_advice")]


@pytest.mark.parametrize(
    ("env_id", "kind", "family"), BANDIT_CASES, ids=[case_id(k, f) for _, k, f in BANDIT_CASES]
)
def test_every_bandit_family_is_the_same_in_blocks(env_id, kind, family, monkeypatch):
    """Two learners sharing every bandit family's streams (copies = 2), blocks vs per round."""
    pytest.importorskip("numba")
    import agents

    def curves(jit: bool) -> dict:
        use_jit_path("compiled" if jit else "numpy", monkeypatch)
        kwargs = family_inputs(kind, family, 23)
        env = gym.make_vec(
            env_id, num_envs=6, vectorization_mode="vector_entry_point", family=family,
            copies=2, **kwargs,
        )  # fmt: skip
        assert uses_blocks(env) == (jit and env.unwrapped.core.supports_blocks)
        view = _as_seen_alone(env, 3)
        learners = [
            agents.make("exp3" if kind == "bandit" else "exp4", env=view, seed=[1, 2, 3]),
            agents.make("ldp-exp4", env=view, seed=[4, 5, 6], epsilon=1.0),
        ]
        return play_shared(env, learners, [7, 8, 9], np.array([1, 2, 5, 11, 12, 23]))

    blocks, rounds = curves(True), curves(False)
    assert blocks.keys() == rounds.keys()
    for key in blocks:
        assert blocks[key].tobytes() == rounds[key].tobytes(), key


def test_identity_advice_blocks_stay_within_the_block_budget(monkeypatch) -> None:
    # The block stores identity advice as (k, B, K, K) like any other advice, so its rounds are
    # sized by B K^2 too: sized by B K alone, K = 20 arms held 20x the budget (560 MB peak at
    # B = 16, T = 2e4, against 190 MB).
    import agents
    from dp_experts_env.evaluation import episode

    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.setattr(episode, "BLOCK_ELEMENTS", 1 << 14)
    env = gym.make_vec(
        "DPExperts-Bandit-v0",
        num_envs=4,
        vectorization_mode="vector_entry_point",
        n_arms=20,
        horizon=400,
    )
    assert uses_blocks(env)
    core = env.unwrapped.core
    sizes = []
    original = core.next_block

    def recording(k):
        block = original(k)
        sizes.append(0 if block.advice is None else block.advice.size)
        return block

    monkeypatch.setattr(core, "next_block", recording)
    agent = agents.make("uniform", env=env, seed=0)
    play_shared(env, [agent], [0, 1, 2, 3], np.array([400]))
    assert sizes and max(sizes) <= (1 << 14)
