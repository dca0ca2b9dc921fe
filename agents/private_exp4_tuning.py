"""Parameters of the private EXP4 learners: LDP-EXP4 (Alg. 6) and private batched EXP4 (Alg. 2).

Pure functions of public quantities ("Faster Rates for Private Adversarial Bandits", Thms 9
and 10): the proof-level bounds at any (eta, gamma, tau), the paper's tuning and the calibrated
grids (docs/algorithms.md, "Calibration"); :mod:`agents.private_exp4` reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.private_bandit_bounds import (
    glog,
    log_experts,
    second_moment_bound,
    second_moment_exp3,
    tau_grid,
)
from dp_experts_env.privacy.accounting import advanced_composition

__all__ = [
    "COMPOSITIONS",
    "RELEASES",
    "Exp4Tuning",
    "drv_epsilon",
    "max_composable_epsilon",
    "paper_composition_epsilon",
    "ldp_exp4_bound",
    "tune_ldp_exp4",
    "batched_exp4_noise_constant",
    "batched_exp4_bound",
    "tune_batched_exp4",
    "calibrated_batched_exp4_grid",
    "calibrated_loss_release_grid",
]

COMPOSITIONS = ("advanced", "pure")
#: what private batched EXP4 releases: each observed loss (``"loss"``) or, as Alg. 2 prints it,
#: the per-expert batch means (``"estimates"``); docs/algorithms.md, "Calibration"
RELEASES = ("loss", "estimates")


def drv_epsilon(eps0: float, k: int, delta: float) -> float:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20).

    k adaptively composed ``eps0``-DP mechanisms are ``(eps', delta)``-DP with
    ``eps' = sqrt(2 k log(1/delta)) eps0 + k eps0 (e^eps0 - 1)``; computed by the privacy core's
    :func:`~dp_experts_env.privacy.accounting.advanced_composition`.
    """
    return advanced_composition(eps0, k, delta).epsilon


def paper_composition_epsilon(eps0: float, k: int, delta: float) -> float:
    """Advanced composition as printed in the paper (Lemma 15).

    ``eps' = 1.5 k eps0^2 + sqrt(6 k eps0^2 log(1/delta))``.
    """
    return 1.5 * k * eps0**2 + math.sqrt(6.0 * k * eps0**2 * math.log(1.0 / delta))


