"""Renyi accountant of continuous P-COMW with linear losses (box or ball): tight and certified.

P-COMW (Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy Online Convex
Optimization", Algorithm 1): each round's exact Renyi supremum, composed (Mironov 2017) and
converted by Canonne, Kamath & Steinke 2020, Prop. 12; ``kappa = beta G^2/lambda``,
``W = 2 beta G D``. Proofs: docs/privacy.md, "P-COMW's Renyi accountant". The argument's three
steps (:func:`randomized_response_rdp`, :func:`lazy_round_rdp`, :func:`rdp_to_dp`) are public
so each can be checked on its own.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "ORDERS",
    "PCOMWRenyiAccount",
    "lazy_round_rdp",
    "pcomw_best_p",
    "pcomw_calibrated",
    "pcomw_rdp_account",
    "randomized_response_rdp",
    "rdp_to_dp",
]

# Renyi orders a > 1 tried by the conversion (every order is valid; the grid sets tightness).
ORDERS = np.concatenate([1.0 + np.logspace(-2, 0, 20)[:-1], np.logspace(math.log10(2.0), 6, 160)])


def _check(name: str, value: float, low: float, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not (low < v < high) and not (v == high == math.inf):
        raise ValueError(f"{name} must lie in ({low:g}, {high:g}), got {value!r}")
    return v


def randomized_response_rdp(epsilon: float, orders: np.ndarray = ORDERS) -> np.ndarray:
    """Renyi divergence of the worst epsilon-DP pair (randomized response) at each order."""
    a = np.asarray(orders, dtype=np.float64)
    e = float(epsilon)
    return (np.logaddexp(a * e, (1.0 - a) * e) - np.logaddexp(0.0, e)) / (a - 1.0)


def lazy_round_rdp(
    orders: np.ndarray, coin: float, log_low: float, log_high: float, log_m: np.ndarray
) -> np.ndarray:
    """Supremum of one lazy round's Renyi divergence over the feasible stay probabilities.

    ``sup (1/(a-1)) ln(q^a q'^{1-a} + (1-q)^a (1-q')^{1-a} M_a)`` over ``q, q'`` in
    ``[low, high]`` with ``|ln(q/q')| <= coin``; jointly convex on a polygon, so the maximum is at
    one of the six candidate vertices.

    Args:
        orders: (A,) Renyi orders > 1.
        coin: bound on the log-ratio of the two stay probabilities (>= 0).
        log_low: log of the smallest stay probability.
        log_high: log of the largest stay probability (< 0).
        log_m: (A,) upper bounds of ``(a - 1) D_a(sample || sample')``.
    """
    return _round_rdp(np.asarray(orders, float), coin, np.array([log_low]), np.array([log_high]),
                      np.asarray(log_m, float))[0]  # fmt: skip


def _round_rdp(
    a: np.ndarray, coin: float, log_low: np.ndarray, log_high: np.ndarray, log_m: np.ndarray
) -> np.ndarray:
    """(P, A) suprema for P stay-probability ranges at once (see :func:`lazy_round_rdp`)."""
    lo, hi = log_low[:, None], log_high[:, None]
    up = np.minimum(hi, lo + coin)
    down = np.maximum(lo, hi - coin)
    lq = np.concatenate([lo, hi, lo, up, down, hi], axis=1)[:, None, :]  # (P, 1, 6)
    lqp = np.concatenate([lo, hi, up, lo, hi, down], axis=1)[:, None, :]
    aa = a[None, :, None]
    stay = aa * lq + (1.0 - aa) * lqp
    move = aa * np.log1p(-np.exp(lq)) + (1.0 - aa) * np.log1p(-np.exp(lqp)) + log_m[None, :, None]
    return np.logaddexp(stay, move).max(axis=2) / (a[None, :] - 1.0)


def rdp_to_dp(rdp: np.ndarray, delta: float, orders: np.ndarray = ORDERS) -> tuple[float, float]:
    """``(epsilon, order)``: the best ``(epsilon, delta)`` conversion over the orders.

    Canonne, Kamath & Steinke 2020, Prop. 12:
    ``epsilon = rho + ln(1 - 1/a) - (ln delta + ln a)/(a - 1)``.
    """
    a = np.asarray(orders, dtype=np.float64)
    eps = (
        np.asarray(rdp, dtype=np.float64)
        + np.log1p(-1.0 / a)
        - (math.log(delta) + np.log(a)) / (a - 1.0)
    )
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


class PCOMWRenyiAccount(NamedTuple):
    """What :func:`pcomw_rdp_account` certifies.

    Attributes:
        epsilon: certified epsilon at ``delta`` (the requested delta).
        order: the Renyi order that gave epsilon.
        first_round: Renyi divergence (at ``order``) of the round reading the changed gradient.
        later_round: the same for one later round.
        coin_t0: bound on the round-t0 stay log-ratio; ``coin`` for later rounds.
        sample_pure: pure bound W on a fresh sample's log-ratio.
    """

    epsilon: float
    delta: float
    order: float
    first_round: float
    later_round: float
    coin_t0: float
    coin: float
    sample_pure: float


def _total_rdp(
    kappa: float, horizon: int, p: np.ndarray, log_phi: float, beta_gd: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """(P, A) composed Renyi divergence for P values of p; also the two round terms."""
    w = 2.0 * beta_gd
    # Stay probability (1 - p) Pi(r / Phi) with |ln r| <= beta G D (fact 4 with g for Delta).
    log_low = np.log1p(-p) + max(-2.0 * log_phi, -beta_gd - log_phi)
    log_high = np.log1p(-p) + min(0.0, beta_gd - log_phi)
    a = ORDERS
    log_m = (a - 1.0) * np.minimum(2.0 * a * kappa, randomized_response_rdp(w, a))
    coin_t0 = min(2.0 * log_phi, w)
    coin = min(2.0 * kappa, beta_gd)
    first = _round_rdp(a, coin_t0, log_low, log_high, log_m)
    later = _round_rdp(a, coin, log_low, log_high, log_m)
    total = first + max(horizon - 2, 0) * later if horizon >= 2 else np.zeros_like(first)
    return total, first, later, coin_t0, coin


def pcomw_rdp_account(
    kappa: float,
    horizon: int,
    delta: float,
    *,
    p: float,
    log_phi: float,
    beta_gd: float,
) -> PCOMWRenyiAccount:
    """Certified ``(epsilon, delta)`` of P-COMW (linear losses) from its public parameters.

    Args:
        kappa: ``beta G^2 / lambda`` (> 0).
        horizon: T (>= 1).
        delta: target delta in (0, 1).
        p: forced-resample probability, in (0, 1).
        log_phi: ``ln Phi`` of the stay coin's clip (> 0).
        beta_gd: ``beta G D`` (> 0), D the body's diameter.
    """
    k = _check("kappa", kappa, 0.0)
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
    dl = _check("delta", delta, 0.0, 1.0)
    pp = _check("p", p, 0.0, 1.0)
    lp = _check("log_phi", log_phi, 0.0)
    bgd = _check("beta_gd", beta_gd, 0.0)
    total, first, later, coin_t0, coin = _total_rdp(k, int(horizon), np.array([pp]), lp, bgd)
    eps, order = rdp_to_dp(total[0], dl, ORDERS)
    i = int(np.flatnonzero(ORDERS == order)[0])
    return PCOMWRenyiAccount(
        eps, dl, order, float(first[0, i]), float(later[0, i]), coin_t0, coin, 2.0 * bgd
    )


def _calibrated_beta_gd(kappa: np.ndarray, horizon: int, dim: int) -> np.ndarray:
    """``beta G D`` at the regret-optimal ``lambda = (G/D) sqrt(2T + 2 d ln(T)/kappa)``."""
    return np.sqrt(2.0 * horizon * kappa**2 + 2.0 * dim * kappa * math.log(horizon))


def _best_p(kappa: float, horizon: int, dim: int, delta: float) -> tuple[float, float]:
    """``(epsilon, p)`` minimising the certified epsilon over p at this kappa (log grid)."""
    bgd = float(_calibrated_beta_gd(np.float64(kappa), horizon, dim))

    def epsilons(ps: np.ndarray) -> np.ndarray:
        total = _total_rdp(kappa, horizon, ps, bgd, bgd)[0]
        conv = np.log1p(-1.0 / ORDERS) - (math.log(delta) + np.log(ORDERS)) / (ORDERS - 1.0)
        return np.maximum((total + conv[None, :]).min(axis=1), 0.0)

    grid = np.exp(np.linspace(math.log(min(0.5, 1.0 / horizon)), math.log(0.999), 48))
    eps = epsilons(grid)
    i = int(np.argmin(eps))
    fine = np.exp(np.linspace(math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, 47)]), 17))
    eps_f = epsilons(fine)
    j = int(np.argmin(eps_f))
    if eps_f[j] <= eps[i]:
        return float(eps_f[j]), float(fine[j])
    return float(eps[i]), float(grid[i])


def pcomw_best_p(kappa: float, horizon: int, dim: int, delta: float) -> float:
    """The forced-resample probability with the smallest certified epsilon at this kappa.

    Calibrated geometry (:func:`pcomw_calibrated`); a log grid over ``[min(1/2, 1/T), 0.999]``
    refined once.
    """
    k = _check("kappa", kappa, 0.0)
    return _best_p(k, int(horizon), int(dim), _check("delta", delta, 0.0, 1.0))[1]


@functools.lru_cache(maxsize=256)
def pcomw_calibrated(horizon: int, dim: int, epsilon: float, delta: float) -> tuple[float, float]:
    """``(kappa, p)`` of P-COMW's calibrated dp tuning (docs/algorithms.md).

    With ``lambda = (G/D) sqrt(2T + 2 d ln(T)/kappa)`` and ``ln Phi = beta G D`` the certificate
    depends on (kappa, p, T, d, delta) only: the largest kappa (geometric bisection) whose best p
    certifies at most ``epsilon``.

    Raises:
        ValueError: if even kappa = 1e-16 spends more than ``epsilon``.
    """
    lo, hi = 1e-16, 1e3
    best = _best_p(lo, horizon, dim, delta)  # (epsilon, p) at lo, kept as lo moves
    if best[0] > epsilon:
        raise ValueError(
            f"epsilon={epsilon:g} is below what P-COMW can certify at T={horizon}, d={dim}"
        )
    top = _best_p(hi, horizon, dim, delta)
    if top[0] <= epsilon:
        return hi, top[1]
    for _ in range(48):
        mid = math.sqrt(lo * hi)
        at = _best_p(mid, horizon, dim, delta)
        if at[0] <= epsilon:
            lo, best = mid, at
        else:
            hi = mid
    return lo, best[1]
