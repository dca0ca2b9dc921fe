"""Claims of the papers as experiments plus a verdict: the data model and the analyses.

A :class:`Claim` names a paper's statement (a rate exponent, a ratio, a flat line), the
experiment that measures it (one or more :class:`Sweep` s, each a series of points played on the
grid runner, so it is cached per (cell, seed), resumable and runs on any backend) and the
analysis that turns the rows into a :class:`Measurement` with a confidence interval. The verdict
compares that interval with the prediction and its tolerance:

* ``"two_sided"``: ``holds`` when the whole interval lies within ``predicted +- tolerance``,
  ``fails`` when it lies wholly outside, ``inconclusive`` otherwise;
* ``"at_most"`` (an upper bound, e.g. a rate exponent that may be beaten): ``holds`` when the
  upper end is ``<= predicted + tolerance``, ``fails`` when the lower end is above it;
* ``"at_least"``: the mirror image.

Slopes are least-squares fits (``scipy.stats.linregress``) of log mean against log x; their
intervals come from a bootstrap over seeds (seeds resampled independently at every x, 2,000
resamples, percentile interval at 95%), the seed-level randomness being what separates two runs
of the same experiment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.fixed_order import dot

__all__ = [
    "KINDS",
    "Claim",
    "Measurement",
    "Point",
    "Sweep",
    "verdict",
    "loglog_slope",
    "mean_with_ci",
    "excess_loglog_slope",
    "ratio_of_means",
    "spread_of_normalised_gain",
]

KINDS = ("two_sided", "at_most", "at_least")
VERDICTS = ("holds", "fails", "inconclusive")
_BOOTSTRAP = 2_000
_LEVEL = 0.95


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its x value, the env parameters and the epsilon played there."""

    x: float
    env_params: Mapping[str, Any]
    epsilon: float | None = None


@dataclass(frozen=True)
class Sweep:
    """A learner measured at several points (the x axis of one curve of a claim's figure).

    Attributes:
        key: short name, unique within the claim (a folder name and a legend entry).
        agent: registered learner name.
        env_id: registered env id.
        points: the points (full run).
        quick_points: the points of ``--quick`` (default: ``points``).
        agent_params: learner keywords.
        metric: the regret column read (``dynamic_regret``, ``static_regret``, ...).
        seeds: seeds per point (full run); ``quick_seeds`` for ``--quick``.
        custom: for quantities the grid rows do not hold (a learner's switch counter): a
            function ``(sweep, points, seeds) -> rows`` with columns ``x``, ``seed`` and
            ``metric``; its rows are stored with the code fingerprint of learner and env.
    """

    key: str
    agent: str
    env_id: str
    points: tuple[Point, ...]
    quick_points: tuple[Point, ...] = ()
    agent_params: Mapping[str, Any] = field(default_factory=dict)
    metric: str = "dynamic_regret"
    seeds: int = 16
    quick_seeds: int = 8
    custom: Callable[[Sweep, tuple[Point, ...], int], pd.DataFrame] | None = None

    def chosen(self, quick: bool) -> tuple[tuple[Point, ...], int]:
        """The points and seed count of a full or quick run."""
        if quick:
            return (self.quick_points or self.points), self.quick_seeds
        return self.points, self.seeds


@dataclass(frozen=True)
class Measurement:
    """What an analysis measured: a value, its confidence interval and a one-line account."""

    value: float
    ci_low: float
    ci_high: float
    detail: str = ""


