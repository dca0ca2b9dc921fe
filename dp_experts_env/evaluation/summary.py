"""The tables of a sweep's rows: each run's final row, the per-learner summary, the aggregate.

:func:`summarize` is ``summary.csv`` and :func:`aggregate_table` ``aggregate.csv``; the sweep,
the report and the aggregate figure all read them from here (no import circle between them).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.stats import (
    aggregate_scores,
    iqm,
    normalized_scores,
    stratified_bootstrap_cis,
)

__all__ = ["final_rows", "summarize", "aggregate_table"]


def final_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows at each run's last recorded round (runs by ``pd.factorize`` codes: little memory)."""
    if frame.empty:
        return frame
    group = np.zeros(len(frame), dtype=np.int64)
    for name in ("agent", "env", "epsilon", "seed"):
        codes, uniques = pd.factorize(frame[name], use_na_sentinel=False)
        group = pd.factorize(group * len(uniques) + codes)[0]  # stays < number of rows
    rounds = frame["round"].to_numpy()
    last = np.full(group.max() + 1, np.iinfo(np.int64).min)
    np.maximum.at(last, group, rounds)
    return frame[rounds == last[group]]


def _natural_key(text: str) -> list[Any]:
    """Sort key that compares runs of digits as numbers: 'T=4000' < 'T=16000'."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text)]


def summarize(
    frame: pd.DataFrame,
    metric: str = "dynamic_regret",
    *,
    baseline: str = "uniform",
    confidence: float = 0.95,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """Final-round table per (env, agent, epsilon), ranked by mean ``metric`` within each env.

    Columns: mean and IQM with bootstrap CIs (``ci_low``, ``ci_high``, ``iqm_low``,
    ``iqm_high``), median, static regret mean, the score ``1 - metric / metric(baseline)``
    averaged over paired seeds (NaN without the baseline) and, when rows carry ``restarts``,
    ``restarts_mean``.
    """
    if metric not in frame.columns:
        raise ValueError(f"metric must be one of the result columns, got {metric!r}")
    final = final_rows(frame)
    base = final[final["agent"] == baseline].groupby(["env", "seed"])[metric].mean()
    records = []
    for (env, agent, eps), group in final.groupby(["env", "agent", "epsilon"], dropna=False):
        values = group[metric].to_numpy()
        # One set of resamples for both intervals: each is bootstrap_ci's, bit for bit.
        cis = stratified_bootstrap_cis(
            [values], ("mean", "iqm"), confidence=confidence, n_boot=n_boot
        )
        (est, lo, hi), (_, iqm_lo, iqm_hi) = cis["mean"], cis["iqm"]
        ref = base.reindex(pd.MultiIndex.from_arrays([group["env"], group["seed"]]))
        ref = ref.to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = 1.0 - values / ref
        score = float(np.nanmean(ratio)) if np.isfinite(ratio).any() else math.nan
        records.append(
            {
                "env": env,
                "agent": agent,
                "epsilon": eps,
                "seeds": len(values),
                f"{metric}_mean": est,
                "ci_low": lo,
                "ci_high": hi,
                f"{metric}_iqm": iqm(values),
                "iqm_low": iqm_lo,
                "iqm_high": iqm_hi,
                f"{metric}_median": float(np.median(values)),
                "static_regret_mean": float(group["static_regret"].mean()),
                f"score_vs_{baseline}": score,
                "certified": bool(group["certified"].all()),
            }
        )
        if "restarts" in final.columns:
            counts = group["restarts"].dropna()
            records[-1]["restarts_mean"] = float(counts.mean()) if len(counts) else math.nan
    table = pd.DataFrame(records)
    # Envs in natural order (T = 1000, 4000, 16000; not the string order 1000, 16000, 4000).
    order = {env: i for i, env in enumerate(sorted(table["env"].unique(), key=_natural_key))}
    table = table.assign(_order=table["env"].map(order))
    table = table.sort_values(["_order", f"{metric}_mean"], kind="stable").drop(columns="_order")
    table = table.reset_index(drop=True)
    table.insert(1, "rank", table.groupby("env").cumcount() + 1)
    return table


def aggregate_table(
    frame: pd.DataFrame, metric: str = "dynamic_regret", *, reference: str = "uniform"
) -> pd.DataFrame | None:
    """IQM and mean of reference-normalised scores across envs (None: one env or no reference)."""
    if frame["env"].nunique() < 2 or reference not in set(frame["agent"].unique()):
        return None
    try:
        scores = normalized_scores(final_rows(frame), metric, reference=reference)
    except ValueError:  # the reference has no positive regret anywhere: nothing to divide by
        return None
    return pd.DataFrame(aggregate_scores(scores))
