"""Units sized from a Ray cluster's CPUs, split by seed blocks (issue 25 item 6)."""

from __future__ import annotations

import pandas as pd
import pytest

import agents
from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, backends, run_grid
from dp_experts_env.evaluation.episode import run_cells

ENV_ID = "DPExperts-Shift-v0"


def _grid(seeds: int, agents=("hedge",)) -> Grid:
    return Grid(
        agents=[AgentEntry(a) for a in agents],
        envs=[EnvEntry(ENV_ID, {"horizon": 40, "n_experts": 3})],
        n_seeds=seeds,
    )


def test_seed_blocks_give_as_many_units_as_cpus_and_cover_every_seed_once():
    cells = _grid(8).cells()  # one cell, 8 seeds
    assert len(backends.plan_units(cells, 8)) == 1  # learners alone cannot split one cell
    units = backends.plan_units(cells, 8, seed_blocks=True)
    assert len(units) == 8
    seeds = sorted(i for unit in units for cell in unit for i in cell.seed_indices)
    assert seeds == list(range(8))
    # Many seeds: blocks of at least MIN_SEED_BLOCK before learners are split.
    cells = _grid(64, ("hedge", "uniform")).cells()
    units = backends.plan_units(cells, 4, seed_blocks=True)
    assert len(units) == 4 and all(len(u) == 2 for u in units)
    assert all(len(u[0].seed_indices) == 16 for u in units)
    # Few seeds: learners first (a batch of 10 runs is worth keeping), then seeds.
    cells = _grid(10, ("hedge", "uniform")).cells()
    units = backends.plan_units(cells, 2, seed_blocks=True)
    assert sorted(len(u) for u in units) == [1, 1]


def test_a_seed_block_plays_the_rows_of_the_whole_cell():
    (cell,) = _grid(6).cells()
    ((_, whole),) = run_cells([cell])
    parts = [run_cells([cell.with_seeds(s)])[0][1] for s in ((0, 1), (2, 3, 4), (5,))]
    _, merged = backends._merge(cell, [(cell.with_seeds((i,)), p) for i, p in enumerate(parts)])
    key = lambda r: (r["seed"], r["round"])  # noqa: E731
    assert sorted(merged, key=key) == sorted(whole, key=key)


def _default(horizon: int = 10_000, seeds: int = 10):
    from dp_experts_env.evaluation import default_grid

    return default_grid(horizon=horizon, seeds=seeds).cells()


def _covered(cells, tasks) -> list:
    """(whole cell id, seed index) of every run the tasks play, sorted."""
    whole = backends.CellCompletion(cells).whole
    runs = [(whole(c).cell_id, i) for t in tasks for u in t for c in u for i in c.seed_indices]
    return sorted(runs)


def test_ray_tasks_have_a_floor_and_cover_every_run_once(monkeypatch):
    """Issue 40 item 2. The default compare (60 cells, ~6 s estimated) is one task on 24 CPUs,
    not 24 tiny ones (the planner without a floor, the mutant: ``task_seconds=0``); a grid of
    k floors of work is k tasks; a grid of more than 24 floors fills the 24 CPUs."""
    cells = _default()
    assert backends.estimate_seconds(cells) < backends.RAY_TASK_SECONDS
    ((unit,),) = backends.ray_tasks(cells, 24)
    assert sorted(c.cell_id for c in unit) == sorted(c.cell_id for c in cells)
    assert len(backends.ray_tasks(cells, 24, task_seconds=0)) == 24  # the mutant: no floor
    for seeds, cpus in ((40, 24), (400, 24), (400, 8)):
        big = _default(seeds=seeds)
        tasks = backends.ray_tasks(big, cpus)
        expected = min(cpus, int(backends.estimate_seconds(big) // backends.RAY_TASK_SECONDS))
        assert len(tasks) == expected >= 1, (seeds, cpus)
        loads = [backends.estimate_seconds([c for u in t for c in u]) for t in tasks]
        if len(tasks) < cpus:  # none below the floor
            assert min(loads) >= 0.5 * backends.RAY_TASK_SECONDS, loads
        assert _covered(big, tasks) == sorted(
            (c.cell_id, i) for c in big for i in c.seed_indices
        )  # every run of every cell exactly once
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "0")
    assert len(backends.ray_tasks(cells, 24)) == 24
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "-1")
    with pytest.raises(ValueError, match="DP_EXPERTS_RAY_TASK_SECONDS"):
        backends.ray_tasks(cells, 24)


