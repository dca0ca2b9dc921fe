"""Parameters of the private bandit learners ("Faster Rates for Private Adversarial Bandits").

Everything here is a pure function of public quantities -- the number of arms or experts, the
horizon T, epsilon, delta and the Laplace scale those imply -- never of losses. Two tunings:

* ``"paper"`` -- the theorem's parameters. For the batched conversion (Alg. 1, Thm 7) the base
  learner's constants are the lemma-level formulas evaluated at its real horizon
  ``T_B = floor(T / tau)`` and noise level ``lam = 1 / (epsilon tau)`` (the lemma-level
  formulas); the paper's closed forms substitute ``epsilon T`` and 1 for them. When the
  theorem's parameters are not valid (``tau > T``, ``gamma > 1``, ``eta >= 1``) a ``ValueError``
  says why.
* ``"calibrated"`` -- minimise a regret bound over a grid (``tau <= max(1, T // 10)``,
  ``gamma <= 1``) that never looks at data. Where the paper's proof charges the squared noisy
  loss by its high-probability maximum (the ``10 lam^2 log^2`` factors), the calibrated bound
  charges its second moment, ``E (l + Z)^2 <= 1 + 2 lam^2`` for ``Z ~ Lap(lam)``, and keeps the
  maximum only where it is needed: the exploration that keeps the importance-weighted
  estimates above ``-1/eta`` (docs/algorithms.md, "Calibration").

Logarithms that can be tiny or non-positive (``log(K T_B)``, ``log(N T)``, ``log T_B``) are
guarded with ``max(log x, 1)`` (guarded); ``log N`` uses ``max(N, 2)`` so that a single expert does
not produce a zero learning rate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BASES",
    "COMPOSITIONS",
    "BatchedBanditTuning",
    "Exp4Tuning",
    "glog",
    "paper_tau",
    "base_parameters",
    "base_noisy_regret",
    "tune_batched_bandit",
    "tune_ldp_exp4",
    "ldp_exp4_bound",
    "batched_exp4_noise_constant",
    "batched_exp4_bound",
    "tune_batched_exp4",
    "second_moment_bound",
    "second_moment_exp3",
    "calibrated_batched_exp4_grid",
    "calibrated_loss_release_grid",
    "RELEASES",
    "ftpl_gr_bound",
    "laplace_max_mean",
    "ftpl_gr_tight_bound",
    "ftpl_gr_tight_calibrated",
    "ftpl_gr_tight_tuning",
    "ftpl_gr_calibrated",
    "laplace_fed_moment",
    "ftpl_gr_adaptive_bound",
    "ftpl_gr_adaptive_calibrated",
    "FTPL_RATES",
    "DEFAULT_FTPL_RATE",
]

BASES = ("tsallis-inf", "exp3", "ftpl-gr")
#: FTPL-GR's learning-rate rules: Alg. 4's fixed eta, or the self-confident rate of the released
#: values (docs/algorithms.md, "Calibration"); calibrated tuning only
FTPL_RATES = ("fixed", "adaptive")
#: the rate rule of ``base="ftpl-gr"`` under ``tuning="calibrated"`` when none is given
DEFAULT_FTPL_RATE = "fixed"
COMPOSITIONS = ("advanced", "pure")
#: what private batched EXP4 releases: each observed loss (``"loss"``) or, as Alg. 2 prints it,
#: the per-expert batch means (``"estimates"``); docs/algorithms.md, "Calibration"
RELEASES = ("loss", "estimates")


def glog(x: float) -> float:
    """Guarded natural log ``max(log x, 1)`` for the log terms of the bounds (guarded)."""
    return max(math.log(x), 1.0) if x > 0 else 1.0


def _log_experts(n: int) -> float:
    """``log N`` with N = 1 treated as 2 (a single expert has nothing to learn)."""
    return math.log(max(n, 2))


def second_moment_bound(
    n: int, k: int, horizon: int, lam: float, eta: float, gamma: float
) -> float:
    """Calibrated regret bound of EXP4 fed ``l + Lap(lam)`` (EXP3: ``n = k``, identity experts).

    ``log N / eta + eta T K (1/2 + 2 lam^2) + gamma T + 1``: exponential weights pay
    ``eta/2`` times the second moment of the bounded part of the importance-weighted estimate
    (at most K per round) and, for the noise part, which can be negative, ``eta`` times its
    second moment ``2 lam^2 K``; the exploration ``gamma`` keeps every estimate above
    ``-1/eta`` while ``|Z| <= lam log(KT)``, which needs ``gamma >= eta K lam log(KT)``
    (``inf`` where that or ``gamma <= 1`` fails).
    """
    if eta <= 0 or gamma > 1.0 or gamma < eta * k * lam * glog(k * horizon) * (1 - 1e-12):
        return math.inf
    return (
        _log_experts(n) / eta + eta * horizon * k * (0.5 + 2.0 * lam * lam) + gamma * horizon + 1.0
    )


def second_moment_exp3(
    n: int, k: int, horizon: int, lam: float, max_gamma: float = 0.5
) -> tuple[float, float]:
    """``(eta, gamma)`` minimising :func:`second_moment_bound` (gamma at its lower limit).

    With ``gamma = eta K lam log(KT)`` the bound is ``log N / eta + eta T (K (1/2 + 2 lam^2) +
    K lam log(KT))``, minimised at ``eta = sqrt(log N / (T (...)))``; gamma is capped at
    ``max_gamma`` (then eta shrinks with it). At ``lam = 0`` this is EXP4's
    ``sqrt(2 log N / (T K))`` with no exploration.
    """
    lg = glog(k * horizon)
    slope = k * (0.5 + 2.0 * lam * lam) + k * lam * lg
    eta = math.sqrt(_log_experts(n) / (horizon * slope))
    gamma = eta * k * lam * lg
    if gamma > max_gamma:
        gamma = max_gamma
        eta = max_gamma / (k * lam * lg)
    return eta, gamma


def ftpl_gr_bound(m: int, horizon: int, lam: float, eta: float, cap: int) -> float:
    """Calibrated regret bound of FTPL-GR fed ``l + Lap(lam)`` (``inf`` where it does not apply).

    ``(1 + log m)/eta + eta T m (1 + 2 lam^2 (1 + (1 - s)^-3)) + m T/(e M)`` with
    ``s = eta M lam < 1``: perturbation term, stability term charged by second moments (as for
    EXP3), and the bias of resampling capped at M. Proof (docs/algorithms.md, "Calibration",
    #29's third revision): FTPL's potential ``Phi(L) = E min_i (L_i + Z_i)`` gives regret <=
    ``E max_i Z_i`` (<= ``(1 + log m)/eta``) + the Bregman gaps of the updates + the bias. An
    update moves one coordinate by ``c = K y`` (``y = l + N`` the fed value, ``N ~ Lap(lam)``,
    K the resample count); the Laplace perturbation is ``eta``-log-Lipschitz, so the gap is at
    most ``(p/eta) psi(eta c)``, ``psi(x) = e^-x - 1 + x``: ``<= eta p c^2/2`` for ``c >= 0``
    and ``<= (eta p c^2/2) e^(eta M |N|)`` for ``c < 0`` (only when ``N < -l``), whose noise
    moment ``E[N^2 e^(eta M |N|); N < 0] = lam^2/(1 - s)^3`` is finite when ``s < 1``. With
    ``p^2 E K^2 <= 2`` a round costs at most ``eta m (1 + lam^2 (1 + (1 - s)^-3))``; this bound
    charges twice that noise part (the second revision's constants, kept as the default:
    :func:`ftpl_gr_tight_bound` is lower but its minimiser is no faster per round). (Before
    #29's second revision the tuning asked ``eta M lam log(m T) <= 1``, a pathwise ``eta |yhat|
    <= 1`` on all but a ``1/(mT)`` fraction of the rounds; the in-expectation step drops the
    log factor.)
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

    M runs over a 64-point log grid up to ``ceil(sqrt(m T))`` (Lemma 25's M; larger M only
    shrinks a bias term already below the others and costs O(M m) per update); for each M,
    eta over a 256-point log grid from ``free / 50`` to ``min(free, (1 - 1e-6)/(M lam))``,
    ``free = sqrt((1 + log m)/(T m (1 + 4 lam^2)))`` the minimiser at ``s = 0`` (the noise
    penalty grows with eta, so the minimiser is below ``free``). At ``lam = 0`` eta is
    ``free`` and M = ``ceil(sqrt(m T))``, the textbook rate.
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
    """``E max_i Z_i`` for m iid standard Laplace variates (exact).

    A Laplace variate is an Exp(1) variate with a fair random sign. With ``k`` of the m signs
    positive (``k ~ Bin(m, 1/2)``) the maximum is the largest of k Exp(1) variates, of mean
    ``H_k`` (harmonic number); with none positive it is minus the smallest of m, of mean
    ``-1/m``. So ``E max = sum_k C(m, k) 2^-m H_k - 2^-m / m`` (0.75 at m = 2, 2.236 at
    m = 10; below ``1 + ln m``).
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
    ``s = u lam < 1``, ``c = max(1, 1 - u + u^2/2)`` and ``E_m`` = :func:`laplace_max_mean`
    (docs/algorithms.md, "Calibration", #29's third revision; not the default, see
    :func:`ftpl_gr_tight_calibrated`). FTPL's potential ``Phi(L) = E min_i (L_i + Z_i)`` gives
    regret against the estimates <= ``E max_i Z_i`` + the Bregman gaps of the updates. An
    update moves only the played coordinate, by ``c = K y`` (``y = l + N`` the fed value,
    ``N ~ Lap(lam)``, K the resample count), and the played arm's probability moves by a factor
    within ``e^(+-eta |r|)`` along the way, so the gap is at most ``(p/eta) psi(eta c)``,
    ``psi(x) = e^-x - 1 + x``, for either sign of c. Given K, the Laplace moment generating
    function makes ``E_N psi(b (l + N))`` exact (``b = eta K``): ``e^(-b l)/(1 - b^2 lam^2) -
    1 + b l <= b^2/2 + b^2 lam^2 c/(1 - s^2)`` for ``l`` in [0, 1]; with ``p^2 E K^2 <= 2`` per
    arm a round costs at most ``eta m (1 + 2 lam^2 c/(1 - s^2))``. The truncation at M biases
    each arm's estimate by at most ``p (1 - p)^M``, largest at ``p = 1/(M+1)``.
    """
    if eta <= 0 or cap < 1 or eta * cap * lam >= 1.0:
        return math.inf
    return float(_ftpl_gr_tight_terms(m, horizon, lam, np.float64(eta), np.float64(cap)))


def ftpl_gr_tight_calibrated(m: int, horizon: int, lam: float) -> tuple[float, int, float]:
    """``(eta, M, bound)`` minimising :func:`ftpl_gr_tight_bound` on the default's (M, eta) grid.

    Not the learner's default (docs/algorithms.md, "Calibration": its minimiser has about the
    default's ``eta / tau``, so it does not reach #29's target either); kept so that the
    comparison in the docs can be recomputed and tested. ``free = sqrt(E_m/(T m (1 + 2
    lam^2)))`` is its minimiser at ``s = 0``.
    """
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

    Exact: ``E (l + N)^k`` plus the negative side's excess. For ``l + N < 0`` write ``w = -(l +
    N) > 0``, of density ``e^(-l/lam) e^(-w/lam)/(2 lam)``, so ``E[w^k e^(b w); w > 0] =
    (k!/2) lam^k e^(-l/lam)/(1 - b lam)^(k+1)`` (``inf`` unless ``b lam < 1``). Convex in l
    (``z^k e^(b z_-)`` is), so on [0, 1] its maximum is at ``l`` = 0 or 1.
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

    ``E_m/eta_max + 2 sqrt(2 E_m (q0 + T v)) + sqrt(E_m/2) T u2/(2 q0^(3/2))`` plus the
    resampling bias ``m T (M/(M+1))^M/(M+1)``, with ``eta_max = s/(M lam)`` (``inf`` at
    lam = 0), ``v = m max_l A_2(l, eta_max M)`` and ``u2 = M m max_l A_4(l, 2 eta_max M)``
    (``A_k`` = :func:`laplace_fed_moment`, l in {0, 1}),
    ``E_m`` = :func:`laplace_max_mean` (docs/algorithms.md, "Calibration", the adaptive rate).
    The proof: FTPL's potential with non-increasing rates costs ``E_m/eta_T`` plus the Bregman
    gaps; round n's gap is at most ``eta_n E[q_n | past]`` (``q_n = M_n y_n^2 e^(eta_n M
    y_n^-)``, ``E[q_n | past] <= v``, ``E[q_n^2 | past] <= u2``); and ``sum_n q_n /
    sqrt(S_{n-1}) <= 2 sqrt(S_T) + sum_n q_n^2/(2 q0^(3/2))``. Needs ``s < 1/2`` when lam > 0.
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
_ADAPTIVE_GRID = (48, 24, 40)
#: the top of its s grid (s < 1/2): a tuning there sits on the proof's limit (a claim warning)
_S_TOP = 0.5 - 0.5 / _ADAPTIVE_GRID[1] - 1e-9


