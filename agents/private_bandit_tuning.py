"""Parameters of the private bandit learners ("Faster Rates for Private Adversarial Bandits").

Pure functions of public quantities, never of losses: ``"paper"`` evaluates the base learner's
lemma-level constants at ``T_B = floor(T / tau)`` and ``lam = 1 / (epsilon tau)`` (ValueError when
not valid); ``"calibrated"`` minimises a second-moment regret bound over a grid (docs/algorithms.md,
"Calibration"). Small logarithms are guarded (``max(log x, 1)``, N >= 2). Re-exports the names of
:mod:`agents.private_bandit_ftpl_tuning`, :mod:`agents.private_exp4_tuning` and
:mod:`agents.private_bandit_bounds`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from agents.private_bandit_bounds import (
    glog,
    second_moment_bound,
    second_moment_exp3,
    tau_grid,
)
from agents.private_bandit_ftpl_tuning import (
    ADAPTIVE_S_TOP,
    ftpl_gr_adaptive_bound,
    ftpl_gr_adaptive_calibrated,
    ftpl_gr_bound,
    ftpl_gr_calibrated,
    ftpl_gr_tight_bound,
    ftpl_gr_tight_calibrated,
    laplace_fed_moment,
    laplace_max_mean,
)
from agents.private_exp4_tuning import (
    COMPOSITIONS,
    RELEASES,
    Exp4Tuning,
    batched_exp4_bound,
    batched_exp4_noise_constant,
    calibrated_batched_exp4_grid,
    calibrated_loss_release_grid,
    ldp_exp4_bound,
    tune_batched_exp4,
    tune_ldp_exp4,
)

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
#: FTPL-GR's learning-rate rules: Alg. 4's fixed eta, or the self-confident rate (calibrated only)
FTPL_RATES = ("fixed", "adaptive")
#: the rate rule of ``base="ftpl-gr"`` under ``tuning="calibrated"`` when none is given
DEFAULT_FTPL_RATE = "fixed"


@dataclass(frozen=True)
class BatchedBanditTuning:
    """Parameters of Alg. 1 (or Thm 7) with a base learner over ``m`` arms.

    Attributes:
        base: the base learner (``"tsallis-inf"``, ``"exp3"`` or ``"ftpl-gr"``).
        tau: batch length.
        n_batches: ``floor(T / tau)``: the base learner's horizon and number of updates.
        lam: Laplace scale of the released batch mean, ``1 / (epsilon tau)``.
        params: the base learner's constants.
        bound: the regret bound ``tau * R~_B(T_B, m, lam) + tau`` (may exceed T).
        caps: the public caps the tuning sits on, in words (empty when interior).
    """

    base: str
    tau: int
    n_batches: int
    lam: float
    params: dict[str, float | int] = field(default_factory=dict)
    bound: float = math.inf
    caps: tuple[str, ...] = ()



def paper_tau(epsilon: float, horizon: int) -> int:
    """``tau = ceil(1 / epsilon)`` of Thm 1 / Cor. 2 / Cor. 8; refuses ``epsilon < 1 / T``."""
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

    HTINF: ``sigma = sqrt(2 + 4 lam^2)``. EXP3: Cor. 22 at lemma level (calibrated:
    :func:`second_moment_exp3`). FTPL-GR: Lemma 25 at T_B (calibrated: :func:`ftpl_gr_calibrated`;
    ``rate="adaptive"``: :func:`ftpl_gr_adaptive_calibrated`). Formulas: docs/algorithms.md
    ("Calibration").
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

    HTINF: Thm 21; EXP3: Cor. 22's proof (``inf`` when ``gamma > 1``) or, calibrated,
    :func:`second_moment_bound`; FTPL-GR: Lemma 25, or :func:`ftpl_gr_adaptive_bound`.
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
        tuning: ``"paper"`` (``tau = ceil(1/epsilon)``) or ``"calibrated"`` (the tau minimising
            ``tau R~_B(T_B, m, 1/(epsilon tau)) + tau`` over ``tau <= T // 10``).
        tau: a batch length fixed by the user (the base constants still follow ``tuning``).
        gamma_given: the user fixes EXP3's gamma, so the formula's gamma need not be <= 1.
        rate: FTPL-GR's rate rule, ``"fixed"`` or ``"adaptive"`` (calibrated ftpl-gr only).

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
            grid = tau_grid(horizon, extra=math.ceil(1.0 / epsilon - 1e-12))
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
    """Alg. 1 + FTPL-GR tuned on :func:`ftpl_gr_tight_bound`, for comparison.

    The calibrated search of :func:`tune_batched_bandit` with the tight bound; its ``tau``, ``eta``
    and ``resample_cap`` can be passed to ``private-batched-bandit``.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")

    def at(t: int) -> tuple[float, float, int]:
        eta, cap, bound = ftpl_gr_tight_calibrated(n_arms, horizon // t, 1.0 / (epsilon * t))
        return t * bound + t, eta, cap

    grid = tau_grid(horizon, extra=None if math.isinf(epsilon) else math.ceil(1.0 / epsilon))
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
    if "q0" in params and (
        float(params["eta"]) * int(params["resample_cap"]) * lam >= ADAPTIVE_S_TOP
    ):
        caps.append("FTPL-GR's adaptive rate cap at eta_max M lam -> 1/2, the limit of its proof")
    if base == "exp3" and float(params["gamma"]) >= 0.5:
        caps.append("EXP3's exploration gamma at its cap 1/2")
    return tuple(caps)
