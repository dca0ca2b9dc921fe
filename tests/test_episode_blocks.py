"""The episode loop in blocks gives the rows of the per-round loop, float for float.

The default comparison's learners (a small grid: every baseline and private full-information
learner, finite and infinite epsilons, shared loss streams) on the block path and with
``DP_EXPERTS_NO_JIT=1`` (the per-round reference loop); an adaptive env never takes blocks.
"""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
from _block_rows import assert_same_rows, rows_on_path

from dp_experts_env._jit import numba_available
from dp_experts_env.evaluation.defaults import default_grid
from dp_experts_env.evaluation.episode import uses_blocks
from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid


@pytest.mark.slow
def test_default_comparison_rows_are_the_same_in_blocks(monkeypatch):
    pytest.importorskip("numba")
    grid = default_grid(horizon=300, seeds=2, epsilons=(2.0, math.inf))
    cells = grid.cells()
    assert_same_rows(
        rows_on_path(cells, monkeypatch, True), rows_on_path(cells, monkeypatch, False)
    )


def test_baselines_rows_are_the_same_in_blocks(monkeypatch):
    pytest.importorskip("numba")
    grid = default_grid(
        horizon=200,
        seeds=3,
        epsilons=(math.inf,),
        agents=[
            "uniform",
            "follow-the-leader",
            "hedge",
            "fixed-share",
            "shrinking-dartboard",
            "private-lazy-hedge",
        ],
    )
    cells = grid.cells()
    assert_same_rows(
        rows_on_path(cells, monkeypatch, True), rows_on_path(cells, monkeypatch, False)
    )


def test_adaptive_envs_and_the_numpy_path_take_no_blocks(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    kw = {"num_envs": 2, "vectorization_mode": "vector_entry_point", "horizon": 10}
    adaptive = gym.make_vec("DPExperts-Adaptive-v0", **kw)
    shift = gym.make_vec("DPExperts-Shift-v0", **kw)
    assert not uses_blocks(adaptive)
    assert uses_blocks(shift) == numba_available()
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    assert not uses_blocks(shift)


def test_an_adaptive_grid_gives_the_same_rows(monkeypatch):
    grid = Grid(
        agents=[AgentEntry("hedge", {})],
        envs=[EnvEntry("DPExperts-Adaptive-v0", {"horizon": 50, "n_experts": 4})],
        epsilons=[math.inf],
        n_seeds=2,
    )
    cells = grid.cells()
    assert_same_rows(
        rows_on_path(cells, monkeypatch, True), rows_on_path(cells, monkeypatch, False)
    )


def _traced_peak(horizon: int) -> int:
    import tracemalloc

    from dp_experts_env.evaluation.episode import run_one

    grid = Grid(
        agents=[AgentEntry("hedge", {})],
        envs=[EnvEntry("DPExperts-Shift-v0", {"horizon": horizon, "n_experts": 10})],
        epsilons=[math.inf],
        n_seeds=1,
    )
    tracemalloc.start()
    try:
        rows = run_one(grid.cells()[0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows[-1]["round"] == horizon
    return peak


@pytest.mark.slow
def test_a_long_single_learner_episode_runs_in_flat_memory(monkeypatch):
    """T = 3 x 10^6 takes no more memory than T = 10^6 (blocks are capped at BLOCK_ROUNDS
    rounds, curves kept at the recorded rounds only): ~6.5 MB traced either way, and at 10^7
    (benchmarks/README.md)."""
    pytest.importorskip("numba")
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    _traced_peak(1000)  # imports and compilation outside the measurement
    short, long = _traced_peak(10**6), _traced_peak(3 * 10**6)
    assert long < 1.1 * short, (short, long)