@functools.lru_cache(maxsize=8192)
def ftpl_gr_adaptive_calibrated(
    m: int, horizon: int, lam: float
) -> tuple[float, int, float, float]:
    """``(eta_max, M, q0, bound)`` minimising :func:`ftpl_gr_adaptive_bound`.

    M on a 48-point log grid up to ``ceil(sqrt(m T))`` (as the fixed rate's), ``s = eta_max M
    lam`` on 24 points of (0, 1/2) and q0 on a 40-point log grid from ``m`` to ``1e3 m T``.
    At lam = 0 there is no cap (``eta_max = inf``).
    """
    tb = max(1, horizon)
    top = math.ceil(math.sqrt(m * tb))
    n_cap, n_s, n_q = _ADAPTIVE_GRID
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


@dataclass(frozen=True)
class BatchedBanditTuning:
    """Parameters of Alg. 1 (or Thm 7) with a base learner over ``m`` arms.

    Attributes:
        base: the base learner (``"tsallis-inf"``, ``"exp3"`` or ``"ftpl-gr"``).
        tau: batch length.
        n_batches: ``floor(T / tau)``: the base learner's horizon and number of updates.
        lam: Laplace scale of the released batch mean, ``1 / (epsilon tau)`` (before any
            lattice slack of the noise backend).
        params: the base learner's constants (``sigma``; ``eta``, ``gamma``; ``eta``,
            ``resample_cap``).
        bound: the proof-level regret bound ``tau * R~_B(T_B, m, lam) + tau`` at these values
            (may exceed T: the theory is vacuous at small T).
        caps: the public caps the tuning sits on (empty when the bound's minimiser is
            interior), in words, for the claim's notes.
    """

    base: str
    tau: int
    n_batches: int
    lam: float
    params: dict[str, float | int] = field(default_factory=dict)
    bound: float = math.inf
    caps: tuple[str, ...] = ()


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