@dataclass(frozen=True)
class Claim:
    """A paper's statement, the experiment that measures it and how to judge it.

    Attributes:
        name: stable identifier (``claims.csv`` row, figure file name, CLI argument).
        paper: authors and title.
        source: theorem / table / corollary.
        statement: the statement in words (what a reader of the paper expects).
        quantity: what is measured, e.g. "log-log slope of dynamic regret in T".
        predicted: the predicted value of ``quantity``.
        tolerance: the band around ``predicted`` within which the claim holds.
        kind: ``"two_sided"``, ``"at_most"`` or ``"at_least"``.
        sweeps: the experiment.
        analyse: rows of every sweep (``{sweep key: final rows with an ``x`` column}``) ->
            :class:`Measurement`.
        x_label: the figure's x axis.
        log_x: whether the figure's x axis is logarithmic.
        notes: what a reader needs to interpret the verdict (constants, scale, errata).
        figure: optional ``(rows, ax) -> y label`` drawing the claim's own figure (e.g. the
            measured quantity rather than raw regret); default: mean +- s.e. of every sweep.
    """

    name: str
    paper: str
    source: str
    statement: str
    quantity: str
    predicted: float
    tolerance: float
    kind: str
    sweeps: tuple[Sweep, ...]
    analyse: Callable[[Mapping[str, pd.DataFrame]], Measurement]
    x_label: str = "x"
    log_x: bool = True
    notes: str = ""
    figure: Callable[[Mapping[str, pd.DataFrame], Any], str] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        keys = [s.key for s in self.sweeps]
        if len(set(keys)) != len(keys):
            raise ValueError(f"claim {self.name!r}: sweep keys must be distinct, got {keys}")


def verdict(claim: Claim, m: Measurement) -> str:
    """``holds`` / ``fails`` / ``inconclusive`` for the measurement's interval (see module)."""
    if not (math.isfinite(m.ci_low) and math.isfinite(m.ci_high)):
        return "inconclusive"
    lo, hi = claim.predicted - claim.tolerance, claim.predicted + claim.tolerance
    if claim.kind == "at_most":
        return "holds" if m.ci_high <= hi else ("fails" if m.ci_low > hi else "inconclusive")
    if claim.kind == "at_least":
        return "holds" if m.ci_low >= lo else ("fails" if m.ci_high < lo else "inconclusive")
    if lo <= m.ci_low and m.ci_high <= hi:
        return "holds"
    if m.ci_high < lo or m.ci_low > hi:
        return "fails"
    return "inconclusive"


# ----------------------------------------------------------------------------- analyses
def _per_x(rows: pd.DataFrame, metric: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sorted x values and, per x, the seeds' final values of ``metric``."""
    xs = np.sort(rows["x"].unique())
    return xs, [rows.loc[rows["x"] == x, metric].to_numpy(np.float64) for x in xs]


def _bootstrap_means(groups: Sequence[np.ndarray], seed: int) -> np.ndarray:
    """(n_boot, n_x) means of seeds resampled with replacement, independently per x."""
    rng = np.random.default_rng(seed)
    out = np.empty((_BOOTSTRAP, len(groups)))
    for j, values in enumerate(groups):
        idx = rng.integers(0, values.size, size=(_BOOTSTRAP, values.size))
        out[:, j] = values[idx].mean(axis=1)
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import linregress

    return float(linregress(np.log(x), np.log(y)).slope)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size < samples.size * 0.9:
        return math.nan, math.nan
    tail = 100 * (1 - _LEVEL) / 2
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def loglog_slope(
    rows: pd.DataFrame, metric: str, *, floor: float = 1e-9, seed: int = 0
) -> Measurement:
    """Slope of log(mean ``metric``) against log(x), with a seed-bootstrap interval.

    Means at or below ``floor`` cannot be placed on a log scale; the fit then reports NaN (the
    claim is judged inconclusive rather than silently dropping points).
    """
    xs, groups = _per_x(rows, metric)
    if xs.size < 2:
        raise ValueError("a slope needs at least two x values")
    means = np.array([g.mean() for g in groups])
    boots = _bootstrap_means(groups, seed)
    if np.any(means <= floor):
        return Measurement(math.nan, math.nan, math.nan, "a mean regret is <= 0: no log-log fit")
    value = _slope(xs, means)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(boots > floor, boots, np.nan))
    lx = np.log(xs)
    lx_c = lx - lx.mean()
    slopes = dot(logs - logs.mean(axis=1, keepdims=True), lx_c) / dot(lx_c, lx_c)
    lo, hi = _interval(slopes)
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    return Measurement(value, lo, hi, f"mean {metric} at x = {pairs}")


