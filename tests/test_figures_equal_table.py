"""Every figure equals the table: each plotted end point is the summary.csv mean of its run.

The default comparison (every default learner, epsilon in {0.5, 2, 8, 32, inf}; and
randomized-prefix-softmax:paper, whose certificate is capped below the requests) at a small
horizon and seed count, played at two horizons so that all three figure kinds are drawn. Each
drawn curve or point carries a gid ``agent|epsilon`` (set by plots.py) that names the summary row
it stands for.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dp_experts_env.evaluation import AgentEntry, EnvEntry, default_grid, run_grid
from dp_experts_env.evaluation.plots import (
    plot_regret_vs_epsilon,
    plot_regret_vs_horizon,
    plot_regret_vs_round,
)
from dp_experts_env.evaluation.report import write_report

matplotlib.use("Agg")

METRIC = "dynamic_regret"


@pytest.fixture(scope="module")
def default_results(tmp_path_factory):
    grid = default_grid(horizon=300, seeds=3)
    # A learner that certifies less than requested (the printed cap: 0.25), requested by name.
    grid.agents.append(AgentEntry("randomized-prefix-softmax:paper", {}))
    grid.envs.append(EnvEntry(grid.envs[0].id, {**grid.envs[0].params, "horizon": 600}))
    grid.__post_init__()
    out = tmp_path_factory.mktemp("default")
    frame = run_grid(grid, out, backend="serial", progress=False, report=False)
    write_report(frame, out, METRIC)
    summary = pd.read_csv(out / "summary.csv")
    return frame, summary


def _mean(summary: pd.DataFrame, env: str, agent: str, eps: float) -> float:
    eps_col = summary["epsilon"].astype(float)
    same_eps = (eps_col == eps) if math.isfinite(eps) else ~np.isfinite(eps_col)
    row = summary[(summary["env"] == env) & (summary["agent"] == agent) & same_eps]
    assert len(row) == 1, (env, agent, eps)
    return float(row[f"{METRIC}_mean"].iloc[0])


def _tagged(ax):
    return [line for line in ax.get_lines() if line.get_gid()]


@pytest.mark.slow
def test_regret_vs_round_end_points_equal_the_summary(default_results):
    frame, summary = default_results
    private = set(frame.loc[frame["private"], "agent"])
    for env in frame["env"].unique():
        fig = plot_regret_vs_round(frame, env, METRIC)
        titles = [ax.get_title() for ax in fig.axes]
        # One panel per requested epsilon, eps = inf once, as "no noise".
        assert titles == [
            "ε = 0.5 requested",
            "ε = 2 requested",
            "ε = 8 requested",
            "ε = 32 requested",
            "no noise (ε = ∞)",
        ]
        for ax, panel_eps in zip(fig.axes, (0.5, 2.0, 8.0, 32.0, math.inf), strict=True):
            lines = _tagged(ax)
            drawn = {line.get_gid().split("|")[0] for line in lines}
            assert drawn == set(frame["agent"])  # every learner once per panel
            for line in lines:
                agent, eps = line.get_gid().split("|")
                eps = float(eps)
                # A panel holds only its own epsilon (non-private references are eps = inf).
                assert eps == panel_eps or (agent not in private and math.isinf(eps))
                y_end = float(np.asarray(line.get_ydata())[-1])
                assert y_end == pytest.approx(_mean(summary, env, agent, eps), rel=1e-12)


@pytest.mark.slow
def test_regret_vs_epsilon_points_equal_the_summary_at_the_certified_epsilon(default_results):
    frame, summary = default_results
    env = frame["env"].unique()[0]
    final = frame[(frame["env"] == env) & (frame["round"] == frame["horizon"])]
    fig = plot_regret_vs_epsilon(frame, env, METRIC)
    ax = fig.axes[0]
    seen = set()
    for line in _tagged(ax):
        agent, eps_list = line.get_gid().split("|")
        seen.add(agent)
        ys = np.asarray(line.get_ydata(), dtype=float)
        if eps_list == "inf" and agent not in set(frame.loc[frame["private"], "agent"]):
            assert ys[0] == pytest.approx(_mean(summary, env, agent, math.inf), rel=1e-12)
            continue
        requested = [float(e) for e in eps_list.split(",")]
        xs = np.asarray(line.get_xdata(), dtype=float)
        for x, y, eps in zip(xs, ys, requested, strict=True):
            assert y == pytest.approx(_mean(summary, env, agent, eps), rel=1e-12)
            if math.isfinite(eps):
                cert = final[(final["agent"] == agent) & (final["epsilon"] == eps)]
                certified = float(cert["epsilon_certified"].max())
                # at the certified epsilon, up to the side-by-side offset (learners spread
                # over 0.12 decades around it)
                assert abs(math.log10(x / certified)) <= 0.061
    assert seen == set(frame["agent"])
    # randomized-prefix-softmax:paper spends 0.25 for every request >= 0.25: drawn at 0.25 with
    # its requests written next to the point.
    texts = [t.get_text() for t in ax.texts]
    assert "requested 0.5, 2, 8, 32" in texts


@pytest.mark.slow
def test_regret_vs_horizon_points_equal_the_summary(default_results):
    frame, summary = default_results
    env_id = frame["env_id"].iloc[0]
    env_of = frame.groupby("horizon")["env"].first().to_dict()
    fig = plot_regret_vs_horizon(frame, env_id, METRIC)
    ax = fig.axes[0]
    lines = _tagged(ax)
    assert len(lines) == frame.groupby(["agent", "epsilon"]).ngroups
    for line in lines:
        agent, eps = line.get_gid().split("|")
        for t, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
            expected = _mean(summary, env_of[int(t)], agent, float(eps))
            assert float(y) == pytest.approx(expected, rel=1e-12)
    # Fitted slopes carry their bootstrap interval in the legend.
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("slope" in t and "[" in t for t in texts)
