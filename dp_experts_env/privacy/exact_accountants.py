"""Exact per-step privacy accountants of the lazy (shrinking-dartboard) learners.

Neighbouring loss sequences differ at one round ``t1``; conditioned on everything released
before, only the coin that reads the changed loss (``e_sw``, once) and each fresh sample after
``t1`` (``e_rs``, at most ``budget``) cost privacy. Learners calibrate to a target epsilon by
:func:`calibrate` on these functions (docs/algorithms.md, "Notes on the lazy private learners").
Sources: the shrinking dartboard of Asi, Feldman, Koren & Talwar 2023, Section 3.1
(``dartboard_*``); private lazy Hedge, the discrete form of Agarwal, Kale, Singh & Thakurta's
P-COMW derived for this suite (``lazy_hedge_*``); continuous P-COMW, their Section 4 and
Appendix D (``pcomw_*``). Steps compose by ``min(basic, advanced)`` (Dwork & Roth Thm 3.20) or
the adaptive ``1.5 S2 + sqrt(6 S2 ln(1/delta))`` (Whitehouse et al. 2022). Natural logarithms
(erratum E-AFKT-12).

Parameters (floats or broadcastable arrays; scalar inputs return a float): ``eta`` step size in
(0, 1); ``p`` forced-switch probability in (0, 1]; ``batch`` block length B >= 1; ``budget``
the most data-dependent resamples or switches after the changed round (>= 0, rounded up);
``delta`` approximate-DP slack in [0, 1) (0: pure DP); ``beta`` inverse temperature (> 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "calibrate",
    "dartboard_budget",
    "dartboard_epsilon",
    "dartboard_paper_epsilon",
    "dartboard_regret_bound",
    "dartboard_resample_cost",
    "dartboard_switch_cost",
    "lazy_hedge_budget",
    "lazy_hedge_epsilon",
    "lazy_hedge_normalized_epsilon",
    "lazy_hedge_regret_bound",
    "PCOMWAccount",
    "pcomw_account",
    "pcomw_regret_bound",
    "pcomw_theorem41_kappa",
]

Number = float | np.ndarray


def _arr(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """``value`` as a float64 array after checking it is numeric, finite and in range."""
    if isinstance(value, bool) or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a real number or array, got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be a real number or array, got {type(value).__name__}"
        ) from err
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    lo_txt = ("(" if low_open else "[") + ("-inf" if low is None else f"{low:g}")
    hi_txt = ("inf" if high is None else f"{high:g}") + (")" if high_open else "]")
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= arr <= low if low_open else arr < low
    if high is not None:
        bad |= arr >= high if high_open else arr > high
    if np.any(bad):
        raise ValueError(f"{name} must lie in {lo_txt}, {hi_txt}; got {value!r}")
    return arr


def _out(value: np.ndarray) -> Number:
    """A float for 0-d results, the array otherwise."""
    return float(value) if np.ndim(value) == 0 else value


def _log_inv_delta(delta: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(delta > 0, -np.log(np.where(delta > 0, delta, 1.0)), np.inf)


def _advanced(k: np.ndarray, e: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``k`` steps of ``e`` each: min(basic, advanced); pure (basic) when delta == 0."""
    basic = k * e
    with np.errstate(invalid="ignore"):
        adv = np.sqrt(2.0 * k * _log_inv_delta(delta)) * e + k * e * np.expm1(e)
    return np.where(delta > 0, np.minimum(basic, adv), basic)


