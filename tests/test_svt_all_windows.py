"""svt-restart's all-windows query (agents/_svt_all_windows.py) against its (B, T) reference.

The reference is the first implementation: :meth:`SVTRestart._window_regret` over every start
(invalid ones -inf), minus the slack looked up by window length, then the max. Both paths
(compiled and numpy) and the kernel's Python form must give its floats bit for bit, every round,
with restarts (runs in different epochs), per-run slack tables, both modes and epsilon = inf.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import JIT_PATHS, use_jit_path

from agents._svt_all_windows import (
    AllWindowsQuery,
    all_windows_query_kernel,
    all_windows_query_numpy,
)
from agents.svt_restart import SVTRestart

pytestmark = pytest.mark.filterwarnings("ignore:svt-restart with mode='paper' is NOT CERTIFIED")


def _reference(agent: SVTRestart, t: int, skip_first: bool = False) -> np.ndarray:
    """``_learn``'s query before agents/_svt_all_windows.py (``skip_first``: a planted bug)."""
    regret, length = agent._window_regret(t)
    if skip_first:  # drop each run's earliest valid start
        first = np.maximum(agent.epoch_start - 1, 0)
        regret = regret.copy()
        regret[np.arange(agent.num_envs), first] = -np.inf
    table = agent._slack_table(t)
    if table.ndim == 1:
        slack = table[np.maximum(length, 1)]
    else:
        slack = table.ravel()[agent._slack_offsets + np.maximum(length, 1)]
    return np.maximum.reduce(regret - slack, axis=1)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.int64), b.view(np.int64))


def _stream(horizon: int, runs: int, n: int, seed: int) -> np.ndarray:
    """Bernoulli losses whose best expert changes every 50 rounds, some rounds uniform."""
    g = np.random.default_rng(seed)
    means = np.full((horizon, runs, n), 0.8)
    means[np.arange(horizon), :, (np.arange(horizon) // 50) % n] = 0.05
    coin = (g.random((horizon, runs, n)) < means).astype(float)
    return np.where(g.random((horizon, runs, 1)) < 0.8, coin, g.random((horizon, runs, n)))


CASES = [
    {"tuning": "paper"},
    {"tuning": "paper", "epsilon": math.inf},
    {"tuning": "paper", "threshold_scale": 0.02},
    {"tuning": "paper", "threshold_scale": 0.02, "mode": "paper"},
    {"boundary": "normal-mixture", "threshold_scale": 0.05},
    {"boundary": "normal-mixture", "threshold_scale": 0.05, "run_epsilons": [0.5, 4.0, 64.0]},
]


@pytest.mark.parametrize("path", JIT_PATHS)
def test_query_equals_reference_every_round(monkeypatch, path):
    """Every round of every case: the query (and the kernel's Python form) is the reference's."""
    use_jit_path(path, monkeypatch)
    call = AllWindowsQuery.__call__
    seen = {"rounds": 0, "split": 0, "caught": 0}
    agent_of: dict[int, SVTRestart] = {}

    def checked(self, cum, prefix, epoch_start, t, table):
        agent = agent_of[id(self)]
        got = call(self, cum, prefix, epoch_start, t, table)
        want = _reference(agent, t)
        assert _same(got, want), (t, got, want)
        rows = table.reshape(1, -1) if table.ndim == 1 else table
        out = np.zeros(agent.num_envs)
        starts = np.zeros(agent.horizon + 1, dtype=np.int64)
        all_windows_query_kernel.py_func(cum, prefix, epoch_start, t, rows, starts, out)
        assert _same(out, want), t
        # the planted bug (each run's first window left out) changes some round's query
        seen["caught"] += not _same(_reference(agent, t, skip_first=True), want)
        seen["rounds"] += 1
        seen["split"] += len(set(epoch_start.tolist())) > 1
        return got

    monkeypatch.setattr(AllWindowsQuery, "__call__", checked)
    restarts = 0
    for case, kwargs in enumerate(CASES):
        kwargs = dict(kwargs)
        run_eps = kwargs.pop("run_epsilons", None)
        agent = SVTRestart(5, 240, window_grid="all", num_envs=3, seed=[case, 7, 9], **kwargs)
        if run_eps is not None:
            assert agent.set_run_epsilons(run_eps)
            assert agent._slack_table(1).ndim == 2  # the per-run table is exercised
        agent_of[id(agent._all_windows)] = agent
        for row in _stream(240, 3, 5, seed=case):  # act: compiled blocks skip the wrapper
            agent.act(row)
        restarts += int(agent.restarts.sum())
    assert seen["rounds"] == len(CASES) * 239
    assert restarts >= 50 and seen["split"] >= 100  # runs in different epochs: per-run masks
    assert seen["caught"] >= 50


@pytest.mark.parametrize("path", JIT_PATHS)
def test_random_states_with_restarts_and_nan(monkeypatch, path):
    """Random sums, epoch starts and tables: the query equals a loop over the definition."""
    use_jit_path(path, monkeypatch)
    g = np.random.default_rng(11)
    b, n, horizon = 4, 6, 300
    prefix = np.zeros((b, n + 1, horizon + 1))
    prefix[:, :, 1:] = np.cumsum(g.random((b, n + 1, horizon)), axis=2)
    query = AllWindowsQuery(b, n, horizon)
    checked = 0
    for trial in range(40):
        t = int(g.integers(1, horizon + 1))
        cum = prefix[:, :, t].copy()
        epoch_start = g.integers(1, t + 2, size=b)  # t + 1: a run that restarted at t
        per_run = trial % 2 == 1
        table = g.random((b, horizon + 1) if per_run else horizon + 1) * 20.0
        want = np.full(b, -np.inf)
        for r in range(b):
            row = table[r] if per_run else table
            for u in range(max(epoch_start[r] - 1, 0), t):
                diff = cum[r] - prefix[r, :, u]
                want[r] = max(want[r], (diff[n] - diff[:n].min()) - row[t - u])
        got = query(cum, prefix, epoch_start, t, table)
        assert _same(got, want), trial
        checked += int(np.isfinite(want).sum())
    assert checked >= 100
    # A NaN loss: that run's query is NaN from then on (numpy's min/max propagate it).
    nan_prefix = prefix.copy()
    nan_prefix[1, 2, 150:] = np.nan
    cum = nan_prefix[:, :, 200].copy()
    got = query(cum, nan_prefix, np.ones(b, dtype=np.int64), 200, table[0])
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2, 3]]).all()
    assert _same(
        np.delete(got, 1), np.delete(query(cum, prefix, np.ones(b, int), 200, table[0]), 1)
    )