def max_composable_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Largest per-mechanism eps0 whose k-fold advanced composition (DRV) is <= epsilon."""
    lo, hi = 0.0, epsilon  # drv_epsilon(epsilon, k, delta) >= epsilon for k >= 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if drv_epsilon(mid, k, delta) <= epsilon else (lo, mid)
    return lo



@dataclass(frozen=True)
class Exp4Tuning:
    """Parameters of LDP-EXP4 (Alg. 6) or private batched EXP4 (Alg. 2).

    Attributes:
        eta: learning rate of the multiplicative weights over experts.
        gamma: uniform exploration mixed into the action distribution (``Q_t >= gamma / K``).
        tau: batch length (1 for Alg. 6).
        bound: the proof-level regret bound at these values.
        caps: the public caps the tuning sits on, in words (empty when interior).
    """

    eta: float
    gamma: float
    tau: int = 1
    bound: float = math.inf
    caps: tuple[str, ...] = ()




# ---------------------------------------------------------------------------- Alg. 6
def ldp_exp4_bound(n: int, k: int, horizon: int, epsilon: float, eta: float, gamma: float) -> float:
    """Proof-level bound of Thm 9 at any (eta, gamma) (``inf`` where the proof does not apply).

    ``log N / eta + gamma T + 2 eta K T (1 + 10 lam^2 log^2(K T)) + 1`` with ``lam = 1/epsilon``,
    valid when ``gamma >= 4 eta K lam log(K T)`` (so that ``eta |l'| <= 1`` on the good event)
    and ``gamma <= 1``.
    """
    lam = 1.0 / epsilon
    lg = glog(k * horizon)
    if gamma > 1.0 or gamma < 4.0 * eta * k * lam * lg * (1 - 1e-12) or eta <= 0:
        return math.inf
    return (
        log_experts(n) / eta
        + gamma * horizon
        + 2.0 * eta * k * horizon * (1.0 + 10.0 * lam * lam * lg * lg)
        + 1.0
    )


def tune_ldp_exp4(
    n: int, k: int, horizon: int, epsilon: float, tuning: str, noise_scale: float | None = None
) -> Exp4Tuning:
    """Learning rate and exploration of LDP-EXP4 (Alg. 6).

    ``"paper"``: Thm 9, ``eta = sqrt(log N / (3 T K (1 + 10 log^2(KT) / epsilon^2)))`` and
    ``gamma = 4 eta K log(KT) / epsilon``; refuses ``gamma > 1``; ``bound`` is Thm 9's.
    ``"calibrated"``: :func:`second_moment_exp3` at the Laplace scale actually used
    (``noise_scale``, default ``1/epsilon``), gamma capped at 1/2; ``bound`` is
    :func:`second_moment_bound`.
    """
    lam = 1.0 / epsilon
    lg = glog(k * horizon)
    logn = log_experts(n)
    if tuning == "paper":
        eta = math.sqrt(logn / (3.0 * horizon * k * (1.0 + 10.0 * lg * lg / epsilon**2)))
        gamma = 4.0 * eta * k * lg / epsilon
        if gamma > 1.0:
            raise ValueError(
                f"tuning='paper' gives gamma = 4 eta K log(KT)/epsilon = {gamma:.3g} > 1 "
                f"(Thm 9) for N={n}, K={k}, T={horizon}, epsilon={epsilon}: Q_t would not be a "
                "distribution. The recipe needs T >= 16 K log N log^2(KT) / (3 (epsilon^2 + "
                "10 log^2(KT))); use tuning='calibrated' or pass eta and gamma"
            )
        return Exp4Tuning(eta, gamma, 1, ldp_exp4_bound(n, k, horizon, epsilon, eta, gamma))
    lam = lam if noise_scale is None else noise_scale
    eta, gamma = second_moment_exp3(n, k, horizon, lam)
    return Exp4Tuning(eta, gamma, 1, second_moment_bound(n, k, horizon, lam, eta, gamma))


# ---------------------------------------------------------------------------- Alg. 2
def batched_exp4_noise_constant(n: int, k: int, delta: float, composition: str) -> float:
    """``s`` in the Laplace scale ``s / (gamma tau epsilon)`` of Alg. 2.

    ``"advanced"`` (paper): ``3 K sqrt(N log(1/delta))`` per coordinate, advanced composition
    over the N coordinates. ``"pure"`` (an addition, erratum E-PAB-7): ``N K``, the L1
    sensitivity of the
    N-vector, giving pure epsilon-DP.
    """
    if composition == "advanced":
        return 3.0 * k * math.sqrt(n * math.log(1.0 / delta))
    if composition == "pure":
        return float(n * k)
    raise ValueError(f"composition must be one of {COMPOSITIONS}, got {composition!r}")


def batched_exp4_bound(
    n: int,
    k: int,
    horizon: int,
    epsilon: float,
    noise_constant: float,
    tau: int,
    eta: float,
    gamma: float,
) -> float:
    """Proof-level bound of Thm 10 at any (tau, eta, gamma) (``inf`` where it does not apply).

    ``tau log N / eta + gamma T + eta T K + 10 eta T lam^2 log^2(NT) + 2 tau`` with
    ``lam = s / (gamma tau epsilon)``; valid for ``eta < 1``, ``gamma <= 1`` and
    ``gamma >= 4 eta s log(NT) / (tau epsilon)`` (with the paper's s this is its
    ``12 eta K sqrt(N L) log(NT) / (epsilon tau)``).
    """
    lg = glog(n * horizon)
    if not (0 < eta < 1) or gamma > 1.0:
        return math.inf
    if gamma < 4.0 * eta * noise_constant * lg / (tau * epsilon) * (1 - 1e-12):
        return math.inf
    lam = noise_constant / (gamma * tau * epsilon)
    return (
        tau * log_experts(n) / eta
        + gamma * horizon
        + eta * horizon * k
        + 10.0 * eta * horizon * lam * lam * lg * lg
        + 2.0 * tau
    )


def tune_batched_exp4(
    n: int,
    k: int,
    horizon: int,
    epsilon: float,
    delta: float,
    tuning: str,
    composition: str = "advanced",
    *,
    max_gamma: float = 1.0,
    tau: int | None = None,
    eta: float | None = None,
    coordinate_scale: float | None = None,
    release: str = "estimates",
    loss_scale: float | None = None,
) -> Exp4Tuning:
    """Batch length, learning rate and exploration of private batched EXP4 (Alg. 2).

    With ``release="loss"`` (each observed loss + ``Lap(loss_scale)``, default ``1/epsilon``)
    the calibrated grid is :func:`calibrated_loss_release_grid`; Thm 10's recipe is for the
    per-expert release only, so ``tuning="paper"`` refuses it.

    ``"paper"``: Thm 10's formulas with ``L = log(1/delta)``; tau is rounded to an integer in
    ``[1, T]`` and gamma is computed from the rounded tau. Refuses ``gamma > 1`` (Q_t
    would not be a distribution) and ``eta >= 1``. ``"calibrated"``: the minimiser of
    :func:`calibrated_batched_exp4_grid` over ``tau <= T // 10`` and ``gamma`` in
    ``[1e-4, max_gamma]`` at the per-coordinate Laplace scale the learner will actually add,
    ``coordinate_scale / (gamma tau)`` (default: the paper's ``s / epsilon``; the strict learner
    passes ``K / eps0`` for the per-expert epsilon it really uses). A ``tau`` or ``eta`` given by
    the user is kept and the others are chosen around it.
    """
    s = math.nan if release == "loss" else batched_exp4_noise_constant(n, k, delta, composition)
    lg = glog(n * horizon)
    logn = log_experts(n)
    if tuning == "paper" and release == "loss":
        raise ValueError(
            "tuning='paper' is Thm 10's recipe for release='estimates' (the per-expert batch "
            "means); release='loss' has tuning='calibrated' only"
        )
    if tuning == "paper":
        if composition != "advanced":
            raise ValueError(
                "tuning='paper' is Thm 10's recipe for composition='advanced'; use "
                "tuning='calibrated' with composition='pure'"
            )
        big_l = math.log(1.0 / delta)
        if eta is None:
            eta = (n * big_l) ** (1 / 6) * lg ** (1 / 3) * logn ** (1 / 3)
            eta /= horizon ** (1 / 3) * math.sqrt(k) * epsilon ** (1 / 3)
        if tau is None:
            tau_real = (n * big_l) ** (1 / 3) * lg ** (2 / 3) * horizon ** (1 / 3)
            tau_real /= epsilon ** (2 / 3) * logn ** (1 / 3)
            tau = max(1, min(horizon, round(tau_real)))
        gamma = max(
            eta ** (1 / 3)
            * n ** (1 / 3)
            * k ** (2 / 3)
            * lg ** (2 / 3)
            / (epsilon ** (2 / 3) * tau ** (2 / 3)),
            12.0 * eta * k * math.sqrt(n * big_l) * lg / (epsilon * tau),
        )
        if gamma > 1.0 or eta >= 1.0:
            raise ValueError(
                f"tuning='paper' gives Thm 10's gamma = {gamma:.3g} and eta = {eta:.3g} for "
                f"N={n}, K={k}, T={horizon}, epsilon={epsilon}, delta={delta}; the theorem "
                "needs gamma <= 1 and eta < 1 (at practical horizons its recipe gives gamma > 1). "
                "Use tuning='calibrated' or pass tau, eta and gamma"
            )
        return Exp4Tuning(
            eta, gamma, tau, batched_exp4_bound(n, k, horizon, epsilon, s, tau, eta, gamma)
        )
    c = s / epsilon if coordinate_scale is None else coordinate_scale
    taus = (tau_grid(horizon) if tau is None else np.array([tau])).astype(np.float64)
    gammas = np.geomspace(1e-4, max_gamma, 64)
    if release == "loss":
        lam = 1.0 / epsilon if loss_scale is None else loss_scale
        bound, etas = calibrated_loss_release_grid(n, k, horizon, lam, taus, gammas, eta)
    else:
        bound, etas = calibrated_batched_exp4_grid(n, k, horizon, c, taus, gammas, eta)
    if not np.isfinite(bound).any():
        raise ValueError(
            f"tuning='calibrated' found no (tau, eta, gamma <= {max_gamma}) for N={n}, K={k}, "
            f"T={horizon}, epsilon={epsilon}; pass tau, eta and gamma"
        )
    i, j = np.unravel_index(int(np.argmin(bound)), bound.shape)
    caps = []
    if j == len(gammas) - 1:
        caps.append(f"gamma at its cap max_gamma = {max_gamma:g}")
    if tau is None and i == len(taus) - 1 and taus[i] > 1:
        caps.append(f"tau at its cap T // 10 = {int(taus[i])}")
    return Exp4Tuning(
        float(etas[i, j]), float(gammas[j]), int(taus[i]), float(bound[i, j]), tuple(caps)
    )


def calibrated_batched_exp4_grid(
    n: int,
    k: int,
    horizon: int,
    coordinate_scale: float,
    taus: np.ndarray,
    gammas: np.ndarray,
    eta: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated bound of private batched EXP4 on a (tau, gamma) grid, with its best eta.

    The released per-expert batch mean is ``Acc_j / tau + Z_j`` with
    ``Z_j ~ Lap(lam)``, ``lam = coordinate_scale / (gamma tau)``. Exponential weights over the
    ``T / tau`` batches, scaled back to rounds, pay ``tau log N / eta`` plus ``eta T`` times
    ``(1 + K / ((1 - gamma) tau)) / 2 + 2 lam^2``: half the second moment of the bounded batch
    mean (its square mean at most 1, its variance at most ``K / ((1 - gamma) tau)`` in the
    weights' average since ``Q_t >= (1 - gamma) P A_t``, and at most ``K / (gamma tau)``) and
    the whole second moment of the noise; then ``gamma T`` for exploration and ``2 tau`` for the
    partial batches. The noise stays above ``-1/eta`` while ``eta lam log(N T / tau) <= 1``;
    eta is the bound's minimiser capped there (or the given ``eta``, infeasible grid points
    getting ``inf``).

    Returns:
        ``(bound, eta)`` arrays of shape ``(len(taus), len(gammas))``.
    """
    tau = np.asarray(taus, dtype=np.float64)[:, None]
    gamma = np.asarray(gammas, dtype=np.float64)[None, :]
    lam = coordinate_scale / (gamma * tau)
    # sum_i (P A)(i) / Q(i) <= K min(1/(1 - gamma), 1/gamma) as Q >= (1 - gamma) P A, gamma/K.
    spread = k * np.minimum(1.0 / np.maximum(1.0 - gamma, 1e-300), 1.0 / gamma)
    v = 0.5 * (1.0 + spread / tau) + 2.0 * lam * lam
    lg = np.maximum(np.log(n * np.maximum(horizon // tau, 1.0)), 1.0)
    cap = 1.0 / np.maximum(lam * lg, 1e-300)
    if eta is None:
        eta_arr = np.minimum(np.sqrt(tau * log_experts(n) / (horizon * v)), cap)
        eta_arr = np.minimum(eta_arr, 0.99)
    else:
        eta_arr = np.broadcast_to(np.float64(eta), v.shape).copy()
    bound = tau * log_experts(n) / eta_arr + eta_arr * horizon * v + gamma * horizon + 2 * tau
    feasible = (eta_arr <= cap * (1 + 1e-12)) & (gamma <= 1.0)
    return np.where(feasible, bound, np.inf), eta_arr


def calibrated_loss_release_grid(
    n: int,
    k: int,
    horizon: int,
    lam: float,
    taus: np.ndarray,
    gammas: np.ndarray,
    eta: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated bound of batched EXP4 fed ``y_t = l_t(I_t) + Lap(lam)`` (``release="loss"``).

    Batch b's estimate of expert j is the sum ``X_j = S_j + W_j``, ``S_j = sum_t c_tj l_t(I_t)``,
    ``W_j = sum_t c_tj Z_t``, ``c_tj = mu_t^j(I_t) / Q_t(I_t)`` in ``[0, K / gamma]``; the
    learner's weights move by ``exp(-rho X_j)``, ``rho = eta / tau`` (``eta`` is the rate on
    the batch mean). The bound holds in expectation (oblivious losses):

    * Given the coins, ``W`` is independent of the frozen weights P and of S, so by Jensen
      ``E_W log sum_j P_j e^{-rho X_j} <= log sum_j P_j e^{-rho S_j} E e^{-rho W_j}`` and
      ``E e^{-rho W_j} = prod_t 1 / (1 - (rho c_tj lam)^2) <= exp(a_j)``,
      ``a_j = (4/3) rho^2 lam^2 sum_t c_tj^2``, when ``rho lam K / gamma <= 1/2``.
    * With ``rho lam (K / gamma) sqrt(tau) <= 1/2`` (the cap on eta), ``a_j <= 1/3`` and
      ``e^{-rho S} e^{a} <= 1 - rho S + rho^2 S^2 / 2 + 1.4 a``, so a batch costs at most
      ``rho sum_j P_j S_j^2 / 2 + 1.87 rho lam^2 sum_j P_j sum_t c_tj^2`` beyond its loss.
    * Over the coins, ``sum_j P_j E c_tj^2 <= sum_i (P A_t)(i) / Q_t(i) <= K / (1 - gamma)``
      and ``E S_j^2 <= tau (tau - 1) + tau K / (1 - gamma)`` in the weights' average (the
      cross terms of two rounds are products of expert losses, at most 1); ``E X_j`` is
      expert j's batch loss, so the comparator's estimate is unbiased.

    Summed over the ``T / tau`` batches and written with ``eta``: ``tau log N / eta +
    eta T ((1 - 1/tau + K/((1 - gamma) tau))/2 + 2 lam^2 K/((1 - gamma) tau)) + gamma T +
    2 tau`` (exploration, partial batches); at ``lam = 0``, ``tau = 1`` and ``gamma -> 0`` the
    minimiser is EXP4's ``sqrt(2 log N / (T K))``. Unlike the per-expert release, the noise is
    averaged over the batch and weighted by the weights' spread ``K/(1 - gamma)`` rather than
    added once per expert at sensitivity ``K/(gamma tau)``. eta is the bound's minimiser capped at
    ``gamma sqrt(tau) / (2 K lam)`` (or the given ``eta``, infeasible points getting ``inf``).
    A public function of (N, K, T, lam); privacy does not depend on it.

    Returns:
        ``(bound, eta)`` arrays of shape ``(len(taus), len(gammas))``.
    """
    tau = np.asarray(taus, dtype=np.float64)[:, None]
    gamma = np.asarray(gammas, dtype=np.float64)[None, :]
    spread = k / np.maximum(1.0 - gamma, 1e-300)
    v = 0.5 * (1.0 - 1.0 / tau + spread / tau) + 2.0 * lam * lam * spread / tau
    # rho = eta / tau is the rate on batch sums; the in-expectation step needs
    # rho lam (K / gamma) sqrt(tau) <= 1/2 (docstring).
    cap = np.sqrt(tau) * gamma / np.maximum(2.0 * k * lam, 1e-300)
    if eta is None:
        eta_arr = np.minimum(np.sqrt(tau * log_experts(n) / (horizon * v)), cap)
    else:
        eta_arr = np.broadcast_to(np.float64(eta), v.shape).copy()
    bound = tau * log_experts(n) / eta_arr + eta_arr * horizon * v + gamma * horizon + 2 * tau
    feasible = (eta_arr <= cap * (1 + 1e-12)) & (gamma <= 1.0)
    return np.where(feasible, bound, np.inf), eta_arr