# ---------------------------------------------------------------------------- Alg. 1 / Thm 7
def paper_tau(epsilon: float, horizon: int) -> int:
    """``tau = ceil(1 / epsilon)`` of Thm 1 / Cor. 2 / Cor. 8; refuses ``epsilon < 1 / T``.

    For ``epsilon >= 1`` this is 1 (outside the theorems' range ``epsilon <= 1``, but the
    Laplace mechanism is still ``epsilon``-DP).
    """
    tau = math.ceil(1.0 / epsilon - 1e-12)
    if tau > horizon:
        raise ValueError(
            f"tuning='paper' needs epsilon >= 1/T (Cor. 2, 8, 24): tau = ceil(1/epsilon) = {tau} "
            f"exceeds the horizon T = {horizon}, so the base learner would never be updated; "
            "use tuning='calibrated' or pass tau explicitly"
        )
    return max(1, tau)


def base_parameters(
    base: str, m: int, n_batches: int, lam: float, tuning: str = "paper", rate: str = "fixed"
) -> dict[str, float | int]:
    """The base learner's constants at horizon ``n_batches`` and noise ``lam``.

    With ``tuning="calibrated"`` EXP3 uses the second-moment rate of
    :func:`second_moment_exp3` instead of Cor. 22's and FTPL-GR the second-moment rate and
    resampling cap of :func:`ftpl_gr_calibrated` instead of Lemma 25's; HTINF is the same in
    both.

    * ``tsallis-inf`` (HTINF, alpha = 2): ``sigma = sqrt(2 + 4 lam^2)``.
    * ``exp3`` (Cor. 22, lemma level): ``eta = sqrt(log m / (2 T_B m (1 + 10 max(lam^2, lam)
      log^2(m T_B))))`` and ``gamma = 4 eta lam m log(m T_B)``.
    * ``ftpl-gr`` (Lemma 25 at T_B): ``M = ceil(sqrt(m T_B))`` and ``eta = min(sqrt(log m /
      (m T_B (1 + 10 lam^2 log^2(m T_B)))), 1 / (M (1 + 4 lam log T_B)))`` (lam, not eta).
    * ``ftpl-gr`` with ``rate="adaptive"`` (calibrated only): the rate cap ``eta`` (=
      ``eta_max``, ``inf`` at lam = 0), M and ``q0`` of :func:`ftpl_gr_adaptive_calibrated`.
    """
    tb = max(1, n_batches)
    _check_rate_rule(base, tuning, rate)
    if rate == "adaptive":
        eta, cap, q0, _ = ftpl_gr_adaptive_calibrated(m, tb, lam)
        return {"eta": eta, "resample_cap": cap, "q0": q0}
    if base == "tsallis-inf":
        return {"sigma": math.sqrt(2.0 + 4.0 * lam * lam)}
    if base == "exp3" and tuning == "calibrated":
        eta, gamma = second_moment_exp3(m, m, tb, lam)
        return {"eta": eta, "gamma": gamma}
    if base == "ftpl-gr" and tuning == "calibrated":
        eta, cap, _ = ftpl_gr_calibrated(m, tb, lam)
        return {"eta": eta, "resample_cap": cap}
    if base == "exp3":
        lg = glog(m * tb)
        eta = math.sqrt(math.log(m) / (2.0 * tb * m * (1.0 + 10.0 * max(lam * lam, lam) * lg**2)))
        return {"eta": eta, "gamma": 4.0 * eta * lam * m * lg}
    if base == "ftpl-gr":
        lg = glog(m * tb)
        cap = math.ceil(math.sqrt(m * tb))
        eta = min(
            math.sqrt(math.log(m) / (m * tb * (1.0 + 10.0 * lam * lam * lg**2))),
            1.0 / (cap * (1.0 + 4.0 * lam * glog(tb))),
        )
        return {"eta": eta, "resample_cap": cap}
    raise ValueError(f"base must be one of {BASES}, got {base!r}")


