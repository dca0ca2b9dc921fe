"""Summary statistics over seeds, following rliable's definitions, on numpy and scipy.

IQM, stratified bootstrap intervals, normalised scores, probability of improvement and
performance profiles as Agarwal et al. (2021, "Deep RL at the edge of the statistical
precipice") define them; the definitions and the two deliberate differences from rliable are in
docs/statistics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float, check_int

__all__ = [
    "iqm",
    "aggregate",
    "bootstrap_ci",
    "stratified_bootstrap_ci",
    "stratified_bootstrap_cis",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "performance_profile",
    "normalized_scores",
    "aggregate_scores",
    "fit_loglog_slope",
    "AGGREGATES",
]


def _trim_mean(a: np.ndarray, proportion: float, axis: int) -> np.ndarray:
    """``scipy.stats.trim_mean``, the same operations in the same order, without its import."""
    nobs = a.shape[axis]
    low = int(proportion * nobs)
    high = nobs - low
    if low > high:
        raise ValueError("Proportion too big.")
    part = np.partition(a, (low, high - 1), axis)
    index = [slice(None)] * part.ndim
    index[axis] = slice(low, high)
    return np.mean(part[tuple(index)].astype(np.float64, copy=False), axis=axis)


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean as rliable defines it: ``scipy.stats.trim_mean(values, 0.25)``."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must not be empty")
    return float(_trim_mean(x, 0.25, axis=0))


AGGREGATES: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda x: float(np.mean(x)),
    "median": lambda x: float(np.median(x)),
    "iqm": iqm,
}


def _rowwise(statistic: str, matrix: np.ndarray) -> np.ndarray:
    """The statistic of every row of a (n_boot, n) matrix, vectorised."""
    if statistic == "mean":
        return matrix.mean(axis=1)
    if statistic == "median":
        return np.median(matrix, axis=1)
    return _trim_mean(matrix, 0.25, axis=1)


def _check_statistic(statistic: str) -> Callable[[np.ndarray], float]:
    if statistic not in AGGREGATES:
        raise ValueError(f"statistic must be one of {sorted(AGGREGATES)}, got {statistic!r}")
    return AGGREGATES[statistic]


def aggregate(values: Sequence[float] | np.ndarray, statistic: str = "mean") -> float:
    """Apply a named aggregate (``mean``, ``median`` or ``iqm``) to pooled values."""
    fn = _check_statistic(statistic)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must not be empty")
    return fn(x)


def _groups(groups: Any, name: str = "groups") -> list[np.ndarray]:
    """Per-task 1-D arrays from a list of arrays or a (runs, tasks) matrix."""
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        arrays = [np.asarray(groups[:, j], dtype=np.float64) for j in range(groups.shape[1])]
    else:
        arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError(f"{name} must be a non-empty list of non-empty arrays (one per task)")
    return arrays


def _percentile_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high


def _check_boot(confidence: float, n_boot: int) -> tuple[float, int]:
    confidence = check_float(
        "confidence", confidence, minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=False
    )
    return confidence, check_int("n_boot", n_boot, minimum=1)


def stratified_bootstrap_ci(
    groups: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    statistic: str = "mean",
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval, resampling runs within each task.

    Args:
        groups: one array of per-run values per task, or a (runs, tasks) matrix; the
            statistic is computed on the pooled resample.
        statistic: ``mean``, ``median`` or ``iqm``.
        confidence: coverage of the two-sided percentile interval.
        n_boot: number of bootstrap resamples.
        seed: seed of the bootstrap's own generator.

    Returns:
        (estimate, lower, upper).
    """
    return stratified_bootstrap_cis(
        groups, (statistic,), confidence=confidence, n_boot=n_boot, seed=seed
    )[statistic]


