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
from dp_experts_env.evaluation.report import write_report
from dp_experts_env.evaluation.stats import (
    aggregate_scores,
    bootstrap_ci,
    fit_loglog_slope,
    iqm,
    normalized_scores,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_ci,
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
    "aggregate_scores",
    "bootstrap_ci",
    "default_grid",
    "final_rows",
    "fit_loglog_slope",
    "iqm",
    "load_results",
    "make_figures",
    "normalized_scores",
    "performance_profile",
    "play",
    "plot_regret_vs_epsilon",
    "plot_regret_vs_horizon",
    "plot_regret_vs_round",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "record_rounds",
    "run_grid",
    "run_one",
    "stratified_bootstrap_ci",
    "summarize",
    "write_report",
]
