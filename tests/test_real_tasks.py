"""The real-data tasks (oblivious families ``digits`` and ``breast_cancer``): shipped matrices,
documented change structure and S, built by gym.make with numpy alone."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import agents
import dp_experts_env  # noqa: F401 - registers the ids
from dp_experts_env.adversaries import families
from dp_experts_env.adversaries.real_tasks import DATA_DIR, REAL_TASKS, load_task

ROOT = Path(__file__).resolve().parents[1]
#: (T, N, S) of each task, as documented in docs/environments.md.
SHAPES = {"digits": (1797, 8, 4), "breast_cancer": (569, 8, 2)}


def test_the_tasks_are_registered_oblivious_families():
    assert set(REAL_TASKS) <= set(families("oblivious"))


@pytest.mark.parametrize("task", REAL_TASKS)
def test_gym_make_plays_the_shipped_matrix_with_its_switch_budget(task):
    t, n, s = SHAPES[task]
    env = gym.make("DPExperts-Oblivious-v0", family=task)
    base = env.unwrapped
    assert (base.horizon, base.n_experts, base.n_switches) == (t, n, s)
    matrix = load_task(task)["losses"]
    assert matrix.shape == (t, n) and set(np.unique(matrix)) <= {0.0, 1.0}
    obs, _ = env.reset(seed=0)
    shifts, rows = [], []
    for _ in range(t):
        obs, _, done, _, info = env.step(0)
        rows.append(obs)
        shifts.append(info["shift"])
    np.testing.assert_array_equal(np.array(rows), matrix)  # the replay is the matrix, row by row
    starts = load_task(task)["segment_starts"]
    assert (np.flatnonzero(shifts) + 1).tolist() == (starts[1:] + 1).tolist()
    assert info["segment"] == s and done


def test_the_best_expert_changes_at_the_documented_change_points():
    task = load_task("digits")
    bounds = [*task["segment_starts"].tolist(), len(task["losses"])]
    best = [
        task["losses"][a:b].sum(axis=0).argmin()
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    assert len(set(best)) >= 3, best  # S = 4 is not a formality: the leader moves


def test_dynamic_regret_uses_S_and_differs_from_static():
    env = gym.make("DPExperts-Oblivious-v0", family="digits")
    agent = agents.make("follow-the-leader", env=env, seed=0)
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        obs, _, done, _, info = env.step(agent.act(obs))
    # Brute force: the best 5-segment comparator with change points anywhere is at least as
    # good as the one with the documented change points, which the known matrix gives.
    matrix = load_task("digits")["losses"]
    bounds = [*load_task("digits")["segment_starts"].tolist(), len(matrix)]
    piecewise = sum(
        matrix[a:b].sum(axis=0).min() for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    )
    paid = info["static_regret"] + matrix.sum(axis=0).min()
    assert info["dynamic_regret"] >= paid - piecewise - 1e-9
    assert info["dynamic_regret"] > info["static_regret"] + 50


def test_a_prefix_horizon_counts_the_change_points_inside_it():
    env = gym.make("DPExperts-Oblivious-v0", family="digits", horizon=400)
    assert env.unwrapped.n_switches == 1  # one change point (round 360) before round 400
    with pytest.raises(ValueError, match="n_experts=5.*N=8"):
        gym.make("DPExperts-Oblivious-v0", family="digits", n_experts=5)


def test_shipped_files_are_small_and_hold_no_pickles():
    files = sorted(DATA_DIR.glob("*.npz"))
    assert {f.stem for f in files} == set(REAL_TASKS)
    assert sum(f.stat().st_size for f in files) < 300_000
    for f in files:
        with np.load(f, allow_pickle=False) as data:  # raises on object arrays
            assert data["experts"].dtype.kind == "U"


def test_provenance_and_licence_are_documented():
    doc = (ROOT / "docs" / "environments.md").read_text()
    for needle in ("digits", "breast_cancer", "CC BY 4.0", "BSD-3-Clause", "make_real_tasks.py"):
        assert needle in doc, needle


@pytest.mark.slow
def test_the_script_rebuilds_the_shipped_breast_cancer_matrix():
    """Regenerated with scikit-learn (skipped where it is not installed: it is not a dependency)."""
    pytest.importorskip("sklearn")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_real_tasks
    finally:
        sys.path.pop(0)
    matrix, names, starts = make_real_tasks.losses("breast_cancer")
    shipped = load_task("breast_cancer")
    assert names == shipped["experts"]
    np.testing.assert_array_equal(starts, shipped["segment_starts"])
    mismatch = np.mean(matrix != shipped["losses"])
    # Another scikit-learn version may change a few predictions, never the task.
    assert mismatch < 0.02, (mismatch, shipped["sklearn_version"])


def test_the_transfer_figure_plots_the_table_values():
    """The figure's points are 1 - m / u of the summary table: uniform at 0, known ratios."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import transfer_figure
    finally:
        sys.path.pop(0)
    inf = float("inf")
    summary = pd.DataFrame(
        {
            "env": ["DPExperts-Oblivious-v0[family=digits]"] * 3 + ["DPExperts-Shift-v0[x]"] * 2,
            "agent": ["uniform", "hedge", "limited-updates", "uniform", "hedge"],
            "epsilon": [inf, inf, 1.0, inf, inf],
            "dynamic_regret_mean": [200.0, 50.0, 100.0, 10.0, 12.0],
        }
    )
    got = transfer_figure.points(summary)
    np.testing.assert_allclose(got["score"], [0.0, 0.75, 0.5, 0.0, -0.2], rtol=0, atol=1e-12)
    assert got["learner"].tolist()[2] == "limited-updates eps=1"
    assert got["env"].tolist()[0] == "digits (real)"
