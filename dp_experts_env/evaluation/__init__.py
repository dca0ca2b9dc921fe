"""Measuring learners: episode loop, grids, backends, statistics, figures."""

from dp_experts_env.evaluation.defaults import default_grid
from dp_experts_env.evaluation.episode import play, run_one
from dp_experts_env.evaluation.grid import AgentEntry, Cell, EnvEntry, Grid, record_rounds
from dp_experts_env.evaluation.plots import (
    make_figures,
    plot_regret_vs_epsilon,
    plot_regret_vs_horizon,
    plot_regret_vs_round,
)
from dp_experts_env.evaluation.stats import (
    bootstrap_ci,
    fit_loglog_slope,
    iqm,
    stratified_bootstrap_ci,
)
from dp_experts_env.evaluation.store import CellStore, ResultsFolderBusy, load_results
from dp_experts_env.evaluation.sweep import final_rows, run_grid, summarize

__all__ = [
    "AgentEntry",
    "Cell",
    "CellStore",
    "EnvEntry",
    "Grid",
    "ResultsFolderBusy",
    "bootstrap_ci",
    "default_grid",
    "final_rows",
    "fit_loglog_slope",
    "iqm",
    "load_results",
    "make_figures",
    "play",
    "plot_regret_vs_epsilon",
    "plot_regret_vs_horizon",
    "plot_regret_vs_round",
    "record_rounds",
    "run_grid",
    "run_one",
    "stratified_bootstrap_ci",
    "summarize",
]
