"""The claims of "Faster Rates for Private Adversarial Bandits" (2025).

The central sqrt(KT/epsilon) rate and its separation from local DP, LDP-EXP4 and private batched
EXP4 with advice (Thm 1, 9, 10, Cor. 2); sizes and quantities in docs/reproduce.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from dp_experts_env.evaluation.claims import (
    Claim,
    Control,
    Measurement,
    Point,
    Sweep,
    largest_ratio_over_x,
)
from dp_experts_env.evaluation.papers.common import (
    UNIFORM,
    eps_points,
    points_at,
    slope_experiment,
    slope_of,
)

__all__ = ["PAPER", "REPORT_ORDER", "claims"]

PAPER = '"Faster Rates for Private Adversarial Bandits" (2025)'
#: Position of the paper in the report (claims.csv, report.md).
REPORT_ORDER = 5


def _sqrt_points(k: int, pairs: tuple[tuple[int, float], ...]) -> tuple[Point, ...]:
    """Points (T, epsilon) on the gap 4 sqrt(K / (epsilon T)); x = sqrt(K T / epsilon)."""
    out = []
    for t, eps in pairs:
        gap = min(0.5, 4 * math.sqrt(k / (eps * t)))
        x = math.sqrt(k * t / eps)
        out.append(Point(x, {"n_arms": k, "horizon": t, "gap": gap}, eps))
    return tuple(out)


_SQRT_PAIRS = ((4_000, 1.0), (4_000, 0.25), (16_000, 0.25), (16_000, 0.0625), (64_000, 0.0625))
_SQRT_PAIRS_QUICK = ((4_000, 1.0), (4_000, 0.25), (16_000, 0.25))


def _central_ratio(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return largest_ratio_over_x(
        rows["private-batched-bandit"], rows["uniform-reference"], "static_regret"
    )


htinf_sqrt = Claim(
    name="frpab-central-sqrt-KT-over-eps",
    paper=PAPER,
    source="Thm 1 / Cor. 2 (Alg. 1 with HTINF)",
    statement="The batched private bandit's regret is O(sqrt(K T / epsilon)). On the bandit "
    "whose gap is 4 sqrt(K / (epsilon T)) uniform play's regret is itself proportional to "
    "sqrt(K T / epsilon), so the rate is checked as a constant fraction of it: the learner's "
    "regret stays below 0.8 x uniform's at every (T, epsilon).",
    quantity="largest over the points of R / R_uniform (same envs and seeds; K = 5)",
    predicted=0.8,
    tolerance=0.0,
    kind="at_most",
    sweeps=(
        Sweep(
            "private-batched-bandit",
            "private-batched-bandit",
            "DPExperts-Bandit-v0",
            _sqrt_points(5, _SQRT_PAIRS),
            _sqrt_points(5, _SQRT_PAIRS_QUICK),
            metric="static_regret",
        ),
        Sweep(
            "uniform-reference",
            "uniform",
            "DPExperts-Bandit-v0",
            _sqrt_points(5, _SQRT_PAIRS),
            _sqrt_points(5, _SQRT_PAIRS_QUICK),
            metric="static_regret",
        ),
    ),
    analyse=_central_ratio,
    control=UNIFORM,
    learner_sweeps=("private-batched-bandit",),
    x_label="sqrt(K T / epsilon)",
    notes="The log-log slope of the learner's regret in sqrt(KT/epsilon) is about 1, but so is "
    "uniform play's (0.99 in an earlier version of this claim, which therefore could not fail); "
    "the ratio to uniform play on the same loss streams is the part of the rate the learner "
    "earns. The points' ratios are in the detail; a flat ratio below 0.8 is the sqrt(KT/eps) "
    "rate with a constant below uniform play's.",
)

# The separation's path: local DP linear (epsilon sqrt(T) < 1) and the gap at its cap (epsilon T
# >= 64 K = 320); docs/reproduce.md, "The local-DP headline of paper 004".
SEPARATION_EPS_T = 320.0
SEPARATION_T = (128_000, 256_000)  # epsilon sqrt(T) = 0.89, 0.63
# epsilon sqrt(T) = 5.1, 2.5: outside the separation's regime, so quick mode cannot settle it
SEPARATION_T_QUICK = (4_000, 16_000)


def _separation_points(horizons: tuple[int, ...], k: int = 5) -> tuple[Point, ...]:
    """Points (T, epsilon = SEPARATION_EPS_T / T) on the gap 4 sqrt(K / (epsilon T)), capped."""
    out = []
    for t in horizons:
        eps = SEPARATION_EPS_T / t
        gap = min(0.5, 4 * math.sqrt(k / (eps * t)))
        out.append(Point(float(t), {"n_arms": k, "horizon": int(t), "gap": gap}, eps))
    return tuple(out)


def _separation_ratio(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return largest_ratio_over_x(
        rows["private-batched-bandit"], rows["uniform-reference"], "static_regret"
    )


central_vs_local = Claim(
    name="frpab-central-vs-local",
    paper=PAPER,
    source="Cor. 2 and the central-vs-local separation after it (Alg. 1 with HTINF)",
    statement="Central DP is not local DP for adversarial bandits: the batched learner's regret "
    "is O(sqrt(K T / epsilon)) for every epsilon = omega(1/T), while a locally private learner "
    "(every loss released with Laplace(1/epsilon)) must have Omega(T) regret once "
    "epsilon < 1/sqrt(T). Where epsilon sqrt(T) < 1 the batched learner stays a constant "
    "fraction (below 0.8) of uniform play's regret, which is itself c sqrt(K T / epsilon) on "
    "this bandit; the same learner with tau = 1 (local DP) does not.",
    quantity="largest over T of private-batched-bandit's regret / uniform's (same envs and "
    "seeds; K = 5, epsilon = 320 / T, gap 0.5, epsilon sqrt(T) < 1 at every full-run point)",
    predicted=0.8,
    tolerance=0.0,
    kind="at_most",
    sweeps=(
        Sweep(
            "private-batched-bandit",
            "private-batched-bandit",
            "DPExperts-Bandit-v0",
            _separation_points(SEPARATION_T),
            _separation_points(SEPARATION_T_QUICK),
            metric="static_regret",
            seeds=8,
            quick_seeds=4,
        ),
        Sweep(
            "uniform-reference",
            "uniform",
            "DPExperts-Bandit-v0",
            _separation_points(SEPARATION_T),
            _separation_points(SEPARATION_T_QUICK),
            metric="static_regret",
            seeds=8,
            quick_seeds=4,
        ),
    ),
    analyse=_separation_ratio,
    control=Control(
        "private-batched-bandit",
        {"tau": 1},
        "the same learner with batches of one round: Laplace(1/epsilon) on every loss, a "
        "locally private learner, which must be linear where epsilon < 1/sqrt(T)",
    ),
    # The quantity is already relative to uniform play (the reference sweep); the control is
    # the local learner, which the batched one need not beat by a fixed fraction to be learning.
    learning_fraction=None,
    learner_sweeps=("private-batched-bandit",),
    x_label="T (epsilon = 320 / T)",
    notes="A negative control, not a no-learning one: tau = 1 is the same algorithm with the "
    "noise of local DP. The claim holds only where that control's ratio is not below 0.8: at "
    "epsilon sqrt(T) > 1 (quick mode, and T <= 6.4 x 10^4 when the claim was designed: tau = 1 "
    "at 0.79, 0.83, 0.85 x uniform's regret along epsilon T = 320) the local learner is not yet "
    "forced to be linear and both may pass, which the verdict reports as vacuous. Uniform's "
    "regret is linear in T on this path (sqrt(K T / epsilon) = T sqrt(K / 320)), so the "
    "separation is in the constant: the batched learner's fraction of uniform's regret stays "
    "flat, the local learner's rises toward 1.",
)

ldp_eps = Claim(
    name="frpab-local-dp-one-over-eps",
    paper=PAPER,
    source="Thm 9 (local DP: O(sqrt(T K log N) log(KT) / epsilon))",
    statement="Locally private EXP4's regret is bounded by C sqrt(T K log N) log(KT) / epsilon: "
    "as epsilon falls it grows no faster than 1/epsilon.",
    quantity="log-log slope of static regret in epsilon (ldp-exp4, K = 5, T = 16,000, gap 0.5)",
    predicted=-1.0,
    tolerance=0.0,
    kind="at_least",
    **slope_experiment(
        "ldp-exp4",
        "DPExperts-Bandit-v0",
        eps_points((1.0, 2.0, 4.0, 8.0), {"n_arms": 5, "horizon": 16_000, "gap": 0.5}),
        metric="static_regret",
    ),
    x_label="epsilon",
    notes="The calibrated learner's regret grows more slowly than the bound's 1/epsilon in "
    "this range (about epsilon^-0.45): its exploration term sqrt(K lam log(KT)) dominates "
    "until lam = 1/epsilon exceeds log(KT)/2, i.e. epsilon < ~0.2 here, where the learner "
    "is already at uniform play. The central learner's sqrt(KT/epsilon) scaling is "
    "frpab-central-sqrt-KT-over-eps.",
)


ADVICE_T_QUICK = (1_000, 4_000, 16_000)
# Full-run horizons per learner: from where it left uniform play's level to what its per-round
# cost allows (docs/reproduce.md, "Measured: the longer horizons ..." and "... bandit block play").
LDP_ADVICE_T = (32_000, 64_000, 128_000, 256_000)
BATCHED_ADVICE_T = (256_000, 512_000, 1_024_000, 2_048_000)


def _advice_claim(
    name: str,
    agent: str,
    source: str,
    rate: str,
    predicted: float,
    horizons: tuple[int, ...],
    agent_params: Mapping[str, object] | None = None,
    seeds: int = 16,
) -> Claim:
    return Claim(
        name=name,
        paper=PAPER,
        source=source,
        statement=f"With expert advice (N experts, K arms) the learner's regret against the "
        f"best fixed expert is O~({rate}) at fixed epsilon: growth in T at most "
        f"T^{predicted:.3g}.",
        quantity="log-log slope in T of the static pseudo-regret (regret against the best fixed "
        "expert in expectation) on the planted-expert env (N = 20, K = 5, epsilon = 1)",
        predicted=predicted,
        tolerance=0.1,
        kind="at_most",
        sweeps=(
            Sweep(
                agent,
                agent,
                "DPExperts-BanditAdvice-v0",
                points_at(horizons, lambda t: {"horizon": int(t)}, 1.0),
                points_at(ADVICE_T_QUICK, lambda t: {"horizon": int(t)}, 1.0),
                agent_params=dict(agent_params or {}),
                metric="static_pseudo_regret",
                seeds=seeds,
            ),
        ),
        analyse=slope_of(agent, "static_pseudo_regret"),
        control=UNIFORM,
        x_label="T",
        notes="The tolerance 0.1 absorbs the bounds' log factors over this range of T. A "
        "measured exponent above the band means the learner is still in its burn-in at these "
        "horizons (near uniform play, its regret nearly linear): the bound's constants and log "
        "factors make it exceed the trivial regret there, so the asymptotic rate is not "
        "confirmed at this scale rather than contradicted.",
    )


ldp_advice = _advice_claim(
    "frpab-advice-ldp-exp4-vs-T",
    "ldp-exp4",
    "Thm 9 (LDP-EXP4)",
    "sqrt(T K log N)/epsilon",
    0.5,
    LDP_ADVICE_T,
)
batched_advice = _advice_claim(
    "frpab-advice-batched-exp4-vs-T",
    "private-batched-exp4",
    "Thm 10 (private batched EXP4)",
    "N^(1/6) K^(1/2) T^(2/3) / epsilon^(1/3)",
    2 / 3,
    BATCHED_ADVICE_T,
    {"release": "estimates"},  # Thm 10 is about Alg. 2's per-expert release, not the default
    # 12 seeds: the full run's budget at three base seeds (docs/reproduce.md, "Full-run budget").
    seeds=12,
)


def claims(quick: bool = False) -> list[Claim]:
    """The paper's claims in report order (``quick``: the ``--quick`` sizes where they differ)."""
    del quick  # no claim of this paper differs in quick mode
    return [
        htinf_sqrt,
        central_vs_local,
        ldp_eps,
        ldp_advice,
        batched_advice,
    ]
