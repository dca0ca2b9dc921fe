"""Normalised scores ``(C - R_i) / (C - B)`` per task, capability and epsilon (docs/bench.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dp_experts_env.bench.runner import TaskRows

__all__ = [
    "N_BOOT",
    "capability_scores",
    "eps_key",
    "run_scores",
    "strip_runs",
    "task_scale",
    "task_scores",
]

#: Bootstrap resamples of every interval on a card (seed 0: a card is reproducible).
N_BOOT = 2000


def task_scale(rows: TaskRows, min_gap: float = 0.0) -> dict[str, Any]:
    """``C``, ``B``, which reference is best, and why the task is not scored (``""`` if it is)."""
    frame, metric = rows.frame, rows.task.metric
    means = frame.groupby("agent")[metric].mean()
    missing = [x for x in (rows.control, *rows.references) if x not in means.index]
    if missing:
        raise ValueError(f"task {rows.task.name!r}: rows lack the roster learners {missing}")
    control = float(means[rows.control])
    refs = {label: float(means[label]) for label in rows.references}
    best = min(refs, key=lambda k: refs[k])
    reason = ""
    if not control - refs[best] > min_gap * abs(control):
        reason = (
            f"not scored: no reference learner beats the control by {min_gap:.0%} of its "
            f"regret ({rows.control} mean {metric} {control:.4g}, {best} {refs[best]:.4g})"
        )
    return {
        "control": rows.control,
        "control_mean": control,
        "best_reference": best,
        "best_mean": refs[best],
        "reference_means": refs,
        "reason": reason,
    }


def _interval(values: np.ndarray, statistic: str) -> tuple[float, float, float]:
    from dp_experts_env.evaluation.stats import bootstrap_ci

    return bootstrap_ci(values, statistic, n_boot=N_BOOT, seed=0)


def run_scores(rows: TaskRows, label: str, epsilon: float, scale: Mapping[str, Any]) -> np.ndarray:
    """Per-run normalised scores of ``label`` at ``epsilon`` (runs in seed order)."""
    frame = rows.frame
    mine = frame[(frame["agent"] == label) & (frame["epsilon"] == epsilon)].sort_values("seed")
    regret = mine[rows.task.metric].to_numpy(dtype=np.float64)
    return (scale["control_mean"] - regret) / (scale["control_mean"] - scale["best_mean"])


def task_scores(
    rows: TaskRows, label: str, epsilons: Sequence[float], scale: Mapping[str, Any]
) -> dict[str, Any]:
    """A learner's scores on one task at each epsilon it played (``inf`` once if non-private).

    Returns:
        ``{"<eps>": {"mean", "mean_low", "mean_high", "iqm", "iqm_low", "iqm_high", "runs",
        "regret_mean"}}`` keyed by :func:`eps_key`; empty when the task is not scored.
    """
    if scale["reason"]:
        return {}
    frame = rows.frame
    played = sorted(set(frame.loc[frame["agent"] == label, "epsilon"].astype(float)))
    out: dict[str, Any] = {}
    for eps in epsilons:
        if eps not in played:
            continue
        scores = run_scores(rows, label, eps, scale)
        mean, mean_lo, mean_hi = _interval(scores, "mean")
        iqm, iqm_lo, iqm_hi = _interval(scores, "iqm")
        mine = frame[(frame["agent"] == label) & (frame["epsilon"] == eps)]
        out[eps_key(eps)] = {
            "mean": mean,
            "mean_low": mean_lo,
            "mean_high": mean_hi,
            "iqm": iqm,
            "iqm_low": iqm_lo,
            "iqm_high": iqm_hi,
            "runs": int(scores.size),
            "regret_mean": float(mine[rows.task.metric].mean()),
            "_runs": scores,  # dropped from the JSON (capability_scores pools them)
        }
    return out


def eps_key(epsilon: float) -> str:
    """An epsilon as a JSON key: ``"1"``, ``"0.5"``, ``"inf"``."""
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def capability_scores(
    per_task: Mapping[str, Mapping[str, Any]], capabilities: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Per capability and epsilon: the mean and IQM over its tasks' runs, stratified intervals.

    Args:
        per_task: ``{task: task_scores(...)}``.
        capabilities: ``{capability: [task names]}``.

    Returns:
        ``{capability: {"<eps>": {"mean", ..., "iqm", ..., "tasks"}}}``, at the epsilons every
        scored task of the capability has (none without a scored task).
    """
    from dp_experts_env.evaluation.stats import stratified_bootstrap_ci

    out: dict[str, Any] = {}
    for capability, names in capabilities.items():
        scored = [per_task[n] for n in names if per_task.get(n)]
        entry: dict[str, Any] = {}
        if scored:
            keys = [k for k in scored[0] if all(k in s for s in scored)]
            for key in keys:
                groups = [s[key]["_runs"] for s in scored]
                mean, mean_lo, mean_hi = stratified_bootstrap_ci(
                    groups, "mean", n_boot=N_BOOT, seed=0
                )
                iqm, iqm_lo, iqm_hi = stratified_bootstrap_ci(groups, "iqm", n_boot=N_BOOT, seed=0)
                entry[key] = {
                    "mean": mean,
                    "mean_low": mean_lo,
                    "mean_high": mean_hi,
                    "iqm": iqm,
                    "iqm_low": iqm_lo,
                    "iqm_high": iqm_hi,
                    "tasks": len(groups),
                }
        out[capability] = entry
    return out


def strip_runs(per_task: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``per_task`` without the per-run arrays (what the card stores)."""
    return {
        name: {k: {f: v for f, v in e.items() if f != "_runs"} for k, e in entries.items()}
        for name, entries in per_task.items()
    }