def ratio_of_means(
    num: pd.DataFrame, den: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Ratio of the mean ``metric`` of two row sets (pooled over x), seed-bootstrap interval."""
    a = num[metric].to_numpy(np.float64)
    b = den[metric].to_numpy(np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_of_means needs rows on both sides")
    boots = _bootstrap_means([a, b], seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boots[:, 0] / boots[:, 1]
    lo, hi = _interval(ratios)
    value = float(a.mean() / b.mean()) if b.mean() != 0 else math.nan
    return Measurement(value, lo, hi, f"mean {a.mean():.4g} / {b.mean():.4g}")


def spread_of_normalised_gain(
    curves: Mapping[str, pd.DataFrame],
    low: Mapping[str, pd.DataFrame],
    high: Mapping[str, pd.DataFrame],
    metric: str,
    *,
    seed: int = 0,
) -> Measurement:
    """Largest gap, across series at the same x, of the normalised gain ``(L - R)/(L - H)``.

    ``curves[k]`` are a learner's rows of series k (one series per horizon), ``low[k]`` the
    rows of the weak reference (uniform play, L) and ``high[k]`` those of the strong one (the
    non-private tracker, H). A privacy transition that depends on x only (a collapse) gives a
    small spread. The interval bootstraps seeds within every (series, x).
    """
    rng_seed = seed
    keys = list(curves)
    xs = np.sort(np.unique(np.concatenate([curves[k]["x"].unique() for k in keys])))
    boots = []
    value_rows = []
    for k in keys:
        lo_v = low[k][metric].to_numpy(np.float64)
        hi_v = high[k][metric].to_numpy(np.float64)
        _, groups = _per_x(curves[k], metric)
        b = _bootstrap_means([*groups, lo_v, hi_v], rng_seed)
        rng_seed += 1
        denom = b[:, -2] - b[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            boots.append((b[:, -2:-1] - b[:, :-2]) / denom[:, None])
        means = np.array([g.mean() for g in groups])
        value_rows.append((lo_v.mean() - means) / (lo_v.mean() - hi_v.mean()))
    gain = np.stack(value_rows)  # (series, x)
    samples = np.stack(boots, axis=1)  # (boot, series, x)
    spread = float(np.max(gain.max(axis=0) - gain.min(axis=0)))
    boot_spread = np.max(samples.max(axis=1) - samples.min(axis=1), axis=1)
    lo, hi = _interval(boot_spread)
    table = "; ".join(
        f"{k}: " + ", ".join(f"{g:.2f}" for g in row) for k, row in zip(keys, gain, strict=True)
    )
    return Measurement(spread, lo, hi, f"normalised gain at x = {list(map(float, xs))}: {table}")


def mean_with_ci(rows: pd.DataFrame, metric: str, *, seed: int = 0) -> Measurement:
    """Mean of ``metric`` over every row, with a bootstrap interval over rows (seeds)."""
    v = rows[metric].to_numpy(np.float64)
    if v.size == 0:
        raise ValueError("mean_with_ci needs at least one row")
    lo, hi = _interval(_bootstrap_means([v], seed)[:, 0])
    return Measurement(float(v.mean()), lo, hi, f"mean {metric} over {v.size} runs")


def excess_loglog_slope(
    rows: pd.DataFrame, base: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Slope in log-log of ``mean(rows at x) - mean(base)``: the part of regret x explains.

    ``base`` is the same learner without the effect (e.g. epsilon = inf), so the excess is the
    cost of privacy; its interval bootstraps both. Non-positive excesses give NaN (inconclusive).
    """
    xs, groups = _per_x(rows, metric)
    b = base[metric].to_numpy(np.float64)
    boots = _bootstrap_means([*groups, b], seed)
    excess = boots[:, :-1] - boots[:, -1:]
    means = np.array([g.mean() for g in groups]) - b.mean()
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    if np.any(means <= 0):
        return Measurement(
            math.nan, math.nan, math.nan, f"excess {metric} <= 0 at some x ({pairs})"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(excess > 0, excess, np.nan))
    lx = np.log(xs) - np.log(xs).mean()
    slopes = dot(logs - logs.mean(axis=1, keepdims=True), lx) / dot(lx, lx)
    lo, hi = _interval(slopes)
    return Measurement(_slope(xs, means), lo, hi, f"excess mean {metric} at x = {pairs}")
