"""Composition rules: how per-step privacy adds up over a run (docs/privacy.md, "Accounting").

Neighbours REPLACE one round's datum: :func:`pld_laplace_composition` calls dp-accounting with
``ADD_OR_REMOVE_ONE`` at ``noise_multiplier = scale / sensitivity`` and refuses ``delta = 0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp_experts_env._validation import check_choice, check_delta, check_epsilon, check_int
from dp_experts_env.privacy.guarantee import Guarantee

__all__ = [
    "basic_composition",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "compose",
    "parallel_composition",
    "combine",
    "per_step_epsilon",
    "has_dp_accounting",
    "pld_laplace_composition",
]


def _epsilons(name: str, values: float | Sequence[float]) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of numbers, got shape {arr.shape}")
    for v in arr:
        check_epsilon(name, float(v))
    return arr


def _deltas(name: str, values: float | Sequence[float], k: int) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    if arr.shape != (k,):
        raise ValueError(f"{name} must be a number or a sequence of {k} numbers, got {arr.shape}")
    for v in arr:
        check_delta(name, float(v))
    return arr


def _total_delta(delta: float) -> float:
    if delta >= 1.0:
        raise ValueError(f"the composed delta {delta:g} is >= 1: no privacy left to claim")
    return delta


def basic_composition(
    epsilons: float | Sequence[float], deltas: float | Sequence[float] = 0.0
) -> Guarantee:
    """Sequential (adaptive) composition: ``(sum eps_i, sum delta_i)`` (a number: every step)."""
    eps = _epsilons("epsilons", epsilons)
    dl = _deltas("deltas", deltas, eps.size)
    return Guarantee(
        float(eps.sum()),
        _total_delta(float(dl.sum())),
        f"basic composition of {eps.size} steps",
    )


def advanced_composition(
    epsilon: float, k: int, delta_prime: float, delta: float = 0.0
) -> Guarantee:
    """Advanced composition of k adaptive (epsilon, delta)-DP steps (Dwork–Roth Thm 3.20).

    ``sqrt(2 k ln(1/delta_prime)) epsilon + k epsilon (e^epsilon - 1)``, total delta
    ``delta_prime + k delta`` (``delta_prime`` in (0, 1)); it can exceed ``k * epsilon``
    (:func:`compose` takes the better).
    """
    eps = check_epsilon("epsilon", epsilon)
    k = check_int("k", k, minimum=1)
    dp = check_delta("delta_prime", delta_prime)
    if dp <= 0.0:
        raise ValueError("delta_prime must be > 0 for advanced composition (use basic for 0)")
    d = check_delta("delta", delta)
    # e^eps overflows past eps ~ 709, where the bound is useless anyway: report it unbounded.
    drift = k * eps * math.expm1(eps) if eps < 700.0 else math.inf
    total = math.sqrt(2.0 * k * math.log(1.0 / dp)) * eps + drift
    return Guarantee(total, _total_delta(dp + k * d), f"advanced composition (DRV) of {k} steps")


def advanced_composition_heterogeneous(
    epsilons: Sequence[float], delta_prime: float, deltas: float | Sequence[float] = 0.0
) -> Guarantee:
    """Advanced composition with per-step epsilons.

    ``sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1)``, total delta
    ``delta' + sum delta_i``.
    """
    eps = _epsilons("epsilons", epsilons)
    dp = check_delta("delta_prime", delta_prime)
    if dp <= 0.0:
        raise ValueError("delta_prime must be > 0 for advanced composition (use basic for 0)")
    dl = _deltas("deltas", deltas, eps.size)
    with np.errstate(over="ignore"):
        drift = float(np.sum(eps * np.expm1(np.minimum(eps, 700.0))))
    if np.any(eps >= 700.0):
        drift = math.inf
    total = math.sqrt(2.0 * math.log(1.0 / dp) * float(np.sum(eps**2))) + drift
    return Guarantee(
        total,
        _total_delta(dp + float(dl.sum())),
        f"advanced composition (DRV, heterogeneous) of {eps.size} steps",
    )


def compose(epsilon: float, k: int, *, delta: float = 0.0, delta_prime: float = 0.0) -> Guarantee:
    """Compose k identical adaptive steps: basic, or advanced if smaller and ``delta_prime > 0``."""
    eps = check_epsilon("epsilon", epsilon)
    k = check_int("k", k, minimum=1)
    d = check_delta("delta", delta)
    basic = Guarantee(k * eps, _total_delta(k * d), f"basic composition of {k} steps")
    if check_delta("delta_prime", delta_prime) == 0.0:
        return basic
    adv = advanced_composition(eps, k, delta_prime, d)
    return adv if adv.epsilon < basic.epsilon else basic


def combine(parts: Sequence[Guarantee], rule: str = "basic", what: str = "") -> Guarantee:
    """Compose a learner's guarantees into one whose text lists the parts.

    ``rule="basic"``: the parts read the same data (epsilons and deltas add); ``"parallel"``: each
    reads disjoint rounds (the worst counts). ``what`` names the composition in the text.
    """
    check_choice("rule", rule, ("basic", "parallel"))
    gs = list(parts)
    if not gs or not all(isinstance(g, Guarantee) for g in gs):
        raise TypeError("parts must be a non-empty sequence of Guarantee objects")
    if rule == "basic":
        eps = float(sum(g.epsilon for g in gs))
        delta = _total_delta(float(sum(g.delta for g in gs)))
    else:
        eps = max(g.epsilon for g in gs)
        delta = max(g.delta for g in gs)
    inner = "; ".join(g.accountant for g in gs)
    label = f"{rule} composition" + (f" of {what}" if what else "")
    return Guarantee(eps, delta, f"{label}: {inner}")


def parallel_composition(guarantees: Sequence[Guarantee]) -> Guarantee:
    """Mechanisms on disjoint parts of the data: ``(max eps_i, max delta_i)``.

    The caller vouches for disjointness and for windows chosen independently of the protected data.
    """
    gs = list(guarantees)
    if not gs or not all(isinstance(g, Guarantee) for g in gs):
        raise TypeError("guarantees must be a non-empty sequence of Guarantee objects")
    return Guarantee(
        max(g.epsilon for g in gs),
        max(g.delta for g in gs),
        f"parallel composition over {len(gs)} disjoint parts",
    )


def per_step_epsilon(
    total_epsilon: float,
    k: int,
    *,
    delta_prime: float = 0.0,
    delta: float = 0.0,
    method: str = "best",
    tol: float = 1e-12,
) -> float:
    """Largest per-step epsilon whose k-fold composition is at most ``total_epsilon``.

    Args:
        total_epsilon: the target epsilon of the whole run (> 0).
        k: number of steps.
        delta_prime: slack for advanced composition (needed unless ``method="basic"``).
        delta: per-step delta (only checked).
        method: ``"basic"`` (``total / k``), ``"advanced"`` (the DRV bound inverted by bisection)
            or ``"best"`` (the larger of the two).
        tol: relative bisection tolerance.

    Returns:
        The per-step epsilon (bisection keeps the feasible end).
    """
    target = check_epsilon("total_epsilon", total_epsilon)
    k = check_int("k", k, minimum=1)
    check_delta("delta", delta)
    check_choice("method", method, ("basic", "advanced", "best"))
    basic = target / k
    if method == "basic":
        return basic
    if check_delta("delta_prime", delta_prime) == 0.0:
        raise ValueError(f"delta_prime must be > 0 for method={method!r}")

    def advanced(e: float) -> float:
        return math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * e + k * e * math.expm1(e)

    lo, hi = 0.0, target  # advanced(target) >= target, so the root lies in (0, target]
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if advanced(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo if method == "advanced" else max(lo, basic)


def has_dp_accounting() -> bool:
    """True when the optional ``dp-accounting`` package can be imported."""
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        return False
    return True


def pld_laplace_composition(
    epsilon: float, k: int, delta: float, *, discretization: float = 1e-4
) -> Guarantee:
    """Tight epsilon of k adaptive epsilon-DP Laplace steps, via dp-accounting's PLD.

    Never worse than basic composition (the smaller epsilon is reported).

    Args:
        epsilon: per-step epsilon (> 0).
        k: number of steps.
        delta: target delta, in (0, 1).
        discretization: PLD value discretization (smaller is tighter and slower).

    Raises:
        ImportError: dp-accounting is not installed (``pip install dp-experts-env[accounting]``).
    """
    eps = check_epsilon("epsilon", epsilon)
    k = check_int("k", k, minimum=1)
    d = check_delta("delta", delta)
    if d == 0.0:
        raise ValueError(
            "delta must be > 0: dp-accounting's PLD accountant returns inf at delta = 0; use "
            "basic_composition for pure DP"
        )
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError as err:
        raise ImportError(
            "pld_laplace_composition needs the optional dp-accounting package: "
            "pip install 'dp-experts-env[accounting]'"
        ) from err
    accountant = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=discretization,
    )
    accountant.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1 / eps), k))
    tight = float(accountant.get_epsilon(d))
    return Guarantee(
        min(tight, k * eps), d, f"dp-accounting PLD, {k} Laplace steps (add/remove = shift)"
    )
