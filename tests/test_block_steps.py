"""Block steps: K rounds of an oblivious game at once equal K single steps, bit for bit.

Registry-wide: every family whose adversary is oblivious (the kinds table and the class say
which) is played with single steps and with blocks of uneven sizes, the same actions, on the
vector env (with and without shared streams) and on the single env. Also the regret tracker's
block update against its per-round update, on the compiled and the numpy paths.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from _family_cases import FAMILY_CASES, FAMILY_IDS, family_inputs
from conftest import use_jit_path

from dp_experts_env.envs.core import SharedStreamError
from dp_experts_env.regret import RegretTracker

HORIZON = 23
BLOCKS = (1, 4, 7, 2, 9)  # uneven, the last one cut at the horizon


def same(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _vec(env_id, kind, family, num_envs, copies=1):
    kwargs = family_inputs(kind, family, HORIZON)
    if copies > 1:
        kwargs["copies"] = copies
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", family=family, **kwargs
    )


def _oblivious(env) -> bool:
    return bool(env.unwrapped.core.supports_blocks)


@pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES, ids=FAMILY_IDS)
@pytest.mark.parametrize("copies", [1, 2])
def test_blocks_equal_single_steps(env_id, kind, family, copies):
    runs = 4
    if not _oblivious(_vec(env_id, kind, family, runs)):
        block = _vec(env_id, kind, family, runs)
        block.reset(seed=3)
        with pytest.raises(SharedStreamError, match="reacts to the actions"):
            block.unwrapped.next_block(2)
        return
    single, block = (_vec(env_id, kind, family, runs, copies) for _ in range(2))
    n_actions = int(single.single_action_space.n)
    actions = np.random.default_rng(1).integers(n_actions, size=(HORIZON, runs))
    seed = [3, 9] if copies == 2 else 3
    obs_s, _ = single.reset(seed=seed)
    obs_b, _ = block.reset(seed=seed)
    assert same(obs_s, obs_b)
    t, sizes = 0, iter(BLOCKS * 5)
    while t < HORIZON:
        data = block.unwrapped.next_block(next(sizes))
        k = len(data)
        assert data.start == t + 1
        rewards = []
        for i in range(k):
            obs_s, reward, term_s, trunc_s, info_s = single.step(actions[t + i])
            rewards.append(reward)
            if kind in ("bandit", "bandit_advice"):
                continue
            # The block's losses are what the single steps reveal (each stream's row).
            streams = runs // copies
            assert same(np.tile(data.losses[i], (copies, 1)), obs_s)
            assert data.losses.shape == (k, streams, obs_s.shape[1])
        obs_b, reward_b, term_b, trunc_b, info_b = block.step_block(actions[t : t + k])
        assert same(np.array(rewards), reward_b)
        assert same(obs_s, obs_b) and same(info_s, info_b)
        assert same(term_s, term_b) and same(trunc_s, trunc_b)
        t += k
    assert term_b.all()


@pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES, ids=FAMILY_IDS)
def test_single_env_blocks_equal_single_steps(env_id, kind, family):
    env_s = gym.make(env_id, family=family, **family_inputs(kind, family, HORIZON))
    env_b = gym.make(env_id, family=family, **family_inputs(kind, family, HORIZON))
    if not env_b.unwrapped.core.supports_blocks:
        return
    n_actions = int(env_s.action_space.n)
    actions = np.random.default_rng(2).integers(n_actions, size=HORIZON)
    env_s.reset(seed=5)
    env_b.reset(seed=5)
    t, sizes = 0, iter(BLOCKS * 5)
    while t < HORIZON:
        k = len(env_b.unwrapped.next_block(next(sizes)))
        for i in range(k):
            out_s = env_s.step(int(actions[t + i]))
        obs, rewards, terminated, truncated, info = env_b.unwrapped.step_block(actions[t : t + k])
        assert same(obs, out_s[0]) and rewards[-1] == out_s[1]
        assert (terminated, truncated) == out_s[2:4]
        assert info == out_s[4] and all(type(info[k]) is type(out_s[4][k]) for k in info)
        t += k


def test_block_misuse_is_refused():
    env = gym.make_vec(
        "DPExperts-Shift-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        n_experts=3,
        horizon=5,
    )
    core = env.unwrapped.core
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="no block is pending"):
        core.step_block(np.zeros((1, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="k"):
        core.next_block(0)
    block = core.next_block(9)
    assert len(block) == 5  # cut at the horizon
    with pytest.raises(RuntimeError, match="pending"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match="pending"):
        core.next_block(1)
    with pytest.raises(ValueError, match=r"shape \(5, 2\)"):
        core.step_block(np.zeros((4, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="action must lie"):
        core.step_block(np.full((5, 2), 3))


# ----------------------------------------------------------------------------- tracker blocks
@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize(
    ("n_switches", "copies", "n_experts", "means"),
    [(0, 1, 5, False), (2, 1, 5, True), (3, 2, 9, True), (40, 1, 5, False), (6, 3, 17, True)],
)
def test_tracker_block_update_equals_per_round(
    monkeypatch, jit, n_switches, copies, n_experts, means
):
    use_jit_path("compiled" if jit else "numpy", monkeypatch)
    streams, horizon = 4, 40
    runs = streams * copies
    block = RegretTracker(runs, n_experts, n_switches, horizon, copies=copies)
    single = RegretTracker(runs, n_experts, n_switches, horizon, copies=copies)
    rng = np.random.default_rng(n_switches)
    t = 0
    for k in (1, 5, 13, 1, 20):
        # Coarse values: ties and zeros, where an order-dependent minimum would show.
        losses = rng.integers(0, 3, size=(k, streams, n_experts)) / 2.0
        charged = rng.random((k, runs))
        mu = rng.random((k, streams, n_experts)) if means else None
        learner_mu = rng.random((k, runs)) if means else None
        block.update_block(losses, charged, mu, learner_mu)
        for i in range(k):
            single.update(
                losses[i],
                charged[i],
                None if mu is None else mu[i],
                None if learner_mu is None else learner_mu[i],
            )
        t += k
        names = [
            "cumulative_loss",
            "static_regret",
            "dynamic_regret",
            "per_round_best_regret",
            "comparator_loss",
            "static_pseudo_regret",
            "per_round_best_pseudo_regret",
        ]
        for name in names:
            assert same(getattr(block, name), getattr(single, name)), (name, t)
        for run in range(runs):
            assert block.run_values(run) == single.run_values(run)
    assert block.round == single.round == t


@pytest.mark.parametrize("neighbor_round", [1, 2, 9, 23])
def test_blocks_with_a_neighbour_equal_single_steps(neighbor_round):
    """A replaced round inside a block (the vectorised segment draw steps aside for it)."""
    kwargs = {"n_experts": 4, "horizon": HORIZON, "n_shifts": 3}
    make = lambda: gym.make_vec(  # noqa: E731
        "DPExperts-Shift-v0", num_envs=3, vectorization_mode="vector_entry_point", **kwargs
    )
    single, block = make(), make()
    options = {"neighbor": {"round": neighbor_round, "loss": np.array([1.0, 0.0, 0.5, 0.25])}}
    single.reset(seed=7, options=options)
    block.reset(seed=7, options=options)
    actions = np.random.default_rng(3).integers(4, size=(HORIZON, 3))
    t = 0
    for size in (5, 10, 8):
        k = len(block.unwrapped.next_block(size))
        for i in range(k):
            out_s = single.step(actions[t + i])
        out_b = block.unwrapped.step_block(actions[t : t + k])
        assert same(out_s[0], out_b[0]) and same(out_s[4], out_b[4])
        t += k
    assert t == HORIZON
