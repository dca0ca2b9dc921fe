"""The speed paths give the same numbers as the plain ones.

Shared loss streams (``copies``), info only on chosen rounds (``info_rounds``), implicit identity
advice, grouped grid cells and batched epsilons are all checked against the straightforward
computation, value for value (``assert_array_equal``: bit for bit, not approximately).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import agents
import dp_experts_env  # noqa: F401 - registers the ids
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.envs.core import GameCore, SharedStreamError
from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, run_one
from dp_experts_env.evaluation import episode as episode_mod
from dp_experts_env.evaluation.backends import plan_units
from dp_experts_env.evaluation.episode import run_cells
from dp_experts_env.privacy.noise import FastBackend
from dp_experts_env.regret import RegretTracker

PSEUDO = ("static_pseudo_regret", "per_round_best_pseudo_regret")

OBLIVIOUS = [
    ("DPExperts-Shift-v0", {"n_experts": 5, "horizon": 30, "n_shifts": 2}),
    ("DPExperts-Stochastic-v0", {"n_experts": 4, "horizon": 25}),
    ("DPExperts-Oblivious-v0", {"n_experts": 4, "horizon": 25}),
    ("DPExperts-BanditAdvice-v0", {"n_experts": 5, "n_arms": 3, "horizon": 25}),
    ("DPExperts-Bandit-v0", {"n_arms": 4, "horizon": 25, "family": "shifting_bernoulli"}),
    ("DPExperts-Bandit-v0", {"n_arms": 3, "horizon": 20, "family": "periodic_swap", "period": 3}),
]


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def concat(parts):
    if isinstance(parts[0], dict):
        return {key: concat([p[key] for p in parts]) for key in parts[0]}
    return np.concatenate([np.asarray(p) for p in parts])


def vec(env_id, num_envs, **kwargs):
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )


# ----------------------------------------------------------------------------- shared streams
@pytest.mark.parametrize(("env_id", "kwargs"), OBLIVIOUS)
def test_copies_play_exactly_what_separate_envs_play(env_id, kwargs):
    copies, streams = 3, 2
    shared = vec(env_id, copies * streams, copies=copies, **kwargs)
    alone = [vec(env_id, streams, **kwargs) for _ in range(copies)]
    obs, info = shared.reset(seed=[5, 9])
    assert info == {}
    assert_same(obs, concat([env.reset(seed=[5, 9])[0] for env in alone]))
    rng = np.random.default_rng(0)
    n_actions = shared.unwrapped.single_action_space.n
    for _ in range(shared.unwrapped.horizon + 2):  # the episode, then an autoreset and a step
        actions = rng.integers(n_actions, size=copies * streams)
        got = shared.step(actions)
        want = [env.step(actions[k * streams : (k + 1) * streams]) for k, env in enumerate(alone)]
        for i in range(4):
            assert_same(got[i], concat([w[i] for w in want]))
        if want[0][4]:
            assert_same(got[4], concat([w[4] for w in want]))
        else:
            assert got[4] == {}


def test_copies_with_unseeded_resets_match_separate_envs():
    shared = vec("DPExperts-Shift-v0", 4, copies=2, n_experts=3, horizon=5)
    alone = vec("DPExperts-Shift-v0", 2, n_experts=3, horizon=5)
    shared.reset(seed=[1, 2])
    alone.reset(seed=[1, 2])
    obs_shared, _ = shared.reset()  # seeds drawn from each stream's own generator
    obs_alone, _ = alone.reset()
    step_shared = shared.step(np.zeros(4, dtype=np.int64))[0]
    step_alone = alone.step(np.zeros(2, dtype=np.int64))[0]
    assert_same(step_shared, np.concatenate([step_alone, step_alone]))


def test_copies_need_an_oblivious_adversary_and_a_divisor():
    with pytest.raises(SharedStreamError, match="oblivious"):
        vec("DPExperts-Adaptive-v0", 4, copies=2, n_experts=3, horizon=5)
    with pytest.raises(ValueError, match="copies must divide"):
        vec("DPExperts-Shift-v0", 5, copies=2, horizon=5)
    with pytest.raises(ValueError, match="copies"):
        vec("DPExperts-Shift-v0", 4, copies=0, horizon=5)
    env = vec("DPExperts-Shift-v0", 4, copies=2, horizon=5)
    with pytest.raises(ValueError, match="one seed per stream"):
        env.reset(seed=[1, 2, 3, 4])


def test_regret_tracker_with_copies_equals_one_tracker_per_run():
    rng = np.random.default_rng(3)
    copies, streams, n, s, t_max = 3, 2, 4, 2, 40
    shared = RegretTracker(copies * streams, n, s, t_max, copies=copies)
    alone = RegretTracker(copies * streams, n, s, t_max)
    for _ in range(t_max):
        losses, means = rng.random((streams, n)), rng.random((streams, n))
        picks = rng.integers(n, size=copies * streams)
        rows = np.tile(np.arange(streams), copies)
        shared.update(losses, losses[rows, picks], means, means[rows, picks])
        alone.update(losses[rows], losses[rows, picks], means[rows], means[rows, picks])
        for name in ("static_regret", "dynamic_regret", "per_round_best_regret", *PSEUDO):
            assert_same(getattr(shared, name), getattr(alone, name))
        assert_same(shared.comparator_loss, alone.comparator_loss)


@pytest.mark.parametrize(("n_switches", "horizon", "copies"), [(0, 30, 1), (2, 30, 2), (40, 30, 1)])
def test_run_values_are_the_properties_entries(n_switches, horizon, copies):
    rng = np.random.default_rng(5)
    tracker = RegretTracker(2 * copies, 3, n_switches, horizon, copies=copies)
    for _ in range(horizon):
        tracker.update(rng.random((2, 3)), rng.random(2 * copies))
        for run in range(2 * copies):
            values = tracker.run_values(run)
            want = (
                tracker.cumulative_loss[run],
                tracker.static_regret[run],
                tracker.dynamic_regret[run],
                tracker.per_round_best_regret[run],
            )
            assert [v.hex() for v in values] == [float(w).hex() for w in want]


@pytest.mark.parametrize(("n_switches", "copies"), [(0, 1), (1, 1), (3, 2), (50, 1)])
def test_compiled_regret_update_equals_the_numpy_update(monkeypatch, n_switches, copies):
    pytest.importorskip("numba")
    from dp_experts_env import _regret_kernel

    # Compares the two paths, so it needs the compiled one even when the suite runs on numpy.
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.setattr(_regret_kernel, "MIN_ELEMENTS", 1)  # compile even for a small table
    compiled = RegretTracker(4 * copies, 5, n_switches, 40, copies=copies)
    monkeypatch.setenv("DP_EXPERTS_NUMBA", "0")
    reference = RegretTracker(4 * copies, 5, n_switches, 40, copies=copies)
    assert compiled._compiled is not None and reference._compiled is None
    rng = np.random.default_rng(11)
    for t in range(40):
        # Coarse values: many ties and zeros, where an order-dependent minimum would show.
        losses = rng.integers(0, 3, size=(4, 5)) / 2.0
        means = rng.random((4, 5))
        charged, mean = rng.random(4 * copies), rng.random(4 * copies)
        for tracker in (compiled, reference):
            tracker.update(losses, charged, means, mean)
        if t % 3 == 0:  # read between updates too (the minima are then computed on demand)
            for name in ("static_regret", "dynamic_regret", "per_round_best_regret"):
                assert_same(getattr(compiled, name), getattr(reference, name))
    for name in ("static_regret", "dynamic_regret", "per_round_best_regret", *PSEUDO):
        assert_same(getattr(compiled, name), getattr(reference, name))
    assert_same(compiled._table, reference._table)


def test_small_trackers_and_a_missing_numba_use_the_numpy_update(monkeypatch):
    from dp_experts_env import _regret_kernel

    assert RegretTracker(10, 10, 4)._compiled is None  # 500 entries: never worth numba
    monkeypatch.setattr(_regret_kernel, "_COMPILED", False)  # as if numba were not installed
    assert RegretTracker(1024, 100, 4)._compiled is None


# ----------------------------------------------------------------------------- info on demand
def test_info_rounds_build_info_only_there_and_change_nothing_else():
    kwargs = {"n_experts": 4, "horizon": 12, "n_shifts": 2}
    lean, full = vec("DPExperts-Shift-v0", 3, **kwargs), vec("DPExperts-Shift-v0", 3, **kwargs)
    lean.unwrapped.info_rounds = [3, 12]
    assert lean.unwrapped.info_rounds == frozenset({3, 12})
    lean.reset(seed=4)
    full.reset(seed=4)
    for t in range(1, 13):
        a = np.full(3, t % 4)
        got, want = lean.step(a), full.step(a)
        for i in range(4):
            assert_same(got[i], want[i])
        if t in (3, 12):
            assert_same(got[4], want[4])
        else:
            assert got[4] == {}
    lean.unwrapped.info_rounds = None
    lean.reset(seed=4)
    assert lean.step(np.zeros(3, dtype=np.int64))[4]["round"].tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="info_rounds"):
        lean.unwrapped.info_rounds = [0]
    with pytest.raises(TypeError, match="info_rounds"):
        lean.unwrapped.info_rounds = 5


# ----------------------------------------------------------------------------- identity advice
@pytest.mark.parametrize("family", ["bernoulli_gap", "periodic_swap", "lemma11_switch"])
def test_identity_advice_gives_what_the_advice_product_gives(family):
    kwargs = {"n_arms": 4, "horizon": 30, "family": family}
    fast = vec("DPExperts-Bandit-v0", 3, **kwargs)
    slow = vec("DPExperts-Bandit-v0", 3, **kwargs)
    core = slow.unwrapped.core
    assert fast.unwrapped.core.identity_advice
    # The general path: the (B, N, K) product <advice_j, l_t> and a copied advice observation.
    slow.unwrapped.core = GameCore(core.adversary, core.n_switches, core.num_runs)
    slow.unwrapped.core.identity_advice = False
    b, n, k = 3, 4, 4
    slow.unwrapped.core._product = np.empty((b, n, k))
    slow.unwrapped.core._expert_losses = np.empty((b, n))
    slow.unwrapped.core._expert_means = np.empty((b, n))
    obs_fast, _ = fast.reset(seed=7)
    obs_slow, _ = slow.reset(seed=7)
    assert_same(obs_fast, obs_slow)
    assert not obs_fast["advice"].flags.writeable  # a shared constant: read-only
    rng = np.random.default_rng(1)
    for _ in range(30):
        a = rng.integers(4, size=3)
        got, want = fast.step(a), slow.step(a)
        for x, y in zip(got, want, strict=True):
            assert_same(x, y)


def test_bandit_env_memory_does_not_grow_with_b_times_k_squared():
    env = vec("DPExperts-Bandit-v0", 64, n_arms=300, horizon=5)
    obs, _ = env.reset(seed=0)
    env.step(np.zeros(64, dtype=np.int64))
    # Two K x K identities (the adversary's advice, the flattened observation) and O(B K)
    # state: far below one (B, K, K) product or advice copy (46 MB here).
    b, k = 64, 300
    assert env.unwrapped.core.state_nbytes() < 2 * k * k * 8 + 16 * b * k * 8 < b * k * k * 8
    assert obs["advice"].base is not None and obs["advice"].strides[0] == 0


# ----------------------------------------------------------------------------- grid units
SHIFT = EnvEntry("DPExperts-Shift-v0", {"n_experts": 4, "horizon": 50, "n_shifts": 2})


def test_a_unit_of_cells_gives_the_rows_each_cell_gives_alone():
    grid = Grid(
        agents=["uniform", "hedge", "meta-expert-reduction", "svt-restart", "noisy-clipped-hedge"],
        envs=[SHIFT],
        epsilons=[0.5, 4.0, math.inf],
        n_seeds=2,
        n_record=6,
    )
    cells = grid.cells()
    together = run_cells(cells)
    assert [cell for cell, _ in together] == cells
    for cell, rows in together:
        assert rows == run_one(cell), cell.agent.name


def test_adaptive_and_oco_cells_play_alone_with_the_same_rows():
    for env in (
        EnvEntry("DPExperts-Adaptive-v0", {"n_experts": 3, "horizon": 30}),
        EnvEntry("DPExperts-OCO-v0", {"horizon": 20, "dim": 2}),
    ):
        names = ["hedge", "uniform"] if "Adaptive" in env.id else ["ogd", "dp-ftrl-oco"]
        cells = Grid(agents=names, envs=[env], epsilons=[1.0], n_seeds=2, n_record=4).cells()
        for cell, rows in run_cells(cells):
            assert rows == run_one(cell)


def test_a_learners_finite_epsilons_share_one_agent(monkeypatch):
    made = []
    real = agents.make

    def spy(name, **kwargs):
        agent = real(name, **kwargs)
        made.append((name, agent.num_envs))
        return agent

    monkeypatch.setattr(episode_mod.agents_pkg, "make", spy)
    grid = Grid(
        agents=["meta-expert-reduction"], envs=[SHIFT], epsilons=[1.0, 2.0, math.inf], n_seeds=3
    )
    pairs = run_cells(grid.cells())
    # One agent of 2 x 3 runs for the finite epsilons, one for inf, two one-run claim probes.
    assert sorted(made) == sorted(
        [("meta-expert-reduction", 6), ("meta-expert-reduction", 3)]
        + [("meta-expert-reduction", 1)] * 2
    )
    monkeypatch.undo()
    for cell, rows in pairs:
        assert rows == run_one(cell)
        assert rows[0]["epsilon_certified"] == (cell.epsilon or math.inf)


def test_plan_units_groups_by_stream_and_splits_for_workers():
    other = EnvEntry("DPExperts-Shift-v0", {"n_experts": 4, "horizon": 60})
    grid = Grid(
        agents=["uniform", "hedge", AgentEntry("fixed-share")], envs=[SHIFT, other], n_seeds=4,
        seeds_per_cell=2,
    )  # fmt: skip
    cells = grid.cells()
    units = plan_units(cells)
    assert len(units) == 4  # (env, seed block)
    assert sorted(c.cell_id for u in units for c in u) == sorted(c.cell_id for c in cells)
    for unit in units:
        assert len({episode_mod.group_key(c) for c in unit}) == 1
    split = plan_units(cells[:3], 2)  # one group of three learners, two workers
    assert sorted(len(u) for u in split) == [1, 2]


# ----------------------------------------------------------------------------- learners
def test_meta_expert_run_epsilons_equal_separate_agents():
    eps, runs, n, t_max = [0.5, 2.0, 8.0], 2, 3, 80
    batch = agents.make(
        "meta-expert-reduction", n_experts=n, horizon=t_max, n_switches=2, epsilon=eps[0],
        num_envs=len(eps) * runs, seed=list(range(len(eps) * runs)),
    )  # fmt: skip
    assert batch.set_run_epsilons(np.repeat(eps, runs))
    alone = [
        agents.make(
            "meta-expert-reduction",
            n_experts=n,
            horizon=t_max,
            n_switches=2,
            epsilon=e,
            num_envs=runs,
            seed=list(range(i * runs, (i + 1) * runs)),
        )  # fmt: skip
        for i, e in enumerate(eps)
    ]
    losses = np.random.default_rng(2).random((t_max, len(eps) * runs, n))
    for t in range(t_max):
        got = batch.act(losses[t])
        want = np.concatenate(
            [a.act(losses[t, i * runs : (i + 1) * runs]) for i, a in enumerate(alone)]
        )
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="several epsilons"):
        _ = batch.privacy
    assert not batch.set_run_epsilons([1.0] * 5 + [math.inf])


RUN_EPSILON_CASES = [
    ("noisy-clipped-hedge", {"n_switches": 2}),
    ("noisy-clipped-hedge", {"mode": "paper", "tuning": "paper"}),
    ("noisy-clipped-hedge", {"noise": "grid", "eta": 0.3}),
    ("dp-ftrl-tree", {}),
    ("dp-ftrl-tree", {"noise": "grid"}),
    ("private-shrinking-dartboard", {}),
    ("private-shrinking-dartboard", {"delta": 0.0, "tuning": "paper"}),
    ("batched-private-shrinking-dartboard", {"batch_size": 3}),
    ("private-lazy-hedge", {}),
    ("private-lazy-hedge", {"mode": "paper", "tuning": "paper"}),
    ("svt-restart", {"threshold_scale": 0.02}),
    ("svt-restart", {"selector": "em", "threshold_scale": 0.05, "window_grid": "all"}),
    ("svt-restart", {"mode": "paper", "tuning": "paper", "threshold_scale": 0.02}),
    ("svt-restart", {"noise": "grid"}),
    ("limited-updates", {}),
    ("limited-updates", {"selector": "em", "noise": "grid"}),
    ("randomized-prefix-softmax", {"eta_cap": 2.0}),
    ("randomized-prefix-softmax", {"restarts": "periodic", "window": 16}),
]


@pytest.mark.parametrize(("name", "params"), RUN_EPSILON_CASES)
def test_run_epsilons_equal_separate_agents(name, params):
    # Per-run epsilons (the evaluation's batching hook): run b of the batch plays exactly what an
    # agent built at its own epsilon and seed plays, and the batch states no single claim.
    eps, runs, n, t_max = [0.5, 2.0, 8.0, 0.5], 3, 4, 120
    seeds = list(range(10, 10 + len(eps) * runs))
    batch = agents.make(
        name, n_experts=n, horizon=t_max, epsilon=eps[0], num_envs=len(eps) * runs, seed=seeds,
        **params,
    )  # fmt: skip
    assert batch.set_run_epsilons(np.repeat(eps, runs))
    alone = [
        agents.make(
            name, n_experts=n, horizon=t_max, epsilon=e, num_envs=runs,
            seed=seeds[i * runs : (i + 1) * runs], **params,
        )  # fmt: skip
        for i, e in enumerate(eps)
    ]
    # Losses that favour moving (half the rounds a fresh random vector), so resamples happen.
    losses = np.random.default_rng(4).random((t_max, len(eps) * runs, n)) ** 3
    for episode in range(2):  # the second through an unseeded reset: state rebuilt per run
        for t in range(t_max):
            got = batch.act(losses[t])
            want = np.concatenate(
                [a.act(losses[t, i * runs : (i + 1) * runs]) for i, a in enumerate(alone)]
            )
            np.testing.assert_array_equal(got, want, err_msg=f"episode {episode}, round {t}")
        if hasattr(batch, "resamples"):
            assert batch.resamples.sum() > 0
        if params.get("threshold_scale", 1.0) < 1.0:  # the detectors fire at every epsilon
            assert all(a.restarts.sum() > 0 for a in alone)
            np.testing.assert_array_equal(
                batch.restarts, np.concatenate([a.restarts for a in alone])
            )
        batch.reset()
        for a in alone:
            a.reset()
    with pytest.raises(ValueError, match="several epsilons"):
        _ = batch.privacy
    # The claim of each epsilon is its own agent's, untouched by the batch.
    assert alone[1].privacy.epsilon <= 2.0 and alone[1].privacy.requested_epsilon == 2.0
    fresh = agents.make(name, n_experts=n, horizon=t_max, epsilon=1.0, num_envs=3, **params)
    assert not fresh.set_run_epsilons([1.0, 2.0, math.inf])
    assert fresh.privacy.requested_epsilon == 1.0  # refused: nothing changed
    with pytest.raises(ValueError, match="one value per run"):
        fresh.set_run_epsilons([1.0, 2.0])


def test_batched_dartboard_refuses_epsilons_with_other_blocks():
    eps = [0.05, 0.5, 32.0]
    make = agents.spec("batched-private-shrinking-dartboard").cls
    blocks = {make(n_experts=10, horizon=10_000, epsilon=e).batch for e in eps}
    agent = make(n_experts=10, horizon=10_000, epsilon=eps[0], num_envs=3)
    assert agent.set_run_epsilons(eps) == (len(blocks) == 1)
    assert len(blocks) > 1  # the default sizes differ here, so the batch is refused
    assert agent.privacy.requested_epsilon == eps[0]


def test_svt_selection_streams_continue_across_unseeded_resets():
    def episode(agent):
        losses = np.random.default_rng(0).random((64, 2, 4))
        return np.array([agent.act(losses[t]) for t in range(64)])

    agent = agents.make("svt-restart", n_experts=4, horizon=64, num_envs=2, seed=3, epsilon=1.0)
    first = episode(agent)
    agent.reset()  # same agent, fresh randomness
    second = episode(agent)
    agent.reset(seed=3)
    np.testing.assert_array_equal(episode(agent), first)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("scale", [0.3, 2.0, np.array([[0.5], [1.5], [3.0]])])
def test_fast_backend_draws_the_textbook_laplace_and_gumbel_floats(scale):
    shapes = [(5,)] if np.ndim(scale) else [(), (5,), (4, 3)]
    for shape in shapes:
        a, b = BatchRNG([1, 2, 3], 7), BatchRNG([1, 2, 3], 7)
        u = b.open_uniform(shape) - 0.5
        want = -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))
        assert_same(FastBackend().laplace(a, scale, shape), want)
        a, b = BatchRNG([1, 2, 3], 7), BatchRNG([1, 2, 3], 7)
        assert_same(FastBackend().gumbel(a, shape), -np.log(-np.log(b.open_uniform(shape))))
