"""FTPL-GR's calibrated bounds and rates as the batched conversion's base learner.

Functions of public quantities only (m, T_B, lam); docs/algorithms.md ("Calibration") derives them.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "ftpl_gr_bound",
    "ftpl_gr_calibrated",
    "laplace_max_mean",
    "ftpl_gr_tight_bound",
    "ftpl_gr_tight_calibrated",
    "laplace_fed_moment",
    "ftpl_gr_adaptive_bound",
    "ftpl_gr_adaptive_calibrated",
    "ADAPTIVE_GRID",
    "ADAPTIVE_S_TOP",
]


def ftpl_gr_bound(m: int, horizon: int, lam: float, eta: float, cap: int) -> float:
    """Calibrated regret bound of FTPL-GR fed ``l + Lap(lam)`` (``inf`` where it does not apply).

    ``(1 + log m)/eta + eta T m (1 + 2 lam^2 (1 + (1 - s)^-3)) + m T/(e M)``, ``s = eta M lam < 1``:
    perturbation, stability charged by second moments, resampling bias (proof: docs/algorithms.md,
    "Calibration").
    """
    s = eta * cap * lam
    if eta <= 0 or cap < 1 or s >= 1.0:
        return math.inf
    noise = 2.0 * lam * lam * (1.0 + (1.0 - s) ** -3) if lam > 0 else 0.0
    return (
        (1.0 + math.log(m)) / eta
        + eta * horizon * m * (1.0 + noise)
        + m * horizon / (math.e * cap)
    )


#: eta grid points per resampling cap in :func:`ftpl_gr_calibrated` (log-spaced)
_FTPL_ETA_POINTS = 256


def _ftpl_grid(top: int, lam: float, free: float) -> tuple[np.ndarray, np.ndarray]:
    """The (M, eta) search grid: 64 log-spaced caps up to ``top``, 256 log-spaced rates each."""
    caps = np.unique(np.round(np.geomspace(1, top, 64)).astype(np.int64)).astype(np.float64)
    hi = np.minimum(free, (1.0 - 1e-6) / (caps * lam))
    frac = np.linspace(0.0, 1.0, _FTPL_ETA_POINTS)
    etas = hi[:, None] * np.exp(np.log(free / 50.0 / hi)[:, None] * frac[None, ::-1])
    return caps, etas


def ftpl_gr_calibrated(m: int, horizon: int, lam: float) -> tuple[float, int, float]:
    """``(eta, M, bound)`` minimising :func:`ftpl_gr_bound` over the resampling cap M and eta.

    M on a 64-point log grid up to ``ceil(sqrt(m T))`` (Lemma 25's), eta on 256 log points below
    ``free = sqrt((1 + log m)/(T m (1 + 4 lam^2)))`` (the minimiser at ``s = 0``) and
    ``(1 - 1e-6)/(M lam)``. At ``lam = 0``: ``free`` and ``ceil(sqrt(m T))``.
    """
    tb = max(1, horizon)
    top = math.ceil(math.sqrt(m * tb))
    free = math.sqrt((1.0 + math.log(m)) / (tb * m * (1.0 + 4.0 * lam * lam)))
    if lam == 0:
        return free, top, ftpl_gr_bound(m, tb, 0.0, free, top)
    caps, etas = _ftpl_grid(top, lam, free)
    s = etas * caps[:, None] * lam
    bounds = (
        (1.0 + math.log(m)) / etas
        + etas * tb * m * (1.0 + 2.0 * lam * lam * (1.0 + (1.0 - s) ** -3))
        + m * tb / (math.e * caps[:, None])
    )
    i, j = np.unravel_index(int(np.argmin(bounds)), bounds.shape)
    eta, cap = float(etas[i, j]), int(caps[i])
    return eta, cap, ftpl_gr_bound(m, tb, lam, eta, cap)


@functools.lru_cache(maxsize=64)
def laplace_max_mean(m: int) -> float:
    """``E max_i Z_i`` for m iid standard Laplace variates, exactly.

    ``sum_k C(m, k) 2^-m H_k - 2^-m / m`` (H_k the harmonic numbers).
    """
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    k = np.arange(1, m + 1, dtype=np.float64)
    log_pmf = np.array(
        [math.lgamma(m + 1) - math.lgamma(j + 1) - math.lgamma(m - j + 1) for j in range(1, m + 1)]
    ) - m * math.log(2.0)
    return float(np.sum(np.exp(log_pmf) * np.cumsum(1.0 / k))) - 2.0 ** (-m) / m


def _ftpl_gr_tight_terms(
    m: int, horizon: int, lam: float, eta: np.ndarray, cap: np.ndarray
) -> np.ndarray:
    """:func:`ftpl_gr_tight_bound`, vectorised over broadcastable ``eta`` and ``cap``."""
    u = eta * cap
    s = u * lam
    stretch = np.maximum(1.0, 1.0 - u + 0.5 * u * u)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = np.where(s < 1.0, 2.0 * lam * lam * stretch / (1.0 - s * s), np.inf)
    if lam == 0:
        noise = np.zeros_like(noise)
    bias = m * horizon * (cap / (cap + 1.0)) ** cap / (cap + 1.0)
    return laplace_max_mean(m) / eta + eta * horizon * m * (1.0 + noise) + bias


def ftpl_gr_tight_bound(m: int, horizon: int, lam: float, eta: float, cap: int) -> float:
    """Tight regret bound of FTPL-GR fed ``l + Lap(lam)`` (``inf`` where it does not apply).

    ``E_m/eta + eta T m (1 + 2 lam^2 c/(1 - s^2)) + m T (M/(M+1))^M/(M+1)`` with ``u = eta M``,
    ``s = u lam < 1``, ``c = max(1, 1 - u + u^2/2)``, ``E_m`` = :func:`laplace_max_mean`. Not the
    default (proof and comparison: docs/algorithms.md, "Calibration").
    """
    if eta <= 0 or cap < 1 or eta * cap * lam >= 1.0:
        return math.inf
    return float(_ftpl_gr_tight_terms(m, horizon, lam, np.float64(eta), np.float64(cap)))


def ftpl_gr_tight_calibrated(m: int, horizon: int, lam: float) -> tuple[float, int, float]:
    """``(eta, M, bound)`` minimising :func:`ftpl_gr_tight_bound` on the default's (M, eta) grid."""
    tb = max(1, horizon)
    top = math.ceil(math.sqrt(m * tb))
    free = math.sqrt(laplace_max_mean(m) / (tb * m * (1.0 + 2.0 * lam * lam)))
    if lam == 0:
        return free, top, ftpl_gr_tight_bound(m, tb, 0.0, free, top)
    caps, etas = _ftpl_grid(top, lam, free)
    bounds = _ftpl_gr_tight_terms(m, tb, lam, etas, caps[:, None])
    i, j = np.unravel_index(int(np.argmin(bounds)), bounds.shape)
    eta, cap = float(etas[i, j]), int(caps[i])
    return eta, cap, ftpl_gr_tight_bound(m, tb, lam, eta, cap)


def laplace_fed_moment(level: float, lam: float, power: int, rate: float) -> float:
    """``E[(l + N)^k exp(b max(0, -(l + N)))]`` for ``N ~ Lap(lam)``, ``l >= 0``, k = 2 or 4.

    Exact (``inf`` unless ``b lam < 1``); convex in l, so its maximum on [0, 1] is at 0 or 1.
    """
    if power not in (2, 4):
        raise ValueError(f"power must be 2 or 4, got {power}")
    mean = (
        level**2 + 2.0 * lam**2
        if power == 2
        else level**4 + 12.0 * level**2 * lam**2 + 24.0 * lam**4
    )
    if lam == 0.0:
        return float(mean)
    if rate * lam >= 1.0:
        return math.inf
    excess = 0.5 * math.factorial(power) * lam**power * math.exp(-level / lam)
    return float(mean + excess * ((1.0 - rate * lam) ** -(power + 1) - 1.0))


def ftpl_gr_adaptive_bound(
    m: int, horizon: int, lam: float, cap: int, s: float, q0: float
) -> float:
    """Worst-case regret bound of FTPL-GR with the adaptive rate of ``AdaptiveFtplRate``.

    ``E_m/eta_max + 2 sqrt(2 E_m (q0 + T v)) + sqrt(E_m/2) T u2/(2 q0^(3/2))`` plus the resampling
    bias, ``eta_max = s/(M lam)``, v and u2 from :func:`laplace_fed_moment`. Needs ``s < 1/2`` when
    lam > 0 (proof: docs/algorithms.md, "Calibration", the adaptive rate).
    """
    if cap < 1 or q0 <= 0 or (lam > 0 and not 0 < s < 0.5):
        return math.inf
    return float(_ftpl_gr_adaptive_terms(m, horizon, lam, np.float64(cap), np.float64(s), q0))


def _ftpl_gr_adaptive_terms(
    m: int, horizon: int, lam: float, cap: np.ndarray, s: np.ndarray, q0: np.ndarray | float
) -> np.ndarray:
    """:func:`ftpl_gr_adaptive_bound`, vectorised over broadcastable ``cap``, ``s``, ``q0``."""
    pen = laplace_max_mean(m)
    if lam == 0.0:
        first = np.zeros(np.broadcast_shapes(np.shape(cap), np.shape(s)))
        a2, a4 = 1.0, 1.0
    else:
        first = pen * cap * lam / s
        b = np.asarray(s, dtype=np.float64) / lam
        a2 = np.maximum(*(_fed_moment_vec(level, lam, 2, b) for level in (0.0, 1.0)))
        a4 = np.maximum(*(_fed_moment_vec(level, lam, 4, 2.0 * b) for level in (0.0, 1.0)))
    v = m * a2
    u2 = cap * m * a4
    q0 = np.asarray(q0, dtype=np.float64)
    bias = m * horizon * (cap / (cap + 1.0)) ** cap / (cap + 1.0)
    return (
        first
        + 2.0 * math.sqrt(2.0 * pen) * np.sqrt(q0 + horizon * v)
        + math.sqrt(pen / 2.0) * horizon * u2 / (2.0 * q0**1.5)
        + bias
    )


def _fed_moment_vec(level: float, lam: float, power: int, rate: np.ndarray) -> np.ndarray:
    """:func:`laplace_fed_moment` vectorised over ``rate`` (``inf`` where ``rate lam >= 1``)."""
    mean = (
        level**2 + 2.0 * lam**2
        if power == 2
        else level**4 + 12.0 * level**2 * lam**2 + 24.0 * lam**4
    )
    excess = 0.5 * math.factorial(power) * lam**power * math.exp(-level / lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        blow = np.where(rate * lam < 1.0, (1.0 - rate * lam) ** -(power + 1.0), np.inf)
    return mean + excess * (blow - 1.0)


#: points of the (M, s, q0) grid of :func:`ftpl_gr_adaptive_calibrated`
ADAPTIVE_GRID = (48, 24, 40)
#: the top of its s grid (s < 1/2): a tuning there sits on the proof's limit (a claim warning)
ADAPTIVE_S_TOP = 0.5 - 0.5 / ADAPTIVE_GRID[1] - 1e-9


@functools.lru_cache(maxsize=8192)
def ftpl_gr_adaptive_calibrated(
    m: int, horizon: int, lam: float
) -> tuple[float, int, float, float]:
    """``(eta_max, M, q0, bound)`` minimising :func:`ftpl_gr_adaptive_bound`.

    M on 48 log points up to ``ceil(sqrt(m T))``, ``s = eta_max M lam`` on 24 points of (0, 1/2), q0
    on 40 log points from ``m`` to ``1e3 m T``; at lam = 0, ``eta_max = inf``.
    """
    tb = max(1, horizon)
    top = math.ceil(math.sqrt(m * tb))
    n_cap, n_s, n_q = ADAPTIVE_GRID
    caps = np.unique(np.round(np.geomspace(1, top, n_cap)).astype(np.int64)).astype(np.float64)
    ss = np.linspace(0.5 / n_s, 0.5, n_s, endpoint=False) if lam > 0 else np.array([0.25])
    qs = np.geomspace(m, 1e3 * m * tb, n_q)
    bounds = _ftpl_gr_adaptive_terms(
        m, tb, lam, caps[:, None, None], ss[None, :, None], qs[None, None, :]
    )
    i, j, k = np.unravel_index(int(np.argmin(bounds)), bounds.shape)
    cap, s, q0 = int(caps[i]), float(ss[j]), float(qs[k])
    eta_max = math.inf if lam == 0 else s / (cap * lam)
    return eta_max, cap, q0, ftpl_gr_adaptive_bound(m, tb, lam, cap, s, q0)

