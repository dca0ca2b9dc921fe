"""Units sized from a Ray cluster's CPUs, split by seed blocks (issue 25 item 6)."""

from __future__ import annotations

import pandas as pd
import pytest

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


@pytest.mark.slow
def test_ray_with_more_cpus_than_the_machine_runs_as_many_units(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    sizes = []
    plan = backends.plan_units

    def recording(cells, n_units=1, **kwargs):
        units = plan(cells, n_units, **kwargs)
        sizes.append(len(units))
        return units

    monkeypatch.setattr(backends, "plan_units", recording)
    grid = _grid(8, ("hedge", "uniform"))  # 8 seeds x 2 cells
    local = run_grid(grid, tmp_path / "local", backend="serial", progress=False)
    ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
    try:
        assert ray.cluster_resources()["CPU"] == 8
        remote = run_grid(grid, tmp_path / "ray", backend="ray", progress=False)
        # execute() still yields each cell once, whole, its seed blocks' rows merged.
        merged = {c.cell_id: rows for c, rows in backends.execute(grid.cells(), backend="ray")}
    finally:
        ray.shutdown()
    assert sizes[-1] >= 8
    pd.testing.assert_frame_equal(local, remote)
    # Each task's runs come back as arrays and are stored as they arrive: one file per unit.
    assert len(list((tmp_path / "ray" / "cells").glob("unit-*.pack"))) == sizes[-1]
    key = lambda r: (r["seed"], r["round"])  # noqa: E731
    for cell, rows in backends.execute(grid.cells(), backend="serial"):
        assert sorted(merged.pop(cell.cell_id), key=key) == sorted(rows, key=key)
    assert merged == {}