def test_numpy_chunk_size_does_not_change_the_query():
    """A harmless change (the numpy path's chunk of starts) gives the same floats."""
    g = np.random.default_rng(2)
    b, n, horizon = 3, 4, 500
    prefix = np.zeros((b, n + 1, horizon + 1))
    prefix[:, :, 1:] = np.cumsum(g.random((b, n + 1, horizon)), axis=2)
    t, epoch_start = 480, np.array([1, 200, 455])
    cum, table = prefix[:, :, t].copy(), g.random((1, horizon + 1)) * 30.0
    outs = []
    for chunk in (16, 37, 500):
        out = np.zeros(b)
        bufs = np.zeros((b, n + 1, chunk)), np.zeros((b, chunk)), np.zeros((b, chunk))
        all_windows_query_numpy(cum, prefix, epoch_start, t, table, *bufs, out)
        outs.append(out)
    assert all(_same(outs[0], o) for o in outs[1:]) and np.isfinite(outs[0]).all()


def _random_games(query_of, trials: int = 60) -> tuple[int, int]:
    """Random sums (learner rows that sometimes lose a lot) and starts: (mismatches, calls)."""
    import agents._svt_all_windows as module

    g = np.random.default_rng(5)
    b, n, horizon = 3, 5, 400
    calls = [0]
    inner = module._min_over_experts

    def counted(cum, prefix, k):
        calls[0] += 1
        return inner(cum, prefix, k)

    mismatches = 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "_min_over_experts", counted)
        # the Python form of the per-run helper (a compiled run replaced it by numba's)
        mp.setattr(module, "run_query", getattr(module.run_query, "py_func", module.run_query))
        for _ in range(trials):
            steps = g.random((b, n + 1, horizon)) * g.random((b, n + 1, 1))
            steps[:, n] *= 1.0 + 2.0 * g.random((b, 1))  # the learner's row: higher losses
            prefix = np.zeros((b, n + 1, horizon + 1))
            prefix[:, :, 1:] = np.cumsum(steps, axis=2)
            t = int(g.integers(2, horizon + 1))
            epoch_start = g.integers(1, t + 2, size=b)
            table = np.zeros((1, horizon + 1))
            table[0, 1:] = g.random() * 3.0 * np.sqrt(np.arange(horizon))
            cum = prefix[:, :, t].copy()
            want = np.full(b, -np.inf)
            module.all_windows_query_numpy(
                cum, prefix, epoch_start, t, table,
                np.zeros((b, n + 1, 64)), np.zeros((b, 64)), np.zeros((b, 64)), want,
            )  # fmt: skip
            got = np.zeros(b)
            query_of(cum, prefix, epoch_start, t, table, np.zeros(horizon + 1, np.int64), got)
            mismatches += not _same(got, want)
    return mismatches, calls[0]


