"""Parameters of the private EXP4 learners: LDP-EXP4 (Alg. 6) and private batched EXP4 (Alg. 2).

Pure functions of public quantities ("Faster Rates for Private Adversarial Bandits", Thms 9 and 10):
the proof-level bounds, the paper's tuning and the calibrated grids; derivations in
docs/algorithms.md ("Calibration").
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
#: what private batched EXP4 releases: each observed loss or (Alg. 2) the per-expert batch means
RELEASES = ("loss", "estimates")


def drv_epsilon(eps0: float, k: int, delta: float) -> float:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010).

    ``eps' = sqrt(2 k log(1/delta)) eps0 + k eps0 (e^eps0 - 1)`` for k composed ``eps0``-DP
    mechanisms.
    """
    return advanced_composition(eps0, k, delta).epsilon


def paper_composition_epsilon(eps0: float, k: int, delta: float) -> float:
    """Advanced composition as printed (Lemma 15).

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
        eta: learning rate of the weights over experts.
        gamma: uniform exploration (``Q_t >= gamma / K``).
        tau: batch length (1 for Alg. 6).
        bound: the proof-level regret bound at these values.
        caps: the public caps the tuning sits on, in words (empty when interior).
    """

    eta: float
    gamma: float
    tau: int = 1
    bound: float = math.inf
    caps: tuple[str, ...] = ()




def ldp_exp4_bound(n: int, k: int, horizon: int, epsilon: float, eta: float, gamma: float) -> float:
    """Thm 9's bound at any (eta, gamma).

    ``log N / eta + gamma T + 2 eta K T (1 + 10 lam^2 log^2(K T)) + 1``, ``lam = 1/epsilon``;
    ``inf`` outside ``4 eta K lam log(KT) <= gamma <= 1``.
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

    ``"paper"``: Thm 9's eta and gamma (ValueError when ``gamma > 1``). ``"calibrated"``:
    :func:`second_moment_exp3` at the Laplace scale used (``noise_scale``, default ``1/epsilon``),
    gamma capped at 1/2.
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


def batched_exp4_noise_constant(n: int, k: int, delta: float, composition: str) -> float:
    """``s`` in Alg. 2's Laplace scale ``s / (gamma tau epsilon)``.

    ``"advanced"``: ``3 K sqrt(N log(1/delta))`` per coordinate; ``"pure"`` (E-PAB-7): ``N K``.
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
    """Thm 10's bound at any (tau, eta, gamma).

    ``tau log N / eta + gamma T + eta T K + 10 eta T lam^2 log^2(NT) + 2 tau``,
    ``lam = s / (gamma tau epsilon)``; ``inf`` unless ``eta < 1``, ``gamma <= 1`` and
    ``gamma >= 4 eta s log(NT) / (tau epsilon)``.
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

    ``"paper"``: Thm 10 with ``L = log(1/delta)``, tau rounded into ``[1, T]``; ValueError when
    ``gamma > 1`` or ``eta >= 1``, or with ``release="loss"``. ``"calibrated"``: the minimiser of
    :func:`calibrated_batched_exp4_grid` (``release="loss"``: :func:`calibrated_loss_release_grid`)
    over ``tau <= T // 10`` and gamma in ``[1e-4, max_gamma]`` at the Laplace scale the learner will
    add, ``coordinate_scale / (gamma tau)``. A given ``tau`` or ``eta`` is kept.
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

    The second-moment bound of docs/algorithms.md ("Calibration"), eta capped by
    ``eta lam log(N T / tau) <= 1`` (or the given ``eta``; infeasible points get ``inf``).

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

    An in-expectation bound over oblivious losses (derivation: docs/algorithms.md,
    "private-batched-exp4, ``release="loss"``"), eta capped at ``gamma sqrt(tau) / (2 K lam)`` (or
    the given ``eta``; infeasible points get ``inf``).

    Returns:
        ``(bound, eta)`` arrays of shape ``(len(taus), len(gammas))``.
    """
    tau = np.asarray(taus, dtype=np.float64)[:, None]
    gamma = np.asarray(gammas, dtype=np.float64)[None, :]
    spread = k / np.maximum(1.0 - gamma, 1e-300)
    v = 0.5 * (1.0 - 1.0 / tau + spread / tau) + 2.0 * lam * lam * spread / tau
    # The bound needs rho lam (K / gamma) sqrt(tau) <= 1/2, rho = eta / tau.
    cap = np.sqrt(tau) * gamma / np.maximum(2.0 * k * lam, 1e-300)
    if eta is None:
        eta_arr = np.minimum(np.sqrt(tau * log_experts(n) / (horizon * v)), cap)
    else:
        eta_arr = np.broadcast_to(np.float64(eta), v.shape).copy()
    bound = tau * log_experts(n) / eta_arr + eta_arr * horizon * v + gamma * horizon + 2 * tau
    feasible = (eta_arr <= cap * (1 + 1e-12)) & (gamma <= 1.0)
    return np.where(feasible, bound, np.inf), eta_arr

