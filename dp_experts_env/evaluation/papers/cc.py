"""Claims of Cesari & Colomboni 2026, "Optimal Gap-Dependent Regret for Private Stochastic DTOL".

Randomized prefix softmax: horizon-free regret, its explicit constant, 1/epsilon and 1/gap
(Thm 1, eqs. (1)-(2)); sizes and quantities in docs/reproduce.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from dp_experts_env.evaluation.claims import (
    Claim,
    Measurement,
    Point,
    Sweep,
    mean_with_ci,
    power_plus_constant,
)
from dp_experts_env.evaluation.papers.common import (
    UNIFORM,
    eps_points,
    points_at,
    slope_experiment,
)

__all__ = ["PAPER", "REPORT_ORDER", "claims"]

PAPER = 'Cesari & Colomboni 2026, "Optimal Gap-Dependent Regret for Private Stochastic DTOL"'
#: Position of the paper in the report (claims.csv, report.md).
REPORT_ORDER = 4


def _gap_env(gap: float, t: int = 10_000) -> dict[str, object]:
    return {"family": "one_vs_rest", "gap": float(gap), "horizon": int(t)}


#: The claims test the printed algorithm (its step cap eta <= 1/8), not the suite's uncapped
#: default: the paper-mode row, played under the learner's own key.
RPS_PAPER = "randomized-prefix-softmax:paper"
RPS_T = (1_000, 4_000, 16_000, 64_000)
RPS_T_QUICK = (1_000, 4_000, 16_000)

# Each run is cheap and these claims are two-sided with narrow bands, so they use more seeds.
RPS_SEEDS = {"seeds": 64, "quick_seeds": 16}

rps_horizon_free = Claim(
    name="cc-horizon-free",
    paper=PAPER,
    source="Thm 1, eq. (1)",
    statement="Randomized prefix softmax's regret on i.i.d. losses with a unique best expert is "
    "bounded independently of T (1 + 800 log K / gap + 16 log K / eta).",
    quantity="log-log slope of pseudo-regret in T (gap 0.2, epsilon = 1; on this stationary env "
    "the per-round-best pseudo-regret equals the static one)",
    predicted=0.0,
    tolerance=0.1,
    kind="two_sided",
    **slope_experiment(
        "randomized-prefix-softmax",
        "DPExperts-Stochastic-v0",
        points_at(RPS_T, lambda t: _gap_env(0.2, int(t)), 1.0),
        points_at(RPS_T_QUICK, lambda t: _gap_env(0.2, int(t)), 1.0),
        metric="per_round_best_pseudo_regret",
        learner=RPS_PAPER,
        **RPS_SEEDS,
    ),
    x_label="T",
)


def _rps_bound(p: Point) -> float:
    """Theorem 1 eq. (1): 1 + 800 log K / gap + 16 log K / eta, eta = min(epsilon / 2, 1/8)."""
    k = int(p.env_params["n_experts"])
    eta = min(float(p.epsilon) / 2, 1 / 8) if p.epsilon is not None else 1 / 8
    return 1 + 800 * math.log(k) / float(p.env_params["gap"]) + 16 * math.log(k) / eta


_CONSTANT_T = (16_000, 64_000, 256_000)


def _constant_points(values: tuple[int, ...]) -> tuple[Point, ...]:
    return points_at(values, lambda t: {**_gap_env(0.2, int(t)), "n_experts": 10}, 1.0)


def _regret_over_bound(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    frame = rows["randomized-prefix-softmax"]
    t = frame["x"].max()
    last = frame[frame["x"] == t].copy()
    bound = _rps_bound(_constant_points((int(t),))[0])
    last["over_bound"] = last["per_round_best_pseudo_regret"] / bound
    m = mean_with_ci(last, "over_bound")
    return replace(m, detail=f"{m.detail} at T = {t:g}; explicit bound {bound:.5g}")


rps_constant = Claim(
    name="cc-explicit-constant",
    paper=PAPER,
    source="Thm 1, eq. (1) (explicit constants)",
    statement="Randomized prefix softmax's regret is at most 1 + 800 log K / gap + 16 log K / eta "
    "(eta = min(epsilon/2, 1/8)) at every T.",
    quantity="mean pseudo-regret / the explicit bound at the largest T (K = 10, gap 0.2, "
    "epsilon = 1)",
    predicted=1.0,
    tolerance=0.0,
    kind="at_most",
    sweeps=(
        Sweep(
            "randomized-prefix-softmax",
            RPS_PAPER,
            "DPExperts-Stochastic-v0",
            _constant_points(_CONSTANT_T),
            _constant_points((64_000,)),
            metric="per_round_best_pseudo_regret",
            seeds=16,
            quick_seeds=16,
        ),
    ),
    analyse=_regret_over_bound,
    control=UNIFORM,
    x_label="T",
    notes="The bound does not grow with T while uniform play's regret grows linearly, so the "
    "control fails it once T is large enough (gap T (K-1)/K above the bound: T > ~53,000 here); "
    "at the smaller quick horizons it would pass and the claim would be vacuous, which is why "
    "the largest T is judged. The constants are explicit and, as the paper says, not "
    "optimised: the measured regret is a small fraction of the bound.",
)


rps_eps = Claim(
    name="cc-one-over-epsilon",
    paper=PAPER,
    source="Thm 1, eq. (2): log K / epsilon term",
    statement="In the privacy-dominated regime (large gap, small epsilon) the regret is "
    "proportional to log K / epsilon.",
    quantity="log-log slope of pseudo-regret in epsilon (gap 0.5, T = 10^4)",
    predicted=-1.0,
    tolerance=0.2,
    kind="two_sided",
    **slope_experiment(
        "randomized-prefix-softmax",
        "DPExperts-Stochastic-v0",
        eps_points((0.02, 0.04, 0.08, 0.16), _gap_env(0.5)),
        metric="per_round_best_pseudo_regret",
        learner=RPS_PAPER,
        **RPS_SEEDS,
    ),
    x_label="epsilon",
)


def _gap_shape(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return power_plus_constant(rows["randomized-prefix-softmax"], "per_round_best_pseudo_regret")


rps_gap = Claim(
    name="cc-one-over-gap",
    paper=PAPER,
    source="Thm 1, eq. (1): 800 log K / gap + (gap-independent terms)",
    statement="The regret is a log K / gap term plus terms that do not depend on the gap "
    "(1 + 16 log K / eta and, below epsilon = 1/4, the privacy term): regret = a / gap + b.",
    quantity="exponent p of the fit a gap^p + b (b free) of the pseudo-regret over the gap "
    "(epsilon = 1, T = 5 x 10^4)",
    predicted=-1.0,
    tolerance=0.25,
    kind="two_sided",
    sweeps=(
        Sweep(
            "randomized-prefix-softmax",
            RPS_PAPER,
            "DPExperts-Stochastic-v0",
            points_at((0.0125, 0.025, 0.05, 0.1), lambda g: _gap_env(g, 50_000), 1.0),
            metric="per_round_best_pseudo_regret",
            **RPS_SEEDS,
        ),
    ),
    analyse=_gap_shape,
    control=UNIFORM,
    x_label="gap",
    notes="A pure power law fitted to a / gap + b flattens as the gap grows (an earlier version "
    "measured -0.76 and was inconclusive for that reason); the theorem's own shape, with the "
    "constant b fitted, measures the exponent of the gap term. T = 5 x 10^4 is long enough for "
    "the smallest gap's log K / gap^2 exploration to finish. Uniform play's regret grows "
    "linearly in the gap (p = +1), so the control cannot pass.",
)


def claims(quick: bool = False) -> list[Claim]:
    """The paper's claims in report order (``quick``: the ``--quick`` sizes where they differ)."""
    del quick  # no claim of this paper differs in quick mode
    return [
        rps_horizon_free,
        rps_constant,
        rps_eps,
        rps_gap,
    ]
