"""The exact (epsilon, delta) of Gaussian mechanisms and their adaptive compositions.

``Delta / sigma``-GDP per release, ``sqrt(sum mu_i^2)`` composed, and the tight profile
``delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`` (Dong, Roth &
Su 2019, Thm 2.7, Cor. 3.3, Cor. 2.13; Balle & Wang 2018, Thm 8).
"""

from __future__ import annotations

import math

from dp_experts_env._validation import check_delta, check_epsilon, check_float, check_int
from dp_experts_env.privacy.guarantee import Guarantee

__all__ = [
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gaussian_tree_calibration",
]


def gdp_delta(epsilon: float, mu: float) -> float:
    """``delta(epsilon)`` of a ``mu``-GDP mechanism (the tight privacy profile)."""
    eps = check_float("epsilon", epsilon, minimum=0.0)
    mu = check_float("mu", mu, minimum=0.0)
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    from scipy.special import log_ndtr  # slow to import: paid only where used

    a = float(log_ndtr(-eps / mu + mu / 2.0))
    b = eps + float(log_ndtr(-eps / mu - mu / 2.0))
    # exp(a) - exp(b) = exp(a) (1 - exp(b - a)), with b <= a (the profile is non-negative)
    return max(0.0, math.exp(a) * -math.expm1(min(b - a, 0.0)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The least epsilon with ``delta(epsilon) <= delta`` for ``mu``-GDP (bisection)."""
    mu = check_float("mu", mu, minimum=0.0)
    delta = check_delta("delta", delta)
    if not delta > 0.0:
        raise ValueError("delta must be > 0: a Gaussian mechanism is never pure DP")
    if mu == 0.0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, mu) > delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` whose ``mu``-GDP mechanism is ``(epsilon, delta)``-DP (safe side)."""
    eps = check_epsilon("epsilon", epsilon)
    delta = check_delta("delta", delta)
    if not delta > 0.0:
        raise ValueError("delta must be > 0: a Gaussian mechanism is never pure DP")
    lo, hi = 0.0, 1.0
    while gdp_delta(eps, hi) <= delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gdp_delta(eps, mid) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


def gaussian_tree_calibration(
    l2_sensitivity: float, levels: int, epsilon: float, delta: float
) -> tuple[float, Guarantee]:
    """Node noise of a binary-tree counter with Gaussian nodes, and what it certifies.

    The ``levels`` nodes an item enters compose to ``mu = sqrt(levels) Delta / sigma``-GDP;
    ``sigma`` is the smallest with that mu ``(epsilon, delta)``-DP; ``epsilon = inf`` gives 0.

    Returns:
        ``(sigma, Guarantee(epsilon', delta))`` with ``epsilon' <= epsilon`` at that sigma.
    """
    sens = check_float("l2_sensitivity", l2_sensitivity, minimum=0.0, min_inclusive=False)
    levels = check_int("levels", levels, minimum=1)
    eps = check_epsilon("epsilon", epsilon, allow_inf=True)
    delta = check_delta("delta", delta)
    if math.isinf(eps):
        return 0.0, Guarantee(math.inf, 0.0, "no noise")
    mu = gdp_mu(eps, delta)
    sigma = math.sqrt(levels) * sens / mu
    certified = min(gdp_epsilon(mu, delta), eps)
    return sigma, Guarantee(
        certified,
        delta,
        f"Gaussian binary tree: {levels} levels, L2 sensitivity {sens:g} per node, sigma "
        f"{sigma:g}; the levels compose to mu = {mu:.6g}-GDP (Dong, Roth & Su 2019), converted "
        "to (epsilon, delta) by its exact privacy profile",
    )
