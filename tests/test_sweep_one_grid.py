"""A claim's sweep is one grid (issue 25 item 5): its points share a loss stream per env and a
private learner is one batch over their epsilons; the rows equal one grid per epsilon."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid
from dp_experts_env.evaluation.claims import Point, Sweep
from dp_experts_env.evaluation.reproduce import _label, _point_rows, sweep_rows

ENV_ID = "DPExperts-Shift-v0"
ENV = {"n_experts": 4, "n_shifts": 1, "gap": 0.3, "horizon": 120}


def _grid(**kwargs):
    envs = [EnvEntry(ENV_ID, ENV, label="a"), EnvEntry(ENV_ID, {**ENV, "gap": 0.2}, label="b")]
    return Grid(
        agents=[AgentEntry("private-shrinking-dartboard"), AgentEntry("hedge")],
        envs=envs,
        epsilons=[1.0, 2.0, math.inf],
        n_seeds=2,
        **kwargs,
    )


def test_pairs_keep_only_the_listed_cells():
    cells = _grid(pairs=[("a", 2.0), ("b", math.inf)]).cells()
    got = sorted((c.env.label, c.agent.name, c.epsilon) for c in cells)
    assert got == [
        ("a", "hedge", None),
        ("a", "private-shrinking-dartboard", 2.0),
        ("b", "hedge", None),
        ("b", "private-shrinking-dartboard", math.inf),
    ]
    full = {c.cell_id for c in _grid().cells()}
    assert {c.cell_id for c in cells} <= full  # the same cells as in the cross product
    grid = _grid(pairs=[("a", 2.0)])
    assert Grid.from_dict(grid.to_dict()).cells() == grid.cells()
    assert "pairs" not in _grid().to_dict()  # grids without pairs are stored as before


@pytest.mark.parametrize(
    "pairs, word",
    [
        ([("c", 1.0)], "not an env"),
        ([("a", 4.0)], "not in epsilons"),
        ([("a",)], "each pair"),
        ([], "at least one"),
        ([("a", -1.0)], "pairs"),
    ],
)
def test_bad_pairs_are_refused_by_name(pairs, word):
    with pytest.raises(ValueError, match="pairs") as err:
        _grid(pairs=pairs)
    assert word in str(err.value)


@pytest.mark.slow
def test_a_sweep_over_epsilons_is_one_grid_with_the_rows_of_one_grid_per_epsilon(tmp_path):
    pts = tuple(Point(e, ENV, e) for e in (0.5, 2.0, 8.0)) + (Point(math.inf, ENV, math.inf),)
    sweep = Sweep("d", "private-shrinking-dartboard", ENV_ID, pts, seeds=3, quick_seeds=3)

    class Named:
        name = "c"

    merged = sweep_rows(Named, sweep, tmp_path / "one", quick=True, backend="serial")
    run = {"backend": "serial", "n_jobs": None, "address": None}
    apart = pd.concat(
        [
            _point_rows(sweep.agent, {}, ENV_ID, (p,), 3, tmp_path / "apart" / _label(p.x), run)
            for p in pts
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(merged, apart)
    # one results folder for the sweep: the loss stream was simulated once
    assert [p.name for p in (tmp_path / "one" / "runs" / "c").iterdir()] == ["d"]
    # `dp-experts verify` reads the grid (pairs included) back and finds every run current
    from dp_experts_env.evaluation.verify import verify_tree

    folders, stale = verify_tree(tmp_path / "one")
    assert len(folders) == 1 and folders[0].ok and not stale
