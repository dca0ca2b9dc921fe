"""Measuring learners: episode loop, grids, backends, statistics, figures."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from dp_experts_env.learner_package import check_learner_package

# A foreign module named "agents" earlier on sys.path is refused here, by name.
check_learner_package()

# Each public name and its submodule, loaded on first use: a grid worker needs no matplotlib,
# pandas or scipy.stats.
_EXPORTS = {
    "default_grid": "defaults",
    "play": "episode",
    "run_one": "episode",
    "AgentEntry": "grid",
    "Cell": "grid",
    "EnvEntry": "grid",
    "Grid": "grid",
    "record_rounds": "grid",
    "make_figures": "plots",
    "plot_regret_vs_epsilon": "plots",
    "plot_regret_vs_horizon": "plots",
    "plot_regret_vs_round": "plots",
    "write_report": "report",
    "aggregate_scores": "stats",
    "bootstrap_ci": "stats",
    "fit_loglog_slope": "stats",
    "iqm": "stats",
    "normalized_scores": "stats",
    "performance_profile": "stats",
    "probability_of_improvement": "stats",
    "probability_of_improvement_ci": "stats",
    "stratified_bootstrap_ci": "stats",
    "CellStore": "store",
    "ResultsFolderBusy": "store",
    "load_results": "store",
    "final_rows": "sweep",
    "run_grid": "sweep",
    "summarize": "sweep",
}

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ loads them
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


def __getattr__(name: str) -> Any:
    """Load a public name's submodule on first use (see ``_EXPORTS``)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


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