def stratified_bootstrap_cis(
    groups: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    statistics: Sequence[str],
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float, float]]:
    """:func:`stratified_bootstrap_ci` of several statistics from one set of resamples.

    Each statistic's triple is the one :func:`stratified_bootstrap_ci` returns for it with the
    same arguments, bit for bit: the resamples are drawn once and read by every statistic.
    """
    confidence, n_boot = _check_boot(confidence, n_boot)
    if isinstance(statistics, str) or not isinstance(statistics, Iterable):
        raise TypeError(f"statistics must be a sequence of names, got {statistics!r}")
    statistics = list(statistics)
    if not statistics:
        raise ValueError("statistics must name at least one statistic, got none")
    fns = {statistic: _check_statistic(statistic) for statistic in statistics}
    arrays = _groups(groups)
    pooled = np.concatenate(arrays)
    rng = np.random.default_rng(seed)
    resampled = [a[rng.integers(0, a.size, size=(n_boot, a.size))] for a in arrays]
    # One task: its resample matrix is already the pooled one (no copy of n_boot x runs).
    matrix = resampled[0] if len(resampled) == 1 else np.concatenate(resampled, axis=1)
    out = {}
    for statistic, fn in fns.items():
        lower, upper = _percentile_interval(_rowwise(statistic, matrix), confidence)
        out[statistic] = (float(fn(pooled)), float(lower), float(upper))
    return out


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: str = "mean",
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Percentile bootstrap interval of one group of runs (see :func:`stratified_bootstrap_ci`)."""
    return stratified_bootstrap_ci(
        [values], statistic, confidence=confidence, n_boot=n_boot, seed=seed
    )


def _poi_task(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 for one task: the normalised Mann-Whitney U of x against y."""
    if x.shape == y.shape and np.array_equal(x, y):
        return 0.5
    diff = x[:, None] - y[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def probability_of_improvement(
    scores_x: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    scores_y: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
) -> float:
    """Probability that a run of X scores higher than a run of Y, averaged over tasks.

    Args:
        scores_x: X's runs, one array per task or a (runs, tasks) matrix (higher is better).
        scores_y: Y's runs on the same tasks.

    Returns:
        The mean over tasks of U / (n_x n_y), U the Mann-Whitney statistic (ties count 1/2).
    """
    xs, ys = _groups(scores_x, "scores_x"), _groups(scores_y, "scores_y")
    if len(xs) != len(ys):
        raise ValueError(
            f"scores_x and scores_y must cover the same tasks, got {len(xs)} and {len(ys)}"
        )
    return float(np.mean([_poi_task(x, y) for x, y in zip(xs, ys, strict=True)]))


def probability_of_improvement_ci(
    scores_x: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    scores_y: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """:func:`probability_of_improvement` with a percentile interval.

    X's and Y's runs are resampled independently within each task (rliable's
    ``StratifiedIndependentBootstrap``).

    Returns:
        (estimate, lower, upper).
    """
    confidence, n_boot = _check_boot(confidence, n_boot)
    estimate = probability_of_improvement(scores_x, scores_y)
    xs, ys = _groups(scores_x, "scores_x"), _groups(scores_y, "scores_y")
    rng = np.random.default_rng(seed)
    per_task = []
    for x, y in zip(xs, ys, strict=True):
        bx = x[rng.integers(0, x.size, size=(n_boot, x.size))]
        by = y[rng.integers(0, y.size, size=(n_boot, y.size))]
        diff = bx[:, :, None] - by[:, None, :]  # (n_boot, n_x, n_y)
        per_task.append((diff > 0).mean(axis=(1, 2)) + 0.5 * (diff == 0).mean(axis=(1, 2)))
    lower, upper = _percentile_interval(np.mean(per_task, axis=0), confidence)
    return estimate, float(lower), float(upper)


def performance_profile(
    groups: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
    taus: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run-score distribution: fraction of runs with score > tau, for each tau, with a band.

    ``groups`` and the band's ``confidence``, ``n_boot`` and ``seed`` as in
    :func:`stratified_bootstrap_ci`; ``taus`` the thresholds.

    Returns:
        (fraction, lower, upper), each of shape (len(taus),); runs of all tasks pooled.
    """
    confidence, n_boot = _check_boot(confidence, n_boot)
    arrays = _groups(groups)
    tau = np.asarray(taus, dtype=np.float64).ravel()
    if tau.size == 0:
        raise ValueError("taus must not be empty")
    pooled = np.concatenate(arrays)
    fraction = (pooled[:, None] > tau[None, :]).mean(axis=0)
    rng = np.random.default_rng(seed)
    resampled = np.concatenate(
        [a[rng.integers(0, a.size, size=(n_boot, a.size))] for a in arrays], axis=1
    )
    # A sorted search avoids the (n_boot, runs, taus) boolean cube.
    resampled.sort(axis=1)
    above = np.stack(
        [resampled.shape[1] - np.searchsorted(row, tau, side="right") for row in resampled]
    )
    lower, upper = _percentile_interval(above / resampled.shape[1], confidence)
    return fraction, lower, upper


def normalized_scores(
    final: Any,
    metric: str = "dynamic_regret",
    *,
    reference: str = "uniform",
    task: str = "env",
) -> dict[tuple[str, float], list[np.ndarray]]:
    """Per-learner per-task normalised scores ``1 - regret / ref`` from final-round rows.

    ``ref`` is the reference's mean final regret on the task: 1 = no regret, 0 = the reference.

    Args:
        final: a pandas frame of final-round rows with columns ``agent``, ``epsilon``, ``task``
            and ``metric``.
        metric: the regret column.
        reference: the learner whose mean regret is 0 on the normalised scale.
        task: the column that names a task.

    Returns:
        ``{(agent, epsilon): [scores per task]}`` over the tasks where the reference's mean
        regret is positive; a learner missing one of them is left out.

    Raises:
        ValueError: for a missing column, or no task with a positive reference regret.
    """
    for column in ("agent", "epsilon", task, metric):
        if column not in final.columns:
            raise ValueError(f"final rows lack the column {column!r} (metric={metric!r})")
    ref = final[final["agent"] == reference].groupby(task)[metric].mean()
    if ref.empty:
        raise ValueError(f"reference learner {reference!r} is not in the rows")
    tasks = sorted(t for t, v in ref.items() if v > 0)
    if not tasks:
        raise ValueError(f"reference learner {reference!r} has no positive mean {metric}")
    out: dict[tuple[str, float], list[np.ndarray]] = {}
    for (agent, eps), group in final.groupby(["agent", "epsilon"], sort=True):
        by_task = {t: g[metric].to_numpy(dtype=np.float64) for t, g in group.groupby(task)}
        if all(t in by_task for t in tasks):
            out[(str(agent), float(eps))] = [1.0 - by_task[t] / ref[t] for t in tasks]
    return out


def aggregate_scores(
    scores: Mapping[tuple[str, float], list[np.ndarray]],
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """IQM and mean of normalised scores across tasks, each with a stratified-bootstrap CI.

    ``scores`` from :func:`normalized_scores`; ``confidence``, ``n_boot`` and ``seed`` (the same
    for every learner) as in :func:`stratified_bootstrap_ci`.

    Returns:
        One record per learner: agent, epsilon, tasks, runs, iqm, iqm_low, iqm_high, mean,
        mean_low, mean_high, sorted by IQM (best first).
    """
    records = []
    for (agent, eps), groups in scores.items():
        cis = stratified_bootstrap_cis(
            groups, ("iqm", "mean"), confidence=confidence, n_boot=n_boot, seed=seed
        )
        (i, i_lo, i_hi), (m, m_lo, m_hi) = cis["iqm"], cis["mean"]
        records.append(
            {
                "agent": agent,
                "epsilon": eps,
                "tasks": len(groups),
                "runs": int(sum(len(g) for g in groups)),
                "iqm": i,
                "iqm_low": i_lo,
                "iqm_high": i_hi,
                "mean": m,
                "mean_low": m_lo,
                "mean_high": m_hi,
            }
        )
    return sorted(records, key=lambda r: -r["iqm"])


def fit_loglog_slope(horizons: Sequence[float], regrets: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit of log(regret) = slope * log(T) + intercept.

    Returns:
        (slope, intercept).

    Raises:
        ValueError: for fewer than 2 points, mismatched lengths, or non-positive values.
    """
    t = np.asarray(horizons, dtype=np.float64).ravel()
    r = np.asarray(regrets, dtype=np.float64).ravel()
    if t.shape != r.shape or t.size < 2:
        raise ValueError("horizons and regrets must have the same length >= 2")
    if np.any(t <= 0) or np.any(r <= 0):
        raise ValueError("horizons and regrets must be positive to fit a log-log slope")
    slope, intercept = np.polyfit(np.log(t), np.log(r), 1)
    return float(slope), float(intercept)