def base_noisy_regret(
    base: str, m: int, n_batches: int, lam: float, tuning: str = "paper", rate: str = "fixed"
) -> float:
    """Upper bound on ``R~_B(T_B, m, lam)`` with the constants of :func:`base_parameters`.

    HTINF: Thm 21 with the heavy-tail moment of ``l + Lap(lam)``; EXP3: proof of Cor. 22
    (``inf`` when ``gamma > 1``, where the proof does not apply), or with
    ``tuning="calibrated"`` the second-moment bound :func:`second_moment_bound`; FTPL-GR:
    Lemma 25; with ``rate="adaptive"`` :func:`ftpl_gr_adaptive_bound` at its minimiser.
    """
    tb = max(1, n_batches)
    _check_rate_rule(base, tuning, rate)
    if rate == "adaptive":
        return ftpl_gr_adaptive_calibrated(m, tb, lam)[3]
    if base == "exp3" and tuning == "calibrated":
        eta, gamma = second_moment_exp3(m, m, tb, lam)
        return second_moment_bound(m, m, tb, lam, eta, gamma)
    if base == "ftpl-gr" and tuning == "calibrated":
        return ftpl_gr_calibrated(m, tb, lam)[2]
    if base == "tsallis-inf":
        return 30.0 * math.sqrt((2.0 + 4.0 * lam * lam) * m * (tb + 1))
    if base == "exp3":
        if base_parameters(base, m, tb, lam)["gamma"] > 1.0:
            return math.inf
        lg = glog(m * tb)
        return 2.0 * math.sqrt(2.0 * tb * m * math.log(m) * (1 + 10 * max(lam**2, lam) * lg**2)) + 1
    if base == "ftpl-gr":
        root = math.sqrt(m * tb)
        return 11.0 * lam * root * math.log(m) * glog(m * tb) + 10.0 * root
    raise ValueError(f"base must be one of {BASES}, got {base!r}")


