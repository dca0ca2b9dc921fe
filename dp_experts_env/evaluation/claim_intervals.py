"""Intervals that cover for the claims' means and slopes, band p-values and Holm's step-down.

t intervals for a mean and, by the delta method with Welch-Satterthwaite degrees of freedom,
for log-log slopes (docs/reproduce.md, "Intervals").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "LEVEL",
    "band_p_value",
    "excess_slope_t",
    "holm",
    "mean_t",
    "slope_t",
]

#: Two-sided confidence level of every interval.
LEVEL = 0.95


def _t(df: float) -> float:
    """The t quantile of :data:`LEVEL`'s upper tail at ``df`` degrees of freedom (inf if df <= 0).

    ``scipy.special.stdtrit`` is what ``scipy.stats.t.ppf`` evaluates for these arguments, the
    same float without the distribution's argument handling (about 40x its cost: the coverage
    simulations and every claim's analysis ask for it per interval); tests/test_claim_intervals.py
    holds the two equal.
    """
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + LEVEL / 2)) if df > 0 else math.inf


def _ws_df(variances: Sequence[float], dfs: Sequence[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance terms."""
    num = sum(variances) ** 2
    den = sum(v * v / d for v, d in zip(variances, dfs, strict=True) if d > 0)
    return num / den if den > 0 else math.inf


def mean_t(values: np.ndarray) -> tuple[float, float, float, float, float]:
    """``(mean, low, high, se, df)`` of the t interval of a mean (NaN bounds for n < 2)."""
    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())
    if v.size < 2:
        return mean, math.nan, math.nan, math.nan, math.nan
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    df = float(v.size - 1)
    half = _t(df) * se
    return mean, mean - half, mean + half, se, df


def _coefficients(xs: np.ndarray) -> np.ndarray:
    lx = np.log(xs) - np.log(xs).mean()
    return lx / float(lx @ lx)


def slope_t(
    xs: np.ndarray, groups: Sequence[np.ndarray]
) -> tuple[float, float, float, float, float]:
    """``(slope, low, high, se, df)`` of log(mean) on log(x); NaN where a mean is <= 0."""
    means = np.array([g.mean() for g in groups])
    if np.any(means <= 0) or any(g.size < 2 for g in groups):
        return math.nan, math.nan, math.nan, math.nan, math.nan
    c = _coefficients(np.asarray(xs, dtype=np.float64))
    slope = float(c @ np.log(means))
    terms = [
        float(ci * ci * g.var(ddof=1) / (g.size * m * m))
        for ci, g, m in zip(c, groups, means, strict=True)
    ]
    se = math.sqrt(sum(terms))
    df = _ws_df(terms, [g.size - 1 for g in groups])
    half = _t(df) * se
    return slope, slope - half, slope + half, se, df


def excess_slope_t(
    xs: np.ndarray, groups: Sequence[np.ndarray], base: np.ndarray
) -> tuple[float, float, float, float, float]:
    """``(slope, low, high, se, df)`` of log(mean_x - mean_base) on log(x)."""
    means = np.array([g.mean() for g in groups])
    excess = means - float(base.mean())
    if np.any(excess <= 0) or base.size < 2 or any(g.size < 2 for g in groups):
        return math.nan, math.nan, math.nan, math.nan, math.nan
    c = _coefficients(np.asarray(xs, dtype=np.float64))
    slope = float(c @ np.log(excess))
    terms = [
        float((ci / e) ** 2 * g.var(ddof=1) / g.size)
        for ci, g, e in zip(c, groups, excess, strict=True)
    ]
    terms.append(float(np.sum(c / excess) ** 2 * base.var(ddof=1) / base.size))
    se = math.sqrt(sum(terms))
    df = _ws_df(terms, [g.size - 1 for g in groups] + [base.size - 1])
    half = _t(df) * se
    return slope, slope - half, slope + half, se, df


def band_p_value(
    kind: str,
    low: float,
    high: float,
    decision: str,
    *,
    value: float,
    se: float = math.nan,
    df: float = math.nan,
    draws: np.ndarray | None = None,
) -> float:
    """The one-sided p-value of ``decision`` (``holds`` or ``fails``) against the band.

    The t tail beyond the band's edge (``se``, ``df``), else the share of bootstrap ``draws``
    beyond it; 1.0 when neither is available or for another decision.

    Args:
        kind: ``two_sided``, ``at_most`` or ``at_least``.
        low: the band's lower edge (``predicted - tolerance``).
        high: its upper edge.
        decision: the verdict whose null hypothesis is tested.
        value: the estimate.
        se: its standard error.
        df: its degrees of freedom.
        draws: bootstrap draws of the estimate.
    """
    if decision not in ("holds", "fails"):
        return 1.0
    if math.isfinite(se) and se > 0 and math.isfinite(value):
        from scipy.stats import t

        df_ = df if math.isfinite(df) else 1e9

        def below(edge: float) -> float:  # p of "the quantity is below edge"
            return float(t.sf((edge - value) / se, df_))

        def above(edge: float) -> float:
            return float(t.sf((value - edge) / se, df_))
    elif draws is not None and np.isfinite(draws).sum() >= 0.9 * len(draws) > 0:
        finite = draws[np.isfinite(draws)]

        def below(edge: float) -> float:
            return float(np.mean(finite >= edge))

        def above(edge: float) -> float:
            return float(np.mean(finite <= edge))
    else:
        return 1.0
    if kind == "at_most":
        return below(high) if decision == "holds" else above(high)
    if kind == "at_least":
        return above(low) if decision == "holds" else below(low)
    if decision == "holds":
        return max(above(low), below(high))
    return min(below(low), above(high))


def holm(p_values: Sequence[float], alpha: float = (1 - LEVEL) / 2) -> list[bool]:
    """Holm's step-down: which of ``p_values`` are still rejected at family level ``alpha``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    out = [False] * len(p_values)
    m = len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] <= alpha / (m - rank):
            out[i] = True
        else:
            break
    return out