def test_small_units_are_bundled_and_heavy_learners_weigh_more():
    """Many envs below the floor: one task holding every unit (each a group that shares an
    episode), not one task per env. Weighed by measured cost, one thompson cell (~5.5 us per
    run-round) outweighs an exp3 and an adap-ucb cell (~0.5 us each), so a split by cost puts
    thompson alone."""
    envs = [EnvEntry(ENV_ID, {"horizon": 40, "n_experts": n}) for n in (2, 3, 4, 5)]
    cells = Grid(agents=["hedge", "uniform"], envs=envs, n_seeds=4).cells()
    ((*units,),) = backends.ray_tasks(cells, 24)
    assert len(units) == 4  # four envs, one task
    bandit = EnvEntry("DPExperts-Bandit-v0", {"horizon": 1000})
    names = ["thompson", "exp3", "adap-ucb"]
    mixed = Grid(agents=names, envs=[bandit], n_seeds=10).cells()
    heavy = backends.estimate_seconds([c for c in mixed if c.agent.name == "thompson"])
    assert heavy > backends.estimate_seconds([c for c in mixed if c.agent.name != "thompson"])
    parts = backends.plan_units(mixed, 2)
    assert sorted(sorted(c.agent.name for c in u) for u in parts) == [
        ["adap-ucb", "exp3"],
        ["thompson"],
    ]


def test_every_built_in_learner_has_a_measured_weight():
    """The planner's weights cover the registry (ppo: its frozen play), and every
    weight names a registered learner, so a renamed or new built-in cannot silently count the
    default."""
    names = {entry["name"] for entry in agents.available()}
    assert set(backends.LEARNER_NS) <= names
    assert names - set(backends.LEARNER_NS) == set()


@pytest.mark.slow
def test_ray_tasks_play_the_rows_of_serial(tmp_path, monkeypatch, ray_cluster):
    """On the run's Ray instance (8 CPUs): below one task's floor the grid plays in this process
    (no task planned); with no floor (``DP_EXPERTS_RAY_TASK_SECONDS=0``) it is split into seed
    blocks across 8 tasks; rows equal the serial backend's either way, and each cell comes back
    once, whole."""
    sizes = []
    plan = backends.ray_tasks

    def recording(cells, cpus, task_seconds=None):
        tasks = plan(cells, cpus, task_seconds)
        sizes.append(len(tasks))
        return tasks

    monkeypatch.setattr(backends, "ray_tasks", recording)
    grid = _grid(8, ("hedge", "uniform"))  # 8 seeds x 2 cells
    local = run_grid(grid, tmp_path / "local", backend="serial", progress=False)
    assert ray_cluster.cluster_resources()["CPU"] == 8
    floored = run_grid(grid, tmp_path / "floored", backend="ray", progress=False)
    assert sizes == []  # not one Ray task
    pd.testing.assert_frame_equal(local, floored)
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "0")
    remote = run_grid(grid, tmp_path / "ray", backend="ray", progress=False)
    # execute() still yields each cell once, whole, its seed blocks' rows merged.
    merged = {c.cell_id: rows for c, rows in backends.execute(grid.cells(), backend="ray")}
    assert sizes[-1] >= 8
    pd.testing.assert_frame_equal(local, remote)
    # Each task's runs come back as arrays and are stored as they arrive: one file per task.
    assert len(list((tmp_path / "ray" / "cells").glob("unit-*.pack"))) == sizes[-1]
    key = lambda r: (r["seed"], r["round"])  # noqa: E731
    for cell, rows in backends.execute(grid.cells(), backend="serial"):
        assert sorted(merged.pop(cell.cell_id), key=key) == sorted(rows, key=key)
    assert merged == {}