def test_kernel_pruning_is_exact_and_a_wrong_bound_is_caught(monkeypatch):
    """The kernel's Python form skips most starts and still gives the numpy path's floats; its
    group bound read at the group's first start (not a bound: minima shrink with the start) is
    caught; another group size (harmless) passes."""
    import agents._svt_all_windows as module

    kernel = module.all_windows_query_kernel.py_func
    mismatches, calls = _random_games(kernel)
    assert mismatches == 0 and 0 < calls < 60 * 3 * 400 // 4  # pruned, and exact
    monkeypatch.setattr(module, "_GROUP", 3)
    assert _random_games(kernel)[0] == 0
    monkeypatch.setattr(module, "_GROUP", 16)
    monkeypatch.setattr(module, "_group_end", lambda k, w: k - k % 16)
    assert _random_games(kernel)[0] > 0


def _bernstein_all_before(agent: SVTRestart, t: int) -> np.ndarray:
    """The all-windows Bernstein/betting query as first written: every one of the T columns."""
    from agents.svt_restart import bernstein_boundary, betting_boundary

    n, horizon = agent.n_experts, agent.horizon
    starts = np.arange(horizon)
    prefix = np.swapaxes(agent._prefix[:, :, :horizon], 1, 2)  # (B, T, N+1) as it was stored
    prefix_sq = agent._prefix_sq[:, :horizon]
    experts = np.swapaxes(agent._cum[:, None, :n] - prefix[..., :n], 1, 2)
    learner = agent._cum[:, None, n] - prefix[..., n]
    second = np.swapaxes(agent._cum_sq[:, None, :] - prefix_sq, 1, 2)
    empty = ~((starts[None, :] < t) & (starts[None, :] >= agent.epoch_start[:, None] - 1))
    if agent._betting:
        bound = betting_boundary(
            np.maximum(second, 0.0), learner[:, None, :] - experts, agent._reg[1],
            agent.threshold_scale,
        )  # fmt: skip
    else:
        bound = bernstein_boundary(np.maximum(second, 0.0), agent._reg[1])
    if agent._runs is None:
        const = agent._reg[0] + agent.alpha + 1.0
    else:
        const = (agent._runs["c0"] + agent._runs["alpha"] + 1.0)[:, :, None]
    query = learner[:, None, :] - experts - agent.threshold_scale * (bound + const)
    query = np.where(empty[:, None, :], -np.inf, query)
    return np.maximum.reduce(query.reshape(agent.num_envs, -1), axis=1)


@pytest.mark.parametrize("boundary", ["betting", "bernstein"])
def test_bernstein_all_windows_reads_the_valid_starts_only_with_the_same_floats(
    monkeypatch, boundary
):
    """The all-windows Bernstein/betting query over the epoch's starts only equals the query
    over all T columns, every round, bit for bit (restarts: runs in different epochs)."""
    reference = SVTRestart._bernstein_query_reference
    seen = {"rounds": 0, "split": 0}

    def checked(self, t):
        got = reference(self, t)
        assert _same(got, _bernstein_all_before(self, t)), t
        seen["rounds"] += 1
        seen["split"] += len(set(self.epoch_start.tolist())) > 1
        return got

    monkeypatch.setattr(SVTRestart, "_bernstein_query_reference", checked)
    restarts = 0
    for case, kwargs in enumerate([{"threshold_scale": 0.05}, {"run_epsilons": [0.5, 8.0, 64.0]}]):
        kwargs = dict(kwargs)
        run_eps = kwargs.pop("run_epsilons", None)
        agent = SVTRestart(
            4, 200, window_grid="all", boundary=boundary, num_envs=3, seed=[case, 5, 6], **kwargs
        )
        if run_eps is not None:
            assert agent.set_run_epsilons(run_eps)
        for row in _stream(200, 3, 4, seed=10 + case):
            agent.act(row)
        restarts += int(agent.restarts.sum())
    assert seen["rounds"] == 2 * 199 and restarts >= 10 and seen["split"] >= 50
