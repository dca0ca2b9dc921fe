"""Summary statistics over seeds: mean, median, IQM, bootstrap confidence intervals, slopes.

The interquartile mean and the stratified bootstrap follow Agarwal et al. (2021, "Deep RL at the
edge of the statistical precipice"): the IQM discards the lowest and highest quarter of the runs
(with fractional weights at the cut points, as ``scipy.stats.trim_mean`` does not); the bootstrap
resamples runs *within* each task (environment) so that tasks keep their weight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dp_experts_env._validation import check_float, check_int

__all__ = [
    "iqm",
    "aggregate",
    "bootstrap_ci",
    "stratified_bootstrap_ci",
    "fit_loglog_slope",
    "AGGREGATES",
]


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values.

    Values are sorted and each is given the weight of its overlap with the quantile interval
    [0.25, 0.75] of the empirical distribution, so the result is exact for any sample size
    (for n divisible by 4 it is the plain mean of the middle n/2 values).
    """
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = x.size
    if n == 0:
        raise ValueError("values must not be empty")
    edges = np.arange(n + 1) / n
    lo, hi = 0.25, 0.75
    weights = np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0.0, None)
    return float(np.dot(weights, x) / (hi - lo))


AGGREGATES: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda x: float(np.mean(x)),
    "median": lambda x: float(np.median(x)),
    "iqm": iqm,
}


def aggregate(values: Sequence[float] | np.ndarray, statistic: str = "mean") -> float:
    """Apply a named aggregate (``mean``, ``median`` or ``iqm``)."""
    if statistic not in AGGREGATES:
        raise ValueError(f"statistic must be one of {sorted(AGGREGATES)}, got {statistic!r}")
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must not be empty")
    return AGGREGATES[statistic](x)


def stratified_bootstrap_ci(
    groups: Sequence[Sequence[float] | np.ndarray],
    statistic: str = "mean",
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval, resampling runs within each group.

    Args:
        groups: one array of per-run values per task (e.g. per environment); the statistic is
            computed on the pooled resample, so every task keeps its number of runs.
        statistic: ``mean``, ``median`` or ``iqm``.
        confidence: coverage of the two-sided percentile interval.
        n_boot: number of bootstrap resamples.
        seed: seed of the bootstrap's own generator (results are reproducible).

    Returns:
        (estimate, lower, upper).
    """
    confidence = check_float(
        "confidence", confidence, minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=False
    )
    n_boot = check_int("n_boot", n_boot, minimum=1)
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("groups must be a non-empty list of non-empty arrays")
    fn = AGGREGATES.get(statistic)
    if fn is None:
        raise ValueError(f"statistic must be one of {sorted(AGGREGATES)}, got {statistic!r}")
    estimate = fn(np.concatenate(arrays))
    rng = np.random.default_rng(seed)
    # Resample indices for all bootstrap replicates of a group at once: (n_boot, n_g).
    resampled = [a[rng.integers(0, a.size, size=(n_boot, a.size))] for a in arrays]
    pooled = np.concatenate(resampled, axis=1)
    if statistic == "mean":
        stats = pooled.mean(axis=1)
    elif statistic == "median":
        stats = np.median(pooled, axis=1)
    else:
        stats = np.array([iqm(row) for row in pooled])
    tail = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(stats, [tail, 1.0 - tail])
    return float(estimate), float(lower), float(upper)


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


def fit_loglog_slope(horizons: Sequence[float], regrets: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit of log(regret) = slope * log(T) + intercept.

    Returns:
        (slope, intercept). Non-positive regrets cannot be placed on a log scale and raise.
    """
    t = np.asarray(horizons, dtype=np.float64).ravel()
    r = np.asarray(regrets, dtype=np.float64).ravel()
    if t.shape != r.shape or t.size < 2:
        raise ValueError("horizons and regrets must have the same length >= 2")
    if np.any(t <= 0) or np.any(r <= 0):
        raise ValueError("horizons and regrets must be positive to fit a log-log slope")
    slope, intercept = np.polyfit(np.log(t), np.log(r), 1)
    return float(slope), float(intercept)
