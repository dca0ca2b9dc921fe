"""noisy-clipped-hedge's rate: Hedge tuned for [0, 1] losses plus Laplace noise, S switches.

Public quantities only; derivation in docs/algorithms.md ("Calibration"). meta-expert-reduction uses
the same bound.
"""

from __future__ import annotations

import math

__all__ = ["calibrated_eta", "paper_eta", "tracking_complexity"]


def tracking_complexity(n_experts: int, horizon: int, n_switches: int) -> float:
    """``C = (S + 1) ln N + S ln(e (T - 1) / S)``: the S-switch comparator class's log-size."""
    s, t = n_switches, horizon
    if s == 0 or t <= 1:
        return math.log(n_experts) if n_experts > 1 else 1.0
    return (s + 1) * math.log(n_experts) + s * math.log(math.e * (t - 1) / s)


def calibrated_eta(n_experts: int, horizon: int, n_switches: int, noise_scale: float) -> float:
    """Hedge rate for losses in [0, 1] plus independent Laplace(b) noise, S switches.

    ``eta = sqrt(C / (T (1/8 + b^2)))`` (C from :func:`tracking_complexity`), capped at
    ``1 / (2 b)``; at ``b = 0`` Fixed-Share's ``sqrt(8 C / T)``.
    """
    c = tracking_complexity(n_experts, horizon, n_switches)
    eta = math.sqrt(c / (horizon * (0.125 + noise_scale**2)))
    return min(eta, 0.5 / noise_scale) if noise_scale > 0 else eta


def paper_eta(n_experts: int, horizon: int, n_switches: int, noise_scale: float) -> float:
    """Theorem 5.2's rate ``(1/b) sqrt(S_eff / (T log(NT)))``, ``S_eff = max(S, 1)``.

    none at b = 0.
    """
    n, t = n_experts, horizon
    s_eff = max(n_switches, 1)
    log_nt = math.log(n * t) if n * t > 1 else 1.0
    if noise_scale > 0:
        return math.sqrt(s_eff / (t * log_nt)) / noise_scale
    return calibrated_eta(n, t, s_eff, 0.0)
