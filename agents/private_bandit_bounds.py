"""Regret-bound pieces shared by the private bandit tunings (public quantities only).

Guarded logarithms, the second-moment bound of exponential weights fed noisy losses and the grid of
batch lengths; docs/algorithms.md ("Calibration") derives them.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["glog", "log_experts", "second_moment_bound", "second_moment_exp3", "tau_grid"]


def glog(x: float) -> float:
    """Guarded natural log ``max(log x, 1)`` for the log terms of the bounds."""
    return max(math.log(x), 1.0) if x > 0 else 1.0


def log_experts(n: int) -> float:
    """``log N`` with N = 1 treated as 2 (a single expert has nothing to learn)."""
    return math.log(max(n, 2))


def second_moment_bound(
    n: int, k: int, horizon: int, lam: float, eta: float, gamma: float
) -> float:
    """Calibrated regret bound of EXP4 fed ``l + Lap(lam)`` (EXP3: ``n = k``, identity experts).

    ``log N / eta + eta T K (1/2 + 2 lam^2) + gamma T + 1``; ``inf`` unless
    ``eta K lam log(KT) <= gamma <= 1`` (the exploration keeping every estimate above ``-1/eta``).
    """
    if eta <= 0 or gamma > 1.0 or gamma < eta * k * lam * glog(k * horizon) * (1 - 1e-12):
        return math.inf
    return (
        log_experts(n) / eta + eta * horizon * k * (0.5 + 2.0 * lam * lam) + gamma * horizon + 1.0
    )


def second_moment_exp3(
    n: int, k: int, horizon: int, lam: float, max_gamma: float = 0.5
) -> tuple[float, float]:
    """``(eta, gamma)`` minimising :func:`second_moment_bound`, gamma at its lower limit.

    gamma is capped at ``max_gamma`` (eta then shrinks with it); at ``lam = 0`` this is EXP4's
    ``sqrt(2 log N / (T K))`` with no exploration.
    """
    lg = glog(k * horizon)
    slope = k * (0.5 + 2.0 * lam * lam) + k * lam * lg
    eta = math.sqrt(log_experts(n) / (horizon * slope))
    gamma = eta * k * lam * lg
    if gamma > max_gamma:
        gamma = max_gamma
        eta = max_gamma / (k * lam * lg)
    return eta, gamma



def tau_grid(horizon: int, extra: int | None = None) -> np.ndarray:
    """The batch lengths a calibrated tuning tries: ``1 .. max(1, T // 10)`` (and ``extra``).

    Every integer up to 2000, then a fine log grid.
    """
    top = max(1, horizon // 10)
    grid = np.arange(1, min(top, 2000) + 1)
    if top > 2000:
        grid = np.union1d(grid, np.round(np.geomspace(2000, top, 2000)).astype(np.int64))
    if extra is not None and 1 <= extra <= top:
        grid = np.union1d(grid, [extra])
    return grid

