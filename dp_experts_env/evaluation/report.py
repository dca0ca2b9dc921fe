"""The files a finished sweep leaves next to its rows: summary, aggregate across envs, figures.

:func:`write_report` serves ``run_grid`` and the command line alike, so a results folder looks
the same whichever way it was produced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dp_experts_env.evaluation.store import write_atomic
from dp_experts_env.evaluation.summary import aggregate_table, summarize

__all__ = ["Report", "resolve_metric", "aggregate_table", "write_report"]


class Report(dict):
    """What :func:`write_report` wrote: ``metric``, ``summary``, ``aggregate``, ``figures``."""


def resolve_metric(frame: pd.DataFrame, metric: str = "dynamic_regret") -> str:
    """The regret column to report: ``metric``, or static regret where dynamic is not reported.

    Raises:
        ValueError: the rows have neither.
    """
    if metric == "dynamic_regret" and metric not in frame.columns and "static_regret" in frame:
        # DPExperts-OCO-v0 has no exact S-switch dynamic regret (docs/environments.md).
        return "static_regret"
    if metric == "pseudo_regret" and metric not in frame.columns:
        raise ValueError(
            "metric 'pseudo_regret' was split in two: 'static_pseudo_regret' (against the best "
            "fixed expert in expectation, the papers' regret) and 'per_round_best_pseudo_regret' "
            "(against the best expert of every round, the former 'pseudo_regret')"
        )
    if metric not in frame.columns:
        raise ValueError(f"metric {metric!r} is not reported by these environments")
    return metric


def write_report(
    frame: pd.DataFrame,
    out_dir: str | Path,
    metric: str = "dynamic_regret",
    *,
    figures: bool = False,
    pdf: bool = False,
) -> Report:
    """Write ``summary.csv``, ``aggregate.csv`` (several envs) and, if asked, the figures.

    Args:
        frame: the rows of a sweep (``run_grid``'s return value).
        out_dir: the results folder.
        metric: the regret to rank and draw (:func:`resolve_metric`).
        figures: also draw every figure the rows support under ``out_dir/figures``.
        pdf: with ``figures``, also save each figure as PDF.

    Returns:
        A :class:`Report`.
    """
    out = Path(out_dir)
    metric = resolve_metric(frame, metric)
    table = summarize(frame, metric)
    write_atomic(out / "summary.csv", lambda fh: table.to_csv(fh, index=False))
    aggregate = aggregate_table(frame, metric)
    if aggregate is not None:
        write_atomic(out / "aggregate.csv", lambda fh: aggregate.to_csv(fh, index=False))
    paths: list[Any] = []
    if figures:
        from dp_experts_env.evaluation.plots import make_figures

        paths = make_figures(frame, out / "figures", metric, pdf=pdf)
    return Report(metric=metric, summary=table, aggregate=aggregate, figures=paths)
