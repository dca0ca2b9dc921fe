"""The uncertainty drawn in the figures: seed-bootstrap bands of regret curves and intervals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def curve_bands(
    matrices: list[np.ndarray], confidence: float, n_boot: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Mean over seeds (axis 1) with a percentile bootstrap band: (mean, low, high) of each.

    Each curve is resampled as if alone (``n_boot`` draws of its seeds from a generator seeded
    with ``seed``). Finite curves of one seed count share one matrix product of draw counts
    (within 1e-15 relative of a gather); a curve with a non-finite value keeps the gather,
    where a seed not drawn cannot turn a mean into NaN (0 x inf).
    """
    out: list[Any] = [None] * len(matrices)
    by_seeds: dict[tuple[int, bool], list[int]] = {}
    for i, matrix in enumerate(matrices):
        key = (matrix.shape[1], bool(np.isfinite(matrix).all()))
        by_seeds.setdefault(key, []).append(i)
    tail = (1 - confidence) / 2
    for (n_seeds, finite), members in by_seeds.items():
        means = [matrices[i].mean(axis=1) for i in members]
        if n_seeds < 2:
            for i, mean in zip(members, means, strict=True):
                out[i] = (mean, mean, mean)
            continue
        idx = np.random.default_rng(seed).integers(0, n_seeds, size=(n_boot, n_seeds))
        stacked = np.concatenate([matrices[i] for i in members])
        if finite:
            draws = np.arange(n_boot)[:, None] * n_seeds + idx
            counts = np.bincount(draws.ravel(), minlength=n_boot * n_seeds)
            boots = stacked @ (counts.reshape(n_boot, n_seeds).T / n_seeds)
        else:
            boots = stacked[:, idx].mean(axis=2)  # (rounds, n_boot)
        lows, highs = _sorted_quantiles(np.sort(boots, axis=1), (tail, 1 - tail))
        ends = np.cumsum([len(mean) for mean in means])[:-1]
        for i, mean, lo, hi in zip(
            members, means, np.split(lows, ends), np.split(highs, ends), strict=True
        ):
            out[i] = (mean, lo, hi)
    return out


def _sorted_quantiles(rows: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """``np.quantile(rows, q, axis=1)`` (method "linear") of each q, for rows sorted ascending.

    numpy's own formula (the same floats) without its copy and selection; NaN rows give NaN.
    """
    n = rows.shape[1]
    has_nan = np.isnan(rows[:, -1])
    out = []
    for q in qs:
        virtual = (n - 1) * q
        below = min(int(np.floor(virtual)), n - 1)
        above = min(below + 1, n - 1)
        t = virtual - below
        a, b = rows[:, below], rows[:, above]
        diff = b - a
        value = b - diff * (1 - t) if t >= 0.5 else a + diff * t
        out.append(np.where(has_nan, np.nan, value))
    return out


def bootstrap_cis(groups: list[np.ndarray], n_boot: int = 2000) -> np.ndarray:
    """:func:`~dp_experts_env.evaluation.stats.bootstrap_ci` (mean) of each group: (k, 3).

    The same floats as one call per group, for all groups of one size at once.
    """
    out = np.empty((len(groups), 3))
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(groups):
        by_size.setdefault(len(values), []).append(i)
    tail = (1.0 - 0.95) / 2.0
    for size, members in by_size.items():
        if size == 0:
            raise ValueError("values must not be empty")
        idx = np.random.default_rng(0).integers(0, size, size=(n_boot, size))
        # at most ~2e6 resampled values in memory at once (1,000 seeds: one group at a time)
        chunk = max(1, 2_000_000 // (n_boot * size))
        for start in range(0, len(members), chunk):
            part = members[start : start + chunk]
            values = np.stack([np.asarray(groups[i], dtype=np.float64) for i in part])
            # Row means of a 2-D (groups x resamples, size) gather: numpy sums each row as it
            # does bootstrap_ci's (resamples, size) matrix (a 3-D mean over the last axis
            # sums in another order).
            boots = values[:, idx].reshape(-1, size).mean(axis=1).reshape(len(part), n_boot)
            boots = np.sort(boots, axis=1)
            out[part, 0] = values.mean(axis=1)
            out[part, 1], out[part, 2] = _sorted_quantiles(boots, (tail, 1.0 - tail))
    return out


def round_matrix(group: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted rounds and the (rounds, seeds) matrix of ``metric``: a faster ``pivot_table``."""
    values = group[metric].to_numpy(dtype=np.float64)
    rounds, r_idx = np.unique(group["round"].to_numpy(), return_inverse=True)
    seeds, s_idx = np.unique(group["seed"].to_numpy(), return_inverse=True)
    cells = r_idx.astype(np.int64) * len(seeds) + s_idx
    if (
        len(values) == len(rounds) * len(seeds)
        and not np.isnan(values).any()
        and len(np.unique(cells)) == len(values)
    ):
        matrix = np.empty(len(values))
        matrix[cells] = values
        return rounds, matrix.reshape(len(rounds), len(seeds))
    table = group.pivot_table(index="round", columns="seed", values=metric)
    return table.index.to_numpy(), table.to_numpy()
