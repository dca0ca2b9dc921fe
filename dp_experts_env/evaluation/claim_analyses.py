"""The analyses of the papers' claims: rows of a claim's sweeps -> a :class:`Measurement`.

Slopes are least-squares fits of log mean against log x. Means and slopes have t intervals
(:mod:`~dp_experts_env.evaluation.claim_intervals`), the other analyses a percentile bootstrap
over seeds, resampled independently at every x (docs/reproduce.md, "Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claim_intervals import excess_slope_t, mean_t, slope_t

__all__ = [
    "LOCAL_WINDOW",
    "Measurement",
    "local_slopes",
    "loglog_slope",
    "mean_with_ci",
    "excess_loglog_slope",
    "worst_case_loglog_slope",
    "ratio_of_means",
    "largest_ratio_over_x",
    "power_plus_constant",
    "spread_of_normalised_gain",
    "collapse_exponent",
]

#: Points per local-slope window: a slope over fewer would be a difference of two noisy means.
LOCAL_WINDOW = 3
_BOOTSTRAP = 2_000
_LEVEL = 0.95


@dataclass(frozen=True)
class Measurement:
    """What an analysis measured: a value, its confidence interval and a one-line account."""

    value: float
    ci_low: float
    ci_high: float
    detail: str = ""
    local: tuple[float, ...] = ()  # local slopes over LOCAL_WINDOW consecutive points (if any)
    # What a band p-value is computed from: a t interval's se and df, or a bootstrap's draws.
    se: float = math.nan
    df: float = math.nan
    draws: np.ndarray | None = field(default=None, repr=False, compare=False)


def local_slopes(
    xs: np.ndarray, means: np.ndarray, window: int = LOCAL_WINDOW
) -> tuple[float, ...]:
    """Log-log slopes over every ``window`` consecutive points (fewer: one over all)."""
    if xs.size < 2 or np.any(means <= 0):
        return ()
    if xs.size < window:
        return (_slope(xs, means),)
    return tuple(
        _slope(xs[i : i + window], means[i : i + window]) for i in range(xs.size - window + 1)
    )


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
    """Slope of log(mean ``metric``) on log(x), t interval; NaN if a mean is <= ``floor``."""
    xs, groups = _per_x(rows, metric)
    if xs.size < 2:
        raise ValueError("a slope needs at least two x values")
    means = np.array([g.mean() for g in groups])
    if np.any(means <= floor):
        return Measurement(math.nan, math.nan, math.nan, "a mean regret is <= 0: no log-log fit")
    value = _slope(xs, means)
    _, lo, hi, se, df = slope_t(xs, groups)
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    return Measurement(
        value, lo, hi, f"mean {metric} at x = {pairs}", local_slopes(xs, means), se, df
    )


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
    return Measurement(value, lo, hi, f"mean {a.mean():.4g} / {b.mean():.4g}", draws=ratios)


def largest_ratio_over_x(
    rows: pd.DataFrame, ref: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Largest, over x, of mean ``metric`` of ``rows`` / mean of ``ref`` (same envs, seeds)."""
    xs, groups = _per_x(rows, metric)
    _, ref_groups = _per_x(ref[ref["x"].isin(xs)], metric)
    if len(ref_groups) != len(groups):
        raise ValueError("largest_ratio_over_x needs the reference at every x")
    boots = _bootstrap_means([*groups, *ref_groups], seed)
    n = len(groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boots[:, :n] / boots[:, n:]
        means = np.array([g.mean() for g in groups]) / np.array([g.mean() for g in ref_groups])
    draws = ratios.max(axis=1)
    lo, hi = _interval(draws)
    pairs = ", ".join(f"{x:g}: {r:.3f}" for x, r in zip(xs, means, strict=True))
    return Measurement(
        float(means.max()), lo, hi, f"mean {metric} / the reference's at x = {pairs}",
        draws=draws,
    )  # fmt: skip


def _profile_exponent(xs: np.ndarray, means: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Best exponent p on ``grid`` of ``means ~ a x^p + b`` per row (weights 1 / mean)."""
    means = np.atleast_2d(means)
    w = 1.0 / np.where(means > 0, means, np.nan)
    best = np.full(means.shape[0], np.nan)
    best_res = np.full(means.shape[0], np.inf)
    for p in grid:
        f = xs**p
        # weighted normal equations of [f, 1] per row
        s_ff = np.sum((w * f) ** 2, axis=1)
        s_f1 = np.sum(w * w * f, axis=1)
        s_11 = np.sum(w * w, axis=1)
        s_fy = np.sum(w * w * f * means, axis=1)
        s_1y = np.sum(w * w * means, axis=1)
        det = s_ff * s_11 - s_f1**2
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (s_fy * s_11 - s_1y * s_f1) / det
            b = (s_ff * s_1y - s_f1 * s_fy) / det
        res = np.sum((w * (means - a[:, None] * f - b[:, None])) ** 2, axis=1)
        better = res < best_res
        best[better], best_res[better] = p, res[better]
    return best


def power_plus_constant(
    rows: pd.DataFrame, metric: str, *, grid: np.ndarray | None = None, seed: int = 0
) -> Measurement:
    """Exponent p of the theorem's shape ``a x^p + b`` (b free), with a seed-bootstrap interval.

    A free constant keeps ``a / gap + b`` from bending a power-law fit toward 0. Needs 4 x
    values; p is searched on ``grid`` (default -3..3, step 0.01).
    """
    xs, groups = _per_x(rows, metric)
    if xs.size < 4:
        raise ValueError("a power plus a constant needs at least four x values")
    grid = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.01), 2) if grid is None else grid
    means = np.array([g.mean() for g in groups])
    value = float(_profile_exponent(xs, means, grid)[0])
    draws = _profile_exponent(xs, _bootstrap_means(groups, seed), grid)
    lo, hi = _interval(draws)
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    return Measurement(value, lo, hi, f"mean {metric} at x = {pairs}; fit a x^p + b", draws=draws)


def spread_of_normalised_gain(
    curves: Mapping[str, pd.DataFrame],
    low: Mapping[str, pd.DataFrame],
    high: Mapping[str, pd.DataFrame],
    metric: str,
    *,
    seed: int = 0,
) -> Measurement:
    """Largest gap, across series at the same x, of the normalised gain ``(L - R)/(L - H)``.

    ``curves[k]``: a learner's rows of series k (one per horizon); ``low[k]`` / ``high[k]``:
    the weak (L, uniform play) and strong (H, the non-private tracker) references. A collapse
    gives a small spread.
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
    return Measurement(
        spread, lo, hi, f"normalised gain at x = {list(map(float, xs))}: {table}",
        draws=boot_spread,
    )  # fmt: skip


def mean_with_ci(rows: pd.DataFrame, metric: str, *, seed: int = 0) -> Measurement:
    """Mean of ``metric`` over every row, with a t interval over rows (``seed`` is unused)."""
    v = rows[metric].to_numpy(np.float64)
    if v.size == 0:
        raise ValueError("mean_with_ci needs at least one row")
    mean, lo, hi, se, df = mean_t(v)
    return Measurement(mean, lo, hi, f"mean {metric} over {v.size} runs", (), se, df)


def worst_case_loglog_slope(
    frames: Mapping[str, pd.DataFrame], metric: str, *, seed: int = 0
) -> Measurement:
    """Slope of log(the largest mean ``metric`` over sequences ``frames``) on log(x)."""
    names = list(frames)
    per = {n: _per_x(frames[n], metric) for n in names}
    xs = per[names[0]][0]
    if any(not np.array_equal(per[n][0], xs) for n in names) or xs.size < 2:
        raise ValueError("worst_case_loglog_slope needs every sequence at the same x (two or more)")
    means = np.stack([[g.mean() for g in per[n][1]] for n in names])  # (family, x)
    worst = means.max(axis=0)
    which = [names[i] for i in means.argmax(axis=0)]
    pairs = ", ".join(f"{x:g}: {m:.4g} ({w})" for x, m, w in zip(xs, worst, which, strict=True))
    if np.any(worst <= 0):
        return Measurement(math.nan, math.nan, math.nan, f"worst mean {metric} <= 0 ({pairs})")
    boots = np.max(
        np.stack([_bootstrap_means(per[n][1], seed + i) for i, n in enumerate(names)]), axis=0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(boots > 0, boots, np.nan))
    lx = np.log(xs) - np.log(xs).mean()
    draws = (logs - logs.mean(axis=1, keepdims=True)) @ lx / float(lx @ lx)
    lo, hi = _interval(draws)
    return Measurement(
        _slope(xs, worst), lo, hi, f"worst mean {metric} over {names} at x = {pairs}",
        local_slopes(xs, worst), draws=draws,
    )  # fmt: skip


def excess_loglog_slope(
    rows: pd.DataFrame, base: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Slope in log-log of ``mean(rows at x) - mean(base)``: the part of regret x explains.

    ``base``: the same learner without the effect (epsilon = inf: the excess is the cost of
    privacy); the t interval counts both. NaN when an excess is not positive.
    """
    xs, groups = _per_x(rows, metric)
    b = base[metric].to_numpy(np.float64)
    means = np.array([g.mean() for g in groups]) - b.mean()
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    if np.any(means <= 0):
        return Measurement(
            math.nan, math.nan, math.nan, f"excess {metric} <= 0 at some x ({pairs})"
        )
    _, lo, hi, se, df = excess_slope_t(xs, groups, b)
    return Measurement(
        _slope(xs, means), lo, hi, f"excess mean {metric} at x = {pairs}",
        local_slopes(xs, means), se, df,
    )  # fmt: skip


def _gain_samples(
    curve: pd.DataFrame, low: pd.DataFrame, high: pd.DataFrame, metric: str, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted x, the mean normalised gain per x and its (bootstrap, x) samples."""
    xs, groups = _per_x(curve, metric)
    lo_v = low[metric].to_numpy(np.float64)
    hi_v = high[metric].to_numpy(np.float64)
    b = _bootstrap_means([*groups, lo_v, hi_v], seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (b[:, -2:-1] - b[:, :-2]) / (b[:, -2] - b[:, -1])[:, None]
    means = np.array([g.mean() for g in groups])
    gain = (lo_v.mean() - means) / (lo_v.mean() - hi_v.mean())
    return xs, gain, samples


def _spreads(
    logx: Sequence[np.ndarray], gains: Sequence[np.ndarray], shifts: np.ndarray, n_grid: int = 25
) -> np.ndarray:
    """Largest spread across the shifted curves, per row and candidate shift (NaN: no overlap)."""
    rows = gains[0].shape[0]
    out = np.full((rows, shifts.shape[0]), np.nan)
    for j, shift in enumerate(shifts):
        moved = [lx + d for lx, d in zip(logx, shift, strict=True)]
        left, right = max(m[0] for m in moved), min(m[-1] for m in moved)
        if right - left <= 1e-9:
            continue
        grid = np.linspace(left, right, n_grid)
        curves = []
        for m, g in zip(moved, gains, strict=True):
            # interpolation is linear in the gain, so one weight matrix serves every row
            weights = np.stack([np.interp(grid, m, np.eye(m.size)[i]) for i in range(m.size)])
            curves.append(g @ weights)
        stacked = np.stack(curves)  # (curves, rows, grid)
        out[:, j] = np.max(stacked.max(axis=0) - stacked.min(axis=0), axis=1)
    return out


def collapse_exponent(
    curves: Mapping[float, pd.DataFrame],
    low: Mapping[float, pd.DataFrame],
    high: Mapping[float, pd.DataFrame],
    metric: str,
    *,
    predicted: float = 0.5,
    grid: np.ndarray | None = None,
    max_spread: float = 0.25,
    min_rise: float = 0.5,
    seed: int = 0,
) -> Measurement:
    """Exponent b of S in the abscissa under which the normalised-gain curves of several S collapse.

    ``curves[s]``: a learner's rows at S = s, x = ``epsilon / (N sqrt(S/T))``; ``low`` /
    ``high``: the references. Against ``x S^(1/2 - b)``, b = 1/2 is the theorem's threshold and
    b = 0 drops S; b minimises the largest spread across S of the gain curves (on ``grid``,
    default -0.5..1.5 step 0.05). NaN when a gain rises by less than ``min_rise`` or no b brings
    the spread to ``max_spread``.
    """
    grid = np.round(np.arange(-0.5, 1.5 + 1e-9, 0.05), 2) if grid is None else grid
    ss = sorted(curves)
    logx, gains, boots, rises = [], [], [], []
    for i, s in enumerate(ss):
        xs, gain, samples = _gain_samples(curves[s], low[s], high[s], metric, seed + i)
        logx.append(np.log(xs))
        gains.append(gain[None, :])
        boots.append(samples)
        rises.append(float(gain[-1] - gain[0]))
    shifts = np.array([[(predicted - b) * math.log(s) for s in ss] for b in grid])
    spread = _spreads(logx, gains, shifts)[0]
    at = {b: spread[j] for j, b in enumerate(grid)}
    table = "; ".join(
        f"S={s:g}: " + ", ".join(f"{g:.2f}" for g in gain[0])
        for s, gain in zip(ss, gains, strict=True)
    )
    detail = (
        f"spread across S with S in the abscissa (b = {predicted:g}): "
        f"{at.get(predicted, math.nan):.2f}, with S dropped (b = 0): "
        f"{at.get(0.0, math.nan):.2f}; gain at x = "
        f"{[round(float(v), 3) for v in np.exp(logx[0])]}: {table}"
    )
    if min(rises) < min_rise:
        return Measurement(
            math.nan, math.nan, math.nan,
            f"the gain rises by {min(rises):.2f} < {min_rise} across x at some S: no transition "
            f"to collapse; {detail}",
        )  # fmt: skip
    if not np.nanmin(spread) <= max_spread:
        return Measurement(
            math.nan, math.nan, math.nan,
            f"no exponent brings the spread to {max_spread} or below (smallest "
            f"{np.nanmin(spread):.2f}): nothing collapses; {detail}",
        )  # fmt: skip
    value = float(grid[int(np.nanargmin(spread))]) + 0.0  # no "-0"
    boot_spread = _spreads(logx, boots, shifts)
    filled = np.where(np.isfinite(boot_spread), boot_spread, np.inf)
    best = grid[np.argmin(filled, axis=1)].astype(np.float64)
    best[~np.isfinite(filled.min(axis=1))] = np.nan
    lo, hi = _interval(best)
    smallest = float(np.nanmin(spread))
    text = f"best b {value:g} (smallest spread {smallest:.2f}); {detail}"
    return Measurement(value, lo, hi, text, draws=best)