def _adaptive(sum_sq: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Fully adaptive composition from the sum of squared per-step costs (delta > 0)."""
    return 1.5 * sum_sq + np.sqrt(6.0 * sum_sq * _log_inv_delta(delta))


def _lam(eta: np.ndarray) -> np.ndarray:
    """``ln(1 / (1 - eta))``: the exponential-weights temperature of ``(1 - eta)^L``."""
    return -np.log1p(-eta)


def dartboard_switch_cost(eta: Number, p: Number, batch: Number = 1) -> Number:
    """Privacy cost of the one switch coin that reads the changed loss (derived for this suite).

    The coin stays with probability ``(1 - p)(1 - eta)^g``; one replaced loss moves ``g`` by at
    most ``1/batch``: ``max(lam/B, ln((1 - (1-p)(1-eta)^{1/B}) / p))``, ``lam = ln(1/(1-eta))``.
    """
    eta = _arr("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True)
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    batch = _arr("batch", batch, low=1.0)
    lam_b = _lam(eta) / batch
    with np.errstate(divide="ignore"):  # p == 1: log1p(-1) = -inf, a switch for sure
        switch = np.log(-np.expm1(np.log1p(-p) - lam_b) / p)
    return _out(np.maximum(lam_b, switch))


def dartboard_resample_cost(eta: Number, batch: Number = 1) -> Number:
    """Cost of one sample from ``P(i) ∝ (1 - eta)^{L(i)}``: ``2 ln(1/(1-eta)) / B`` (E-AFKT-7)."""
    eta = _arr("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True)
    batch = _arr("batch", batch, low=1.0)
    return _out(2.0 * _lam(eta) / batch)


def dartboard_epsilon(
    eta: Number, p: Number, budget: Number, delta: Number = 0.0, batch: Number = 1
) -> Number:
    """Epsilon of the (batched) private shrinking dartboard: ``e_sw`` plus ``budget`` resamples.

    Resamples compose basically (``delta = 0``) or by the better of basic and advanced composition.
    """
    budget = np.ceil(_arr("budget", budget, low=0.0))
    delta = _arr("delta", delta, low=0.0, high=1.0, high_open=True)
    e_sw = np.asarray(dartboard_switch_cost(eta, p, batch))
    e_rs = np.asarray(dartboard_resample_cost(eta, batch))
    return _out(e_sw + _advanced(budget, e_rs, delta))


def dartboard_paper_epsilon(
    eta: Number, p: Number, horizon: Number, delta: Number = 0.0, batch: Number = 1
) -> Number:
    """The papers' closed forms (``K = 4 T p / B`` resamples), for ``mode="paper"``.

    ``batch == 1``: Theorem 2. ``batch > 1``: Theorem 5 (approximate); pure: the derived analogue
    ``eta/(B p) + 16 T p eta / B^2`` (erratum E-AFKT-11).
    """
    eta = _arr("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True)
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    t = _arr("horizon", horizon, low=1.0)
    delta = _arr("delta", delta, low=0.0, high=1.0, high_open=True)
    b = _arr("batch", batch, low=1.0)
    ln = _log_inv_delta(delta)
    pure = eta / (b * p) + 16.0 * t * p * eta / b**2
    with np.errstate(invalid="ignore"):
        thm2 = 5 * eta / p + 100 * t * p * eta**2 + 20 * eta * np.sqrt(t * p * ln)
        thm5 = (
            5 * eta / (b * p)
            + 100 * t * p * eta**2 / b**3
            + (20 * eta / b) * np.sqrt(12 * (t * p / b) * ln)
        )
    approx = np.where(b == 1, thm2, thm5)
    return _out(np.where(delta > 0, approx, pure))


def dartboard_budget(p: Number, horizon: Number, batch: Number = 1) -> Number:
    """The paper's budget ``K = max(1, floor(4 T p / B))`` (erratum E-AFKT-3)."""
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    t = _arr("horizon", horizon, low=1.0)
    b = _arr("batch", batch, low=1.0)
    k = np.maximum(1.0, np.floor(4.0 * t * p / b))
    return int(k) if np.ndim(k) == 0 else k


def dartboard_regret_bound(
    eta: Number, p: Number, horizon: Number, n_experts: Number, batch: Number = 1
) -> Number:
    """Theorem 2 / 5 bound ``eta T + B ln(d)/eta + 2 T exp(-T p / (3 B))`` (oblivious losses)."""
    eta = _arr("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True)
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    t = _arr("horizon", horizon, low=1.0)
    d = _arr("n_experts", n_experts, low=1.0)
    b = _arr("batch", batch, low=1.0)
    return _out(eta * t + b * np.log(d) / eta + 2.0 * t * np.exp(-t * p / (3.0 * b)))


def lazy_hedge_budget(beta: Number, p: Number, horizon: Number) -> Number:
    """Switch budget ``B = 3 ptilde T``, ``ptilde = p + (1 - p)(1 - e^{-beta})``."""
    beta = _arr("beta", beta, low=0.0, low_open=True)
    p = _arr("p", p, low=0.0, high=1.0)
    t = _arr("horizon", horizon, low=1.0)
    return _out(3.0 * t * (p + (1.0 - p) * -np.expm1(-beta)))


def lazy_hedge_epsilon(beta: Number, p: Number, budget: Number, delta: Number = 0.0) -> Number:
    """Epsilon of private lazy Hedge, unnormalised-ratio form.

    ``beta/p`` for the coin, ``2 beta`` for each of at most ``ceil(budget)`` samples after it;
    basic composition, or with ``delta > 0`` the better of basic and adaptive composition at
    the full ``delta`` (every per-step delta is 0).
    """
    beta = _arr("beta", beta, low=0.0, low_open=True)
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    k = np.ceil(_arr("budget", budget, low=0.0))
    delta = _arr("delta", delta, low=0.0, high=1.0, high_open=True)
    basic = beta / p + 2.0 * beta * k
    s2 = (beta / p) ** 2 + 4.0 * beta**2 * k
    with np.errstate(invalid="ignore"):
        adaptive = _adaptive(s2, delta)
    return _out(np.where(delta > 0, np.minimum(basic, adaptive), basic))


def lazy_hedge_normalized_epsilon(
    beta: Number, p: Number, horizon: Number, delta: Number
) -> Number:
    """Accountant of the normalised-ratio ablation (literal P-COMW on N points); ``delta > 0``."""
    beta = _arr("beta", beta, low=0.0, low_open=True)
    p = _arr("p", p, low=0.0, high=1.0, low_open=True)
    t = _arr("horizon", horizon, low=1.0)
    delta = _arr("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    budget = np.ceil(3.0 * t * np.minimum(1.0, p - np.expm1(-2.0 * beta)))
    eta = 2.0 * beta**2 * np.exp(beta)
    s2 = 4 * beta**2 / p**2 + 8 * beta**2 * budget + 2 * t * eta**2 / p**2
    return _out(_adaptive(s2, delta))


def lazy_hedge_regret_bound(
    beta: Number, p: Number, horizon: Number, n_experts: Number, switch_rate: Number | None = None
) -> Number:
    """Oblivious regret bound ``ln(N)/beta + beta T/8 + 2 T exp(-ptilde T)`` (private lazy Hedge).

    ``switch_rate`` is ``ptilde`` (default: :func:`lazy_hedge_budget`'s).
    """
    beta = _arr("beta", beta, low=0.0, low_open=True)
    p = _arr("p", p, low=0.0, high=1.0)
    t = _arr("horizon", horizon, low=1.0)
    n = _arr("n_experts", n_experts, low=1.0)
    if switch_rate is None:
        rate = p + (1.0 - p) * -np.expm1(-beta)
    else:
        rate = _arr("switch_rate", switch_rate, low=0.0, high=1.0)
    return _out(np.log(n) / beta + beta * t / 8.0 + 2.0 * t * np.exp(-rate * t))


class PCOMWAccount(NamedTuple):
    """Privacy of continuous P-COMW at ``kappa = beta G^2 / lambda`` (Theorem "DP", Section 4).

    Attributes:
        epsilon: ``1.5 S2 + sqrt(6 S2 ln(2/delta))``.
        delta: certified slack (erratum E-AKST-3).
        log_phi: ``ln Phi = 36 kappa + 2 sqrt(72 kappa ln(120 T^2 / delta))``.
        p: forced-switch probability ``max(T^{-1/3}, (kappa / ln Phi)^{2/3})``.
        budget: ``3 ptilde T`` with ``ptilde = p + 1 - Phi^{-2}``.
        sum_sq: ``S2`` (erratum E-AKST-2).
    """

    epsilon: float
    delta: float
    log_phi: float
    p: float
    budget: float
    sum_sq: float


def pcomw_account(kappa: float, horizon: float, delta: float) -> PCOMWAccount:
    """The Theorem "DP" accountant of continuous P-COMW, pre-simplified S2 (E-AKST-2).

    Every quantity depends on ``kappa = beta G^2 / lambda`` (> 0), the horizon T >= 1 and the
    target ``delta`` in (0, 1/2] alone.
    """
    k = float(_arr("kappa", kappa, low=0.0, low_open=True))
    t = float(_arr("horizon", horizon, low=1.0))
    dl = float(_arr("delta", delta, low=0.0, high=0.5, low_open=True))
    log_phi = 36.0 * k + 2.0 * math.sqrt(72.0 * k * math.log(120.0 * t**2 / dl))
    p = max(t ** (-1.0 / 3.0), (k / log_phi) ** (2.0 / 3.0))
    p_tilde = min(1.0, p - math.expm1(-2.0 * log_phi))
    budget = 3.0 * p_tilde * t
    s2 = 4 * log_phi**2 / p**2 + 2 * math.ceil(budget) * log_phi**2 + 8 * k**2 * t / p**2
    eps = 1.5 * s2 + math.sqrt(6.0 * s2 * math.log(2.0 / dl))
    d_prime = dl / (60.0 * t**2)
    delta_out = dl / 2 + t * (4 * d_prime + 9 * t * d_prime + 3 * math.exp(-p_tilde * t))
    return PCOMWAccount(eps, delta_out, log_phi, p, budget, s2)


def pcomw_theorem41_kappa(horizon: float, epsilon: float, delta: float) -> float:
    """``kappa`` of Theorem 4.1's literal constants (any G, D, d).

    ``min(eps^2 / T^{2/3}, eps^{3/2} / T^{3/4}) / (1e5 ln^2(T/delta))``.
    """
    t = float(_arr("horizon", horizon, low=1.0))
    e = float(_arr("epsilon", epsilon, low=0.0, low_open=True))
    dl = float(_arr("delta", delta, low=0.0, high=0.5, low_open=True))
    lg = math.log(t / dl)
    return min(e**2 / t ** (2 / 3), e**1.5 / t**0.75) / (1e5 * lg**2)


def pcomw_regret_bound(
    kappa: float, horizon: float, dim: int, lipschitz: float, diameter: float
) -> float:
    """Regret bound ``G D sqrt(2T + 2 d ln(T) / kappa)`` at the best lambda (Section 4)."""
    k = float(_arr("kappa", kappa, low=0.0, low_open=True))
    t = float(_arr("horizon", horizon, low=1.0))
    d = float(_arr("dim", dim, low=1.0))
    g = float(_arr("lipschitz", lipschitz, low=0.0, low_open=True))
    dd = float(_arr("diameter", diameter, low=0.0, low_open=True))
    return g * dd * math.sqrt(2.0 * t + 2.0 * d * math.log(t) / k)


def calibrate(
    spend: Callable[[np.ndarray], np.ndarray],
    target: Number,
    lower: Number,
    upper: Number,
    *,
    iterations: int = 200,
) -> Number:
    """The largest parameter in ``[lower, upper]`` whose privacy spend is at most ``target``.

    Bisection (geometric when ``lower > 0``) on a non-decreasing ``spend``, vectorised over the
    broadcast arguments; the result always satisfies ``spend(x) <= target``.

    Args:
        spend: non-decreasing map from the parameter to the epsilon spent.
        target: epsilon budget (> 0).
        lower: smallest parameter (>= 0); ``spend(lower)`` must not exceed ``target``.
        upper: largest parameter (>= lower).
        iterations: bisection steps (>= 1).

    Raises:
        ValueError: if the target cannot be met even at ``lower``, or on bad arguments.
    """
    if not callable(spend):
        raise TypeError(f"spend must be callable, got {type(spend).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")
    tgt = _arr("target", target, low=0.0, low_open=True)
    lo = _arr("lower", lower, low=0.0)
    hi = _arr("upper", upper, low=0.0)
    tgt, lo, hi = np.broadcast_arrays(tgt, lo, hi)
    lo, hi = lo.astype(np.float64), hi.astype(np.float64)
    if np.any(hi < lo):
        raise ValueError(f"upper must be >= lower, got lower={lower!r}, upper={upper!r}")
    at_lo = np.asarray(spend(lo), dtype=np.float64)
    if np.any(~(at_lo <= tgt)):
        raise ValueError(
            f"target epsilon {target!r} cannot be met: the smallest parameter {lower!r} already "
            f"spends {_out(at_lo)!r}"
        )
    at_hi = np.asarray(spend(hi), dtype=np.float64)
    done = at_hi <= tgt
    geometric = lo > 0
    a, b = lo.copy(), hi.copy()
    for _ in range(iterations):
        mid = np.where(geometric, np.sqrt(a * b), 0.5 * (a + b))
        ok = np.asarray(spend(mid), dtype=np.float64) <= tgt
        a = np.where(ok, mid, a)
        b = np.where(ok, b, mid)
    return _out(np.where(done, hi, a))
