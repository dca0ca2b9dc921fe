"""FTPL-GR's resampling pages and block kernel (:mod:`agents._ftpl_gr`) against K calls of ``act``.

``ftpl-gr`` over the arms plays blocks of uneven sizes (1 and the whole horizon included) on a
game whose unplayed losses are NaN: the same actions, state (the resampling pages and cursors
included) and next uniforms as a twin playing round by round, compiled and as the kernel's
Python form, with pages of one or two redraws (a page turned inside a resampling, the kernel
resumed) and of the default size. Known answers: the resampling reads each run's own stream
(seeded ``[seed, stream, RESAMPLE_KEY]``) up to the first hit and no further; a batch equals its
single runs; a deep copy or unpickled agent plays on (its episode and the next) as the
original would. A planted kernel-only bug (half the perturbation scale) fails ``check_agent``'s
paths check, a harmless change passes; ``over="experts"`` and the numpy path play ``act``.
"""

from __future__ import annotations

import copy
import functools
import pickle

import numpy as np
import pytest
from _bandit_twins import BLOCKINGS, ROWS, RUNS, game, obs_at, play_both

import agents
from agents import _bandit_kernels as kernels
from agents import _ftpl_gr as ftpl
from agents.bandit_core import FtplGRCore
from dp_experts_env import _jit, samplers
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.testing import ContractError, check_agent


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel or its Python form; the block must not fall back to ``act``."""
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)
    if request.param == "compiled":
        if not _jit.jit_enabled():
            pytest.skip("numba is not installed")
    else:
        monkeypatch.setattr(ftpl, "ftpl_ready", lambda: True)
        monkeypatch.setattr(
            ftpl, "run_ftpl_block", functools.partial(ftpl.run_ftpl_block, compiled=False)
        )
    calls = []
    original = ftpl.run_ftpl_block
    monkeypatch.setattr(
        ftpl, "run_ftpl_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
    )
    yield request.param
    assert calls, "the kernel never ran"


CASES = [
    ({}, 5, 5, False),
    ({"max_resamples": 3}, 4, 3, True),  # the cap binds; advice ignored
    ({"eta": 2.0}, 2, 2, False),  # sharp law: long resamplings for the unlikely arm
    ({"eta": 0.5, "max_resamples": 40}, 9, 9, False),
]


def _pages_equal(a, b) -> None:
    for key in ("page", "cursor"):
        x, y = getattr(a.core.pages, key), getattr(b.core.pages, key)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), key
    assert np.array_equal(a.core.last_resamples, b.core.last_resamples)


@pytest.mark.parametrize("page", [2, ftpl.PAGE_REDRAWS])
@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize(("kwargs", "n", "arms", "dense"), CASES)
def test_ftpl_block_equals_act(path, monkeypatch, kwargs, n, arms, dense, blocking, page):
    monkeypatch.setattr(ftpl, "PAGE_REDRAWS", page)
    per_round, blocked = play_both("ftpl-gr", kwargs, n, arms, dense, BLOCKINGS[blocking])
    _pages_equal(per_round, blocked)


def test_a_page_turned_inside_a_resampling_resumes_the_run(path, monkeypatch):
    monkeypatch.setattr(ftpl, "PAGE_REDRAWS", 1)
    turns = []
    original = ftpl.ResamplePages.turn
    monkeypatch.setattr(
        ftpl.ResamplePages, "turn", lambda self, runs: turns.extend(runs) or original(self, runs)
    )
    play_both("ftpl-gr", {}, 5, 5, False, BLOCKINGS["whole"])
    # one turn per redraw, act and block alike; every learning round redraws at least once, so
    # more turns than learning rounds means the kernel stopped and resumed inside a resampling
    block_turns = len(turns) // 2
    assert len(turns) % 2 == 0 and block_turns > RUNS * (sum(BLOCKINGS["whole"]) - 1)


def test_resampling_reads_its_own_stream_up_to_the_first_hit():
    runs, m, cap = 64, 4, 50
    rng = BatchRNG(list(range(100, 100 + runs)), stream=7)
    core = FtplGRCore(rng, m, eta=1.0, max_resamples=cap)
    cum = np.array([0.0, 0.7, 1.4, 3.0])
    core.cum_estimate[:] = cum
    arms = core.sample()
    core.update(arms, np.full(runs, 0.5))
    twin = BatchRNG(list(range(100, 100 + runs)), stream=7)
    twin.random((m,))
    assert np.array_equal(twin.random((3,)), rng.random((3,)))  # sample drew m, update none
    size = ftpl.PAGE_REDRAWS * m
    for b in range(runs):
        seq = np.random.SeedSequence([100 + b, 7, ftpl.RESAMPLE_KEY])
        z = samplers.laplace(np.random.Generator(np.random.PCG64(seq)).random(size), 1.0)
        redraws = cum + z.reshape(-1, m)
        hits = np.flatnonzero(np.argmin(redraws, axis=1)[:cap] == arms[b])
        want = hits[0] + 1 if hits.size else cap
        assert core.last_resamples[b] == want
        assert core.pages.cursor[b] == want * m  # read up to the hit, no further
        np.testing.assert_array_equal(core.pages.page[b], z)
    assert core.last_resamples.max() > 1 and core.last_resamples.min() == 1
    np.testing.assert_allclose(
        core.cum_estimate[np.arange(runs), arms] - cum[arms], 0.5 * core.last_resamples,
        rtol=1e-12,
    )


def test_a_batch_in_blocks_equals_its_single_runs(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.setattr(ftpl, "PAGE_REDRAWS", 2)
    losses, _ = game(5, 5, False, 3)
    horizon = len(losses)

    def play(seed, runs, rows):
        agent = agents.make("ftpl-gr", n_experts=5, n_arms=5, horizon=horizon, num_envs=runs,
                            seed=seed)
        first = obs_at(None, 5, 0)
        first = {key: value[:runs] for key, value in first.items()}
        return agent.play_bandit_block(first, None, losses, rows)

    batch = play(11, RUNS, ROWS)
    for b in range(RUNS):
        np.testing.assert_array_equal(play(11 + b, 1, ROWS[b : b + 1])[:, 0], batch[:, b])


def test_numpy_path_and_experts_play_through_act(monkeypatch):
    calls, fallback = [], []
    original = ftpl.run_ftpl_block
    monkeypatch.setattr(
        ftpl, "run_ftpl_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
    )
    act_loop = kernels.act_loop
    monkeypatch.setattr(kernels, "act_loop", lambda *a: fallback.append(1) or act_loop(*a))
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    play_both("ftpl-gr", {"over": "experts"}, 4, 3, True, BLOCKINGS["mixed"])
    assert not calls and len(fallback) == len(BLOCKINGS["mixed"])
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    play_both("ftpl-gr", {}, 5, 5, False, BLOCKINGS["mixed"])
    assert not calls


def test_the_kernel_refuses_an_adaptive_rate():
    from agents.bandit_core import AdaptiveFtplRate

    core = FtplGRCore(BatchRNG([1]), 3, eta=1.0, max_resamples=4,
                      adaptive=AdaptiveFtplRate(penalty=1.0, q0=1.0))
    with pytest.raises(ValueError, match="fixed rate"):
        ftpl.run_ftpl_block(core, choice=np.zeros(1, np.int64), losses=np.zeros((2, 1, 3)),
                            rows=np.zeros(1, np.int64), loss0=np.zeros(1), learn_first=False)


_run = ftpl.run_ftpl_block


def _half_scale(core, **kw):
    core.eta *= 2.0  # the kernel alone perturbs (and resamples) at half the scale
    try:
        return _run(core, **kw)
    finally:
        core.eta /= 2.0


def _rows_copied(core, **kw):
    return _run(core, **{**kw, "rows": np.array(kw["rows"])})


def test_a_kernel_only_bug_is_caught_and_a_harmless_change_passes(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    if not ftpl.ftpl_ready():
        pytest.skip("the kernel does not run here")
    monkeypatch.setattr(ftpl, "run_ftpl_block", _half_scale)
    with pytest.raises(ContractError) as err:
        check_agent("ftpl-gr", checks=["paths"])
    assert err.value.check == "paths" and "differs from act" in str(err.value), str(err.value)
    monkeypatch.setattr(ftpl, "run_ftpl_block", _rows_copied)
    assert check_agent("ftpl-gr", checks=["paths"]).passed == ["paths"]


def _play(agent, rounds: int, before: np.ndarray | None = None) -> np.ndarray:
    """``rounds`` rounds of a fixed game, going on after the actions ``before`` if given."""
    runs, arms = agent.num_envs, agent.n_arms
    obs = {"advice": np.broadcast_to(np.eye(arms), (runs, arms, arms)),
           "last_action": np.zeros(runs, np.int64), "last_loss": np.zeros((runs, 1))}
    start = 0 if before is None else len(before)
    if start:
        a = before[-1]
        obs = {**obs, "last_action": a.copy(), "last_loss": ((a + start - 1) % 3 / 2.0)[:, None]}
    played = []
    for t in range(start, start + rounds):
        a = agent.act(obs)
        played.append(a)
        obs = {**obs, "last_action": a.copy(), "last_loss": ((a + t) % 3 / 2.0)[:, None]}
    return np.stack(played)


def test_a_new_episode_goes_on_with_the_resampling_stream_a_seeded_reset_restarts_it():
    agent = agents.make("ftpl-gr", n_experts=3, n_arms=3, horizon=30, num_envs=2, seed=4)
    first = _play(agent, 30)
    pages, cursor = agent.core.pages, agent.core.pages.cursor.copy()
    assert cursor.max() > 0  # the episode drew redraws
    agent.reset()  # same rng: a fresh core continues the resampling streams
    assert agent.core.pages is pages and np.array_equal(agent.core.pages.cursor, cursor)
    assert not np.array_equal(_play(agent, 30), first)  # fresh randomness (main and pages)
    agent.reset(4)  # a seeded reset replays the learner built with that seed
    assert agent.core.pages is not pages
    np.testing.assert_array_equal(_play(agent, 30), first)


def _pages(agent):
    return getattr(agent, "core", getattr(agent, "base_learner", None)).pages


@pytest.mark.parametrize(
    "copier", [copy.deepcopy, lambda a: pickle.loads(pickle.dumps(a))], ids=["deepcopy", "pickle"]
)
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("ftpl-gr", {}), ("private-batched-bandit", {"base": "ftpl-gr", "epsilon": 4.0})],
)
def test_a_copy_goes_on_as_the_original_would(name, kwargs, copier):
    # Known answer: with the streams in a process-global registry keyed by the rng, a copy's
    # reset() restarted them from the seed (its new episode re-read episode 1's redraws).
    agent = agents.make(name, n_experts=3, n_arms=3, horizon=40, num_envs=2, seed=4, **kwargs)
    before = _play(agent, 25)
    twin = copier(agent)
    assert _pages(twin) is not _pages(agent) and _pages(twin).cursor.max() > 0
    rest = _play(agent, 15, before)
    np.testing.assert_array_equal(_play(twin, 15, before), rest)  # the episode goes on
    for a in (agent, twin):
        a.reset()  # unseeded: both go on with their streams, main and resampling
    np.testing.assert_array_equal(_play(twin, 40), _play(agent, 40))
    for key in ("page", "cursor"):
        assert getattr(_pages(twin), key).tobytes() == getattr(_pages(agent), key).tobytes()
    assert twin.rng.random((3,)).tobytes() == agent.rng.random((3,)).tobytes()
    twin.reset(4)  # a seeded reset restarts them: the learner built with seed 4
    fresh = agents.make(name, n_experts=3, n_arms=3, horizon=40, num_envs=2, seed=4, **kwargs)
    np.testing.assert_array_equal(_play(twin, 40), _play(fresh, 40))
