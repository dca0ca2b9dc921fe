"""noisy-clipped-hedge's rate: Hedge tuned for [0, 1] losses plus Laplace noise, S switches.

Functions of public quantities only (N, T, S and the noise scale the epsilon implies); the
derivation is in docs/algorithms.md (Calibration). meta-expert-reduction uses the same bound.
"""

from __future__ import annotations

import math

__all__ = ["calibrated_eta", "paper_eta", "tracking_complexity"]


def tracking_complexity(n_experts: int, horizon: int, n_switches: int) -> float:
    """``C = (S + 1) ln N + S ln(e (T - 1) / S)``: the log-size of the S-switch comparator class.

    The same constant Fixed-Share is tuned with (Cesa-Bianchi & Lugosi 2006, §5.2), so that the
    private trackers reduce to the textbook tracking rate when the noise is removed.
    """
    s, t = n_switches, horizon
    if s == 0 or t <= 1:
        return math.log(n_experts) if n_experts > 1 else 1.0
    return (s + 1) * math.log(n_experts) + s * math.log(math.e * (t - 1) / s)


def calibrated_eta(n_experts: int, horizon: int, n_switches: int, noise_scale: float) -> float:
    """Hedge rate for losses in [0, 1] plus independent Laplace(b) noise, S switches.

    Exponential weights pay ``C / eta`` for the comparator (``C`` from
    :func:`tracking_complexity`) plus, per round, the log-moment-generating function of the
    loss it is fed: ``eta^2 / 8`` for a loss in [0, 1] (Hoeffding's lemma) and
    ``-log(1 - eta^2 b^2) <= (4/3) eta^2 b^2`` for Laplace(b) noise when ``eta b <= 1/2``.
    Minimising ``C / eta + eta T (1/8 + b^2)`` gives ``eta = sqrt(C / (T (1/8 + b^2)))``, capped
    at ``1 / (2 b)`` where the noise's moment bound needs it. At ``b = 0`` this is Fixed-Share's
    rate ``sqrt(8 C / T)``; it falls smoothly as the noise grows. Public quantities only.
    """
    c = tracking_complexity(n_experts, horizon, n_switches)
    eta = math.sqrt(c / (horizon * (0.125 + noise_scale**2)))
    return min(eta, 0.5 / noise_scale) if noise_scale > 0 else eta


def paper_eta(n_experts: int, horizon: int, n_switches: int, noise_scale: float) -> float:
    """Theorem 5.2's rate ``(1/b) sqrt(S_eff / (T log(NT)))``, ``S_eff = max(S, 1)``.

    It grows without bound with epsilon, and at epsilon = inf (b = 0) the theorem gives no
    rate: the calibrated one (:func:`calibrated_eta`) is used there.
    """
    n, t = n_experts, horizon
    s_eff = max(n_switches, 1)
    log_nt = math.log(n * t) if n * t > 1 else 1.0
    if noise_scale > 0:
        return math.sqrt(s_eff / (t * log_nt)) / noise_scale
    return calibrated_eta(n, t, s_eff, 0.0)