def _check_rate_rule(base: str, tuning: str, rate: str) -> None:
    """FTPL-GR's adaptive rate exists only for ``base="ftpl-gr"`` under the calibrated tuning."""
    if rate not in FTPL_RATES:
        raise ValueError(f"rate must be one of {FTPL_RATES}, got {rate!r}")
    if rate == "adaptive" and (base != "ftpl-gr" or tuning != "calibrated"):
        raise ValueError(
            f"rate='adaptive' applies to base='ftpl-gr' with tuning='calibrated' only, got "
            f"base={base!r}, tuning={tuning!r} (tuning='paper' is Lemma 25's fixed eta)"
        )


def _tau_grid(horizon: int, extra: int | None = None) -> np.ndarray:
    # Every integer up to 2000 (the bounds are cheap), then a fine log grid.
    top = max(1, horizon // 10)
    grid = np.arange(1, min(top, 2000) + 1)
    if top > 2000:
        grid = np.union1d(grid, np.round(np.geomspace(2000, top, 2000)).astype(np.int64))
    if extra is not None and 1 <= extra <= top:
        grid = np.union1d(grid, [extra])
    return grid


def tune_batched_bandit(
    base: str,
    n_arms: int,
    horizon: int,
    epsilon: float,
    tuning: str,
    tau: int | None = None,
    gamma_given: bool = False,
    rate: str = "fixed",
) -> BatchedBanditTuning:
    """Batch length and base-learner constants for Alg. 1 over ``n_arms`` (meta-)arms.

    Args:
        base: base learner name.
        n_arms: m, the arms the base learner plays (K for Alg. 1, N for Thm 7).
        horizon: T.
        epsilon: privacy parameter.
        tuning: ``"paper"`` (``tau = ceil(1/epsilon)``) or ``"calibrated"`` (``tau``
            minimising the proof-level bound ``tau R~_B(T_B, m, 1/(epsilon tau)) + tau`` over a
            grid with ``tau <= T // 10``).
        tau: a batch length fixed by the user (the base constants still follow ``tuning``'s
            formulas at this tau).
        gamma_given: the user fixes EXP3's gamma, so the formula's gamma need not be <= 1.
        rate: FTPL-GR's rate rule, ``"fixed"`` or ``"adaptive"`` (calibrated ftpl-gr only:
            tau, M, the rate cap and q0 minimise :func:`ftpl_gr_adaptive_bound`).

    Raises:
        ValueError: for ``tuning="paper"`` when the theorem's parameters are not valid.
    """
    if base not in BASES:
        raise ValueError(f"base must be one of {BASES}, got {base!r}")
    _check_rate_rule(base, tuning, rate)

    def bound_at(t: int) -> float:
        nb = horizon // t
        lam = 1.0 / (epsilon * t)
        return t * base_noisy_regret(base, n_arms, nb, lam, tuning, rate) + t

    picked = tau is None
    if tau is None:
        if tuning == "paper":
            tau = paper_tau(epsilon, horizon)
        else:
            grid = _tau_grid(horizon, extra=math.ceil(1.0 / epsilon - 1e-12))
            bounds = np.array([bound_at(int(t)) for t in grid])
            if not np.isfinite(bounds).any():
                raise ValueError(
                    f"tuning='calibrated' found no batch length with a valid {base} bound "
                    f"(gamma <= 1) for m={n_arms}, T={horizon}, epsilon={epsilon}; pass tau, "
                    "eta and gamma explicitly"
                )
            tau = int(grid[int(np.argmin(bounds))])
    n_batches = horizon // tau
    lam = 1.0 / (epsilon * tau)
    params = base_parameters(base, n_arms, n_batches, lam, tuning, rate)
    if tuning == "paper" and base == "exp3" and params["gamma"] > 1.0 and not gamma_given:
        raise ValueError(
            f"tuning='paper' gives EXP3 mixing gamma = {params['gamma']:.3g} > 1 (Cor. 22's "
            f"gamma = 4 eta lam K log(K T_B) with T_B = {n_batches}, lam = {lam:.3g}); the "
            "horizon is too short for the theorem. Use tuning='calibrated' or pass gamma"
        )
    return BatchedBanditTuning(
        base,
        int(tau),
        n_batches,
        lam,
        params,
        bound_at(int(tau)),
        _bandit_caps(base, n_arms, horizon, tuning, int(tau), picked, lam, params),
    )


def ftpl_gr_tight_tuning(n_arms: int, horizon: int, epsilon: float) -> BatchedBanditTuning:
    """Alg. 1 + FTPL-GR tuned on :func:`ftpl_gr_tight_bound` (tau, then eta and M), for comparison.

    The same search as ``tune_batched_bandit("ftpl-gr", ..., "calibrated")`` -- tau over the
    grid ``tau <= T // 10`` minimising ``tau R_B + tau`` -- with the tight bound in place of
    :func:`ftpl_gr_bound`. Pass its ``tau``, ``eta`` and ``resample_cap`` to
    ``private-batched-bandit`` to run it (all public quantities).
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")

    def at(t: int) -> tuple[float, float, int]:
        eta, cap, bound = ftpl_gr_tight_calibrated(n_arms, horizon // t, 1.0 / (epsilon * t))
        return t * bound + t, eta, cap

    grid = _tau_grid(horizon, extra=None if math.isinf(epsilon) else math.ceil(1.0 / epsilon))
    scored = [at(int(t)) for t in grid]
    k = int(np.argmin([b for b, _, _ in scored]))
    tau = int(grid[k])
    bound, eta, cap = scored[k]
    lam = 1.0 / (epsilon * tau)
    params: dict[str, float | int] = {"eta": eta, "resample_cap": cap}
    caps = _bandit_caps("ftpl-gr", n_arms, horizon, "calibrated", tau, True, lam, params)
    return BatchedBanditTuning("ftpl-gr", tau, horizon // tau, lam, params, bound, caps)


def _bandit_caps(
    base: str,
    m: int,
    horizon: int,
    tuning: str,
    tau: int,
    picked: bool,
    lam: float,
    params: dict[str, float | int],
) -> tuple[str, ...]:
    """The public caps a calibrated Alg. 1 tuning sits on (see :class:`BatchedBanditTuning`)."""
    if tuning != "calibrated" or not math.isfinite(lam) or lam == 0.0:
        return ()
    caps = []
    if picked and tau == max(1, horizon // 10) and horizon // 10 > 1:
        caps.append(f"tau at its cap T // 10 = {tau}")
    tb = max(1, horizon // tau)
    if base == "ftpl-gr" and int(params["resample_cap"]) >= math.ceil(math.sqrt(m * tb)):
        top = params["resample_cap"]
        caps.append(f"FTPL-GR's resampling cap M at its top ceil(sqrt(m T_B)) = {top}")
    if "q0" in params and float(params["eta"]) * int(params["resample_cap"]) * lam >= _S_TOP:
        caps.append("FTPL-GR's adaptive rate cap at eta_max M lam -> 1/2, the limit of its proof")
    if base == "exp3" and float(params["gamma"]) >= 0.5:
        caps.append("EXP3's exploration gamma at its cap 1/2")
    return tuple(caps)


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
        _log_experts(n) / eta
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
    logn = _log_experts(n)
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
        tau * _log_experts(n) / eta
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
    logn = _log_experts(n)
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
    taus = (_tau_grid(horizon) if tau is None else np.array([tau])).astype(np.float64)
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
        eta_arr = np.minimum(np.sqrt(tau * _log_experts(n) / (horizon * v)), cap)
        eta_arr = np.minimum(eta_arr, 0.99)
    else:
        eta_arr = np.broadcast_to(np.float64(eta), v.shape).copy()
    bound = tau * _log_experts(n) / eta_arr + eta_arr * horizon * v + gamma * horizon + 2 * tau
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
        eta_arr = np.minimum(np.sqrt(tau * _log_experts(n) / (horizon * v)), cap)
    else:
        eta_arr = np.broadcast_to(np.float64(eta), v.shape).copy()
    bound = tau * _log_experts(n) / eta_arr + eta_arr * horizon * v + gamma * horizon + 2 * tau
    feasible = (eta_arr <= cap * (1 + 1e-12)) & (gamma <= 1.0)
    return np.where(feasible, bound, np.inf), eta_arr
