"""The claims of Asi, Raman & Saha 2025, "Tracking the Best Expert Privately".

svt-restart and the Laplace tracker on shifting envs, the collapse threshold, the lazy/adaptive
separation and the adaptive lower bound (Table 1, Sect. 4.6, Sect. 5, Thm 3.6, 5.1, 5.2, B.1);
sizes and quantities in docs/reproduce.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claims import (
    Claim,
    Measurement,
    Point,
    Sweep,
    collapse_exponent,
    excess_loglog_slope,
    loglog_slope,
    mean_with_ci,
    spread_of_normalised_gain,
)
from dp_experts_env.evaluation.papers.common import (
    UNIFORM,
    eps_points,
    points_at,
    slope_experiment,
    slope_of,
)

__all__ = ["PAPER", "REPORT_ORDER", "claims"]

PAPER = 'Asi, Raman & Saha 2025, "Tracking the Best Expert Privately"'
#: Position of the paper in the report (claims.csv, report.md).
REPORT_ORDER = 1


def _shift(**kw: object) -> dict[str, object]:
    return {"n_experts": 10, "n_shifts": 4, "gap": 0.3, **kw}


def _thm36_bound(p: Point) -> tuple[float, float]:
    """Theorem 3.6's explicit bound (beta = 1/T, alpha omitted: it only adds) and T."""
    t, n = float(p.env_params["horizon"]), float(p.env_params["n_experts"])
    s = float(p.env_params["n_shifts"])
    log_term = math.log(n * t * t)  # log(NT / beta) with beta = 1/T
    eps = float(p.epsilon) if p.epsilon is not None else math.inf
    bound = 9 * math.sqrt(2 * s * t * log_term) + 2 * s * (16 * log_term / eps + 1)
    return bound, t


#: Horizons of the T-claims on the shifting env: from where Theorem 3.6's explicit bound is
#: below T (T ~ 1.6 x 10^4; quick mode's are below it: `vacuous`).
SHIFT_T = (20_000, 40_000, 80_000, 160_000)
SHIFT_T_QUICK = (2_500, 5_000, 10_000)

svt_vs_t = Claim(
    name="ars-shift-dr-vs-T",
    paper=PAPER,
    source="Table 1 (shifting stochastic row), Thm 3.6",
    statement="The private tracker's dynamic regret on a shifting stochastic sequence is "
    "O(sqrt(S T log N) + S log N / epsilon): at most sqrt(T) growth in T for fixed S.",
    quantity="log-log slope of dynamic regret in T (S = 4, gap 0.3, epsilon = 8)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **slope_experiment(
        "svt-restart",
        "DPExperts-Shift-v0",
        points_at(SHIFT_T, lambda t: _shift(horizon=int(t)), 8.0),
        points_at(SHIFT_T_QUICK, lambda t: _shift(horizon=int(t)), 8.0),
        metric="dynamic_regret",
    ),
    explicit_bound=_thm36_bound,
    x_label="T",
    notes="A shift detector with a fixed false-alarm level needs a number of rounds that "
    "depends on the gap, not on T, so its regret per shift is roughly constant in T.",
)

svt_vs_s = Claim(
    name="ars-shift-dr-vs-S",
    paper=PAPER,
    source="Table 1 (shifting stochastic row), Thm 3.6",
    statement="The dynamic regret is O(sqrt(S T log(NT)) + S log(NT) / epsilon); at epsilon = 8 "
    "the sqrt(S T log(NT)) term is the larger one by two orders of magnitude, so the regret "
    "grows at most like sqrt(S).",
    quantity="log-log slope of dynamic regret in S (T = 10^4, gap 0.3, epsilon = 8)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **slope_experiment(
        "svt-restart",
        "DPExperts-Shift-v0",
        points_at((1, 2, 4, 8), lambda s: _shift(horizon=10_000, n_shifts=int(s)), 8.0),
        metric="dynamic_regret",
    ),
    explicit_bound=_thm36_bound,
    untestable="Thm 3.6's explicit bound is above T at T = 10^4 for every S measured (below T "
    "at S = 8 only from T ~ 3.2 x 10^4), and uniform play's regret does not grow with S, so its "
    "control passes an upper bound on the S-exponent at any size",
    x_label="S (shifts)",
    notes="The prediction is the exponent of the term that dominates at these sizes (the "
    "S log(NT)/epsilon term is 130-530 times smaller than sqrt(S T log(NT)) at epsilon = 8). "
    "Theorem 3.6's explicit bound is above 0.58 T at every S measured (report: 'explicit bound "
    "/ trivial bound'), and uniform play's dynamic regret does not grow with S, so an upper "
    "bound on the exponent cannot be failed by a learner that does no better than uniform: the "
    "control's verdict says whether the test could have failed.",
)

nch_vs_t = Claim(
    name="ars-laplace-tracker-dr-vs-T",
    paper=PAPER,
    source="Table 1 (adaptive row), Thm 5.2 / B.2 (Alg. 3, the Laplace tracker)",
    statement="Algorithm 3 (noisy clipped Hedge) has dynamic regret "
    "O(N sqrt(S T) log^1.5(NT) / epsilon + N S log(NT) / epsilon) with the strict noise, "
    "against adaptive and hence also against the shifting stochastic sequences run here: at "
    "fixed epsilon at most sqrt(T) growth up to log factors.",
    quantity="log-log slope of dynamic regret in T (shifting stochastic, S = 4, gap 0.3, "
    "epsilon = 32)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **slope_experiment(
        "noisy-clipped-hedge",
        "DPExperts-Shift-v0",
        points_at(SHIFT_T, lambda t: _shift(horizon=int(t)), 32.0),
        points_at(SHIFT_T_QUICK, lambda t: _shift(horizon=int(t)), 32.0),
        metric="dynamic_regret",
    ),
    x_label="T",
    notes="This is the adaptive-row algorithm on a stochastic sequence, not the oblivious row "
    "of Table 1 (whose algorithm is the reduction of Thm 4.1, not in the suite); the tolerance "
    "0.1 absorbs the log^1.5 factor over this range of T.",
)

SVT_EPS = (2.0, 4.0, 8.0, 16.0, 32.0)  # below 2 the excess saturates (720 at 1 and 2)
_svt_env = _shift(horizon=10_000)


def _svt_excess(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return excess_loglog_slope(rows["svt-restart"], rows["svt-restart-eps-inf"], "dynamic_regret")


svt_eps = Claim(
    name="ars-shift-cost-vs-epsilon",
    paper=PAPER,
    source="Thm 3.6 (privacy term S log(NT) / epsilon)",
    statement="The private tracker's cost of privacy on a shifting stochastic sequence (regret "
    "above the same learner without noise) is the S log(NT) / epsilon term: it scales as "
    "1/epsilon.",
    quantity="log-log slope in epsilon of regret(epsilon) - regret(inf) (T = 10^4, S = 4, gap 0.3, "
    "epsilon = 2..32)",
    predicted=-1.0,
    tolerance=0.25,
    kind="two_sided",
    sweeps=(
        Sweep("svt-restart", "svt-restart", "DPExperts-Shift-v0", eps_points(SVT_EPS, _svt_env)),
        Sweep(
            "svt-restart-eps-inf",
            "svt-restart",
            "DPExperts-Shift-v0",
            (Point(math.inf, _svt_env, math.inf),),
            # The boundary's level at finite epsilon (beta / 4): at epsilon = inf it would take
            # all of beta, an epsilon-free difference that is not the 1/epsilon term.
            agent_params={"beta": 0.0125},
        ),
    ),
    analyse=_svt_excess,
    control=UNIFORM,
    # The noiseless run is the tested learner's too (its keywords differ, so the default roles
    # would leave svt-restart there under --agent).
    learner_sweeps=("svt-restart", "svt-restart-eps-inf"),
    x_label="epsilon",
    notes="The detector's and the selections' noise scale as 1/epsilon; the excess over the "
    "noiseless run isolates that term from the sqrt(S T log(NT)) one. The noiseless run takes "
    "beta = 0.0125, the level its boundary has at finite epsilon (beta / 4), so that the "
    "excess holds the noise terms only.",
)


COLLAPSE_T = (1_000, 10_000, 100_000)
COLLAPSE_T_QUICK = (2_500, 10_000)
COLLAPSE_X = (3.0, 10.0, 30.0, 100.0)


def _collapse_sweeps(horizons: tuple[int, ...], quick: bool) -> tuple[Sweep, ...]:
    out = []
    for t in horizons:
        env = _shift(horizon=t)
        scale = 10 * math.sqrt(4 / t)  # N sqrt(S / T)
        pts = tuple(Point(x, env, x * scale) for x in COLLAPSE_X)
        ref = (Point(0.0, env, None),)
        sizes = {"seeds": 16, "quick_seeds": 8}
        out += [
            Sweep(f"nch-T{t}", "noisy-clipped-hedge", "DPExperts-Shift-v0", pts, pts, **sizes),
            Sweep(f"uniform-T{t}", "uniform", "DPExperts-Shift-v0", ref, ref, **sizes),
            Sweep(f"fixed-share-T{t}", "fixed-share", "DPExperts-Shift-v0", ref, ref, **sizes),
        ]
    return tuple(out)


#: Least rise of the mean normalised gain across x for a curve to cross the transition.
COLLAPSE_MIN_RISE = 0.5


def _collapse(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    ts = sorted({int(k.rpartition("T")[2]) for k in rows})
    m = spread_of_normalised_gain(
        {f"T={t}": rows[f"nch-T{t}"] for t in ts},
        {f"T={t}": rows[f"uniform-T{t}"] for t in ts},
        {f"T={t}": rows[f"fixed-share-T{t}"] for t in ts},
        "dynamic_regret",
    )
    rises = []
    for t in ts:
        low = rows[f"uniform-T{t}"]["dynamic_regret"].mean()
        high = rows[f"fixed-share-T{t}"]["dynamic_regret"].mean()
        means = rows[f"nch-T{t}"].groupby("x")["dynamic_regret"].mean().sort_index()
        gain = (low - means) / (low - high)
        rises.append(float(gain.iloc[-1] - gain.iloc[0]))
    if min(rises) < COLLAPSE_MIN_RISE:
        # Flat curves coincide trivially: there is no transition to line up.
        return Measurement(
            math.nan,
            math.nan,
            math.nan,
            f"the gain rises by {min(rises):.2f} < {COLLAPSE_MIN_RISE} across x at some T: no "
            f"transition to collapse; {m.detail}",
        )
    return m


def _collapse_figure(rows: Mapping[str, pd.DataFrame], ax: object) -> str:
    """Normalised gain against x, one curve per T: the collapse the claim measures."""
    for t in sorted({int(k.rpartition("T")[2]) for k in rows}):
        low = rows[f"uniform-T{t}"]["dynamic_regret"].mean()
        high = rows[f"fixed-share-T{t}"]["dynamic_regret"].mean()
        grouped = rows[f"nch-T{t}"].groupby("x")["dynamic_regret"]
        gain = (low - grouped.mean()) / (low - high)
        se = grouped.std(ddof=1) / np.sqrt(grouped.count()) / abs(low - high)
        ax.errorbar(  # type: ignore[attr-defined]
            gain.index,
            gain.values,
            yerr=se.fillna(0).values,
            marker="o",
            ms=3,
            capsize=2,
            label=f"T = {t:,}",
        )
    ax.axhline(0.0, ls=":", lw=1, color="0.5")  # type: ignore[attr-defined]
    ax.axhline(1.0, ls=":", lw=1, color="0.5")  # type: ignore[attr-defined]
    return "(R_uniform - R) / (R_uniform - R_fixed-share)"


def _collapse_claim(quick_horizons: bool) -> Claim:
    horizons = COLLAPSE_T_QUICK if quick_horizons else COLLAPSE_T
    return Claim(
        name="ars-threshold-collapse",
        paper=PAPER,
        source="Sect. 4.6 regimes; Thm 5.1 (threshold epsilon ~ sqrt(S/T))",
        statement="The privacy transition of tracking happens at epsilon ~ sqrt(S/T): plotted "
        "against x = epsilon / (N sqrt(S/T)) (N for the strict noise of the L1 release), the "
        "normalised gain (R_uniform - R) / (R_uniform - R_fixed-share) is the same curve for "
        "every T.",
        quantity="largest spread across T of the normalised gain at equal x",
        predicted=0.0,
        tolerance=0.25,
        kind="at_most",
        sweeps=_collapse_sweeps(horizons, quick_horizons),
        analyse=_collapse,
        figure=_collapse_figure,
        control=UNIFORM,
        learner_sweeps=tuple(f"nch-T{t}" for t in horizons),
        learning_at="largest",
        x_label="x = epsilon / (N sqrt(S/T))",
        notes="The learner is noisy-clipped-hedge (the Laplace tracker, strict noise). The "
        "spread statistic is a maximum over x, so its bootstrap interval is conservative.",
    )


#: One T, several S, x on a factor-2 grid: dropping S moves the curves by whole grid steps.
COLLAPSE_S = (1, 4, 16)
COLLAPSE_S_T = 10_000
COLLAPSE_S_X = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)


def _collapse_s_sweeps() -> tuple[Sweep, ...]:
    out = []
    for s in COLLAPSE_S:
        env = _shift(horizon=COLLAPSE_S_T, n_shifts=s)
        scale = 10 * math.sqrt(s / COLLAPSE_S_T)  # N sqrt(S / T)
        pts = tuple(Point(x, env, x * scale) for x in COLLAPSE_S_X)
        ref = (Point(0.0, env, None),)
        out += [
            Sweep(f"nch-S{s}", "noisy-clipped-hedge", "DPExperts-Shift-v0", pts),
            Sweep(f"uniform-S{s}", "uniform", "DPExperts-Shift-v0", ref),
            Sweep(f"fixed-share-S{s}", "fixed-share", "DPExperts-Shift-v0", ref),
        ]
    return tuple(out)


def _collapse_s(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return collapse_exponent(
        {float(s): rows[f"nch-S{s}"] for s in COLLAPSE_S},
        {float(s): rows[f"uniform-S{s}"] for s in COLLAPSE_S},
        {float(s): rows[f"fixed-share-S{s}"] for s in COLLAPSE_S},
        "dynamic_regret",
        predicted=0.5,
        max_spread=0.25,
        min_rise=COLLAPSE_MIN_RISE,
    )


def _collapse_s_figure(rows: Mapping[str, pd.DataFrame], ax: object) -> str:
    """Normalised gain against x = epsilon / (N sqrt(S/T)), one curve per S."""
    for s in COLLAPSE_S:
        low = rows[f"uniform-S{s}"]["dynamic_regret"].mean()
        high = rows[f"fixed-share-S{s}"]["dynamic_regret"].mean()
        grouped = rows[f"nch-S{s}"].groupby("x")["dynamic_regret"]
        gain = (low - grouped.mean()) / (low - high)
        se = grouped.std(ddof=1) / np.sqrt(grouped.count()) / abs(low - high)
        ax.errorbar(  # type: ignore[attr-defined]
            gain.index, gain.values, yerr=se.fillna(0).values, marker="o", ms=3, capsize=2,
            label=f"S = {s}",
        )  # fmt: skip
    ax.axhline(0.0, ls=":", lw=1, color="0.5")  # type: ignore[attr-defined]
    ax.axhline(1.0, ls=":", lw=1, color="0.5")  # type: ignore[attr-defined]
    return "(R_uniform - R) / (R_uniform - R_fixed-share)"


collapse_s = Claim(
    name="ars-threshold-S-dependence",
    paper=PAPER,
    source="Sect. 4.6 regimes; Thm 5.1 (threshold epsilon ~ sqrt(S/T))",
    statement="The privacy threshold of tracking grows with the number of shifts as sqrt(S): "
    "the normalised gain (R_uniform - R) / (R_uniform - R_fixed-share) of curves at different S "
    "collapses when plotted against epsilon / (N sqrt(S/T)), and does not when S is dropped "
    "from the abscissa (epsilon / (N sqrt(1/T))).",
    quantity="exponent b of S in the abscissa epsilon / (N S^b / sqrt(T)) that minimises the "
    "largest spread across S = 1, 4, 16 of the normalised gain (T = 10^4, N = 10, gap 0.3); "
    "b = 1/2 is the theorem, b = 0 drops S",
    predicted=0.5,
    tolerance=0.25,
    kind="two_sided",
    sweeps=_collapse_s_sweeps(),
    analyse=_collapse_s,
    figure=_collapse_s_figure,
    control=UNIFORM,
    learner_sweeps=tuple(f"nch-S{s}" for s in COLLAPSE_S),
    learning_at="largest",
    x_label="x = epsilon / (N sqrt(S/T))",
    notes="The learner is noisy-clipped-hedge (the Laplace tracker, strict noise), as in "
    "ars-threshold-collapse, which varies T at fixed S. The detail gives the spread across S "
    "with S in the abscissa (b = 1/2) and with S dropped (b = 0), so both halves of the "
    "statement are read off one row; the band 0.5 +- 0.25 excludes both b = 0 and b = 1 "
    "(a threshold linear in S). A curve whose gain does not rise by 0.5 across x (uniform in "
    "the learner's role: gain 0) has no transition to line up: no fit, never `holds`.",
)


ADAPTIVE_T = (1_000, 2_000, 4_000, 8_000, 16_000)
ADAPTIVE_T_QUICK = (1_000, 2_000, 4_000)

#: The oblivious twins of the lazy-sampler claim: ftl_trap (Follow-the-Leader's worst case) and a
#: stationary sequence (one fixed best expert, loss 0, the others 1), N = 10 as on punish_last.
LAZY_TWINS = {
    "twin-ftl_trap": {"family": "ftl_trap"},
    "twin-stationary": {"family": "switching_deterministic", "n_shifts": 0},
}
#: Sublinear on a twin: the upper end of the static regret per round's interval at the largest
#: T below this, a fifth of Follow-the-Leader's 1/2 on ftl_trap (docs/reproduce.md,
#: "Gates an outside learner cannot game").
TWIN_RATE = 0.1


def _twin_points(values: tuple[int, ...], family: Mapping[str, object]) -> tuple[Point, ...]:
    return points_at(values, lambda t: {**family, "horizon": int(t), "n_experts": 10}, 8.0)


def _lazy_twins() -> tuple[Sweep, ...]:
    return tuple(
        Sweep(
            key,
            "private-lazy-hedge",
            "DPExperts-Oblivious-v0",
            _twin_points(ADAPTIVE_T, family),
            _twin_points(ADAPTIVE_T_QUICK, family),
            metric="static_regret",
        )
        for key, family in LAZY_TWINS.items()
    )


def _lazy_specific(rows: Mapping[str, pd.DataFrame]) -> str:
    """Empty when the learner is sublinear on every oblivious twin, else the twins that failed."""
    failed = []
    for key in LAZY_TWINS:
        frame = rows[key]
        last = frame[frame["x"] == frame["x"].max()].copy()
        last["per_round"] = last["static_regret"] / last["x"]
        m = mean_with_ci(last, "per_round")
        if not m.ci_high <= TWIN_RATE:
            failed.append(
                f"{key}: {m.value:.3g} [{m.ci_low:.3g}, {m.ci_high:.3g}] per round at "
                f"T = {last['x'].max():g}"
            )
    if not failed:
        return ""
    return (
        f"linear on the oblivious twin(s) too (static regret per round > {TWIN_RATE:g}): "
        + "; ".join(failed)
        + ": the growth on punish_last is not the adaptive adversary's doing"
    )


lazy_adaptive = Claim(
    name="ars-lazy-linear-on-adaptive",
    paper=PAPER,
    source="Sect. 5 (oblivious/adaptive separation); Thm B.1's converse",
    statement="A learner whose play depends on its own past draws (a lazy sampler) can be "
    "forced into linear regret by an adaptive adversary that punishes its last action.",
    quantity="log-log slope of static regret in T on punish_last (epsilon = 8)",
    predicted=1.0,
    tolerance=0.1,
    kind="at_least",
    sweeps=(
        Sweep(
            "private-lazy-hedge",
            "private-lazy-hedge",
            "DPExperts-Adaptive-v0",
            points_at(ADAPTIVE_T, lambda t: {"horizon": int(t)}, 8.0),
            points_at(ADAPTIVE_T_QUICK, lambda t: {"horizon": int(t)}, 8.0),
            metric="static_regret",
        ),
        *_lazy_twins(),
    ),
    analyse=slope_of("private-lazy-hedge", "static_regret"),
    control=UNIFORM,
    specific=_lazy_specific,
    no_privacy_gate="the statement is about lazy sampling (play depending on the learner's own "
    "past draws), not about epsilon: a non-private lazy sampler is a legitimate subject",
    learning_fraction=None,  # the claim is that this learner does NOT learn here
    x_label="T",
    notes="A lower bound: the learner is expected to stay at or above the control's level, so "
    "no learning gate applies; the control (uniform play, which does not depend on its own "
    "past draws) must not show the linear growth, or the construction would be doing nothing "
    "specific to lazy samplers. Specificity: the same learner must be sublinear (static regret "
    f"per round <= {TWIN_RATE:g} at the largest T) on two oblivious twins, ftl_trap and a "
    "stationary sequence; a learner linear there too (Follow-the-Leader, a constant expert) is "
    "`not specific`.",
)


def _per_round_at_largest(key: str, metric: str) -> object:
    def analyse(rows: Mapping[str, pd.DataFrame]) -> Measurement:
        frame = rows[key]
        last = frame[frame["x"] == frame["x"].max()].copy()
        last["per_round"] = last[metric] / last["x"]
        m = mean_with_ci(last, "per_round")
        return replace(m, detail=f"{m.detail} at T = {last['x'].max():g}")  # keeps se, df

    return analyse


hedge_adaptive = Claim(
    name="ars-hedge-sublinear-on-adaptive",
    paper=PAPER,
    source="Thm B.1 (folklore): plays that depend on past losses only",
    statement="A learner whose law at t depends on past losses only (Hedge) has the same regret "
    "against adaptive adversaries as against oblivious ones, sublinear on punish_last, where "
    "a lazy sampler's regret per round stays near 1/2.",
    quantity="Hedge's static regret per round at the largest T on punish_last",
    predicted=0.05,
    tolerance=0.0,
    kind="at_most",
    sweeps=(
        Sweep(
            "hedge",
            "hedge",
            "DPExperts-Adaptive-v0",
            points_at(ADAPTIVE_T, lambda t: {"horizon": int(t)}),
            points_at(ADAPTIVE_T_QUICK, lambda t: {"horizon": int(t)}),
            metric="static_regret",
        ),
    ),
    analyse=_per_round_at_largest("hedge", "static_regret"),
    control=UNIFORM,
    learning_fraction=None,  # the claim is an absence of harm, not learning beyond uniform
    untestable="uniform play is sublinear on punish_last too, so the control passes at every "
    "size: the claim is testable only as the pair with ars-lazy-linear-on-adaptive",
    x_label="T",
    notes="Hedge's regret here is tens of rounds and of either sign, so a log-log slope would "
    "measure noise; the per-round regret at the largest T is the quantity that separates it "
    "from the lazy learner (about 0.45 per round in ars-lazy-linear-on-adaptive). Uniform play "
    "is also sublinear on punish_last (its plays do not depend on its past draws either), so "
    "the control passes this test and the verdict is `vacuous`: on its own this claim cannot "
    "fail for a learner that ignores its losses. The oblivious/adaptive separation is the pair "
    "of this claim and ars-lazy-linear-on-adaptive, whose control (uniform) does not show the "
    "linear growth.",
)


LOWER_T = (500, 1_000, 2_000, 4_000, 8_000)
LOWER_T_QUICK = (500, 1_000, 2_000)
LOWER_S = 3
LOWER_X = 0.5  # epsilon = LOWER_X sqrt(S / T): below the threshold


def _block_restart(t: float) -> dict[str, object]:
    """Theorem 5.1's construction at T = t: S + 1 blocks, N = 2T / (S + 1) experts."""
    return {
        "family": "block_restart",
        "horizon": int(t),
        "n_shifts": LOWER_S,
        "n_experts": 2 * int(t) // (LOWER_S + 1),
    }


def _below_threshold(values: tuple[int, ...]) -> tuple[Point, ...]:
    return tuple(
        Point(float(t), _block_restart(t), LOWER_X * math.sqrt(LOWER_S / t)) for t in values
    )


def _stationary(t: float) -> dict[str, object]:
    """The construction's sizes on a stationary env: one fixed best expert (loss 0, others 1)."""
    return {
        "family": "switching_deterministic",
        "horizon": int(t),
        "n_shifts": 0,
        "n_experts": 2 * int(t) // (LOWER_S + 1),
    }


def _stationary_below(values: tuple[int, ...]) -> tuple[Point, ...]:
    return tuple(Point(float(t), _stationary(t), LOWER_X * math.sqrt(LOWER_S / t)) for t in values)


#: How much faster (in slope) the learner must grow on the construction than on a stationary
#: env at the same epsilon and N (linear, ~1, against sublinear, <= ~0.6).
LOWER_CONTRAST = 0.3


def _lower_bound_specific(rows: Mapping[str, pd.DataFrame]) -> str:
    """Empty when the same learner at epsilon = inf is sublinear on the construction, else why.

    "Every DP learner is linear" is specific to privacy only when the learner without its noise
    is not linear on the same adversary (slope interval's upper end <= 1 - LOWER_CONTRAST).
    """
    free = loglog_slope(rows["noisy-clipped-hedge-eps-inf"], "dynamic_regret")
    if math.isfinite(free.ci_high) and free.ci_high <= 1 - LOWER_CONTRAST:
        return ""
    return (
        f"the epsilon = inf twin on the construction grows with slope {free.value:.3g} "
        f"[{free.ci_low:.3g}, {free.ci_high:.3g}], not below {1 - LOWER_CONTRAST:g}: the learner "
        "is linear without privacy too, so the linear growth is not privacy's doing"
    )


def _lower_bound_slopes(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    """Slope on the construction minus on the stationary env (same learner and epsilon)."""
    private = loglog_slope(rows["noisy-clipped-hedge"], "dynamic_regret")
    calm = loglog_slope(rows["nch-stationary"], "dynamic_regret")
    free = loglog_slope(rows["noisy-clipped-hedge-eps-inf"], "dynamic_regret")
    text = (
        f"slope on the construction {private.value:.3g} [{private.ci_low:.3g}, "
        f"{private.ci_high:.3g}] ({private.detail}); on the stationary env at the same epsilon "
        f"and N {calm.value:.3g} [{calm.ci_low:.3g}, {calm.ci_high:.3g}] ({calm.detail}); at "
        f"epsilon = inf on the construction {free.value:.3g} [{free.ci_low:.3g}, "
        f"{free.ci_high:.3g}]"
    )
    if not (math.isfinite(private.value) and math.isfinite(calm.value)):
        return Measurement(math.nan, math.nan, math.nan, text)
    # Independent bootstraps: the difference's conservative interval.
    return Measurement(
        private.value - calm.value,
        private.ci_low - calm.ci_high,
        private.ci_high - calm.ci_low,
        text,
    )


_LOWER_SIZES = {"metric": "dynamic_regret", "seeds": 8, "quick_seeds": 4}

lower_bound = Claim(
    name="ars-adaptive-lower-bound-linear",
    paper=PAPER,
    source="Thm 5.1 (dynamic regret lower bound against adaptive adversaries)",
    statement="Against an adaptive adversary every (epsilon, delta)-DP learner has dynamic "
    "regret Omega(min(T, S / (epsilon log(T/(S+1)))^2)): linear in T once epsilon is below "
    "about sqrt(S/T), whatever the learner achieves on easier sequences at that epsilon.",
    quantity="slope in T of noisy-clipped-hedge's dynamic regret on the block-restart "
    "construction (S = 3, N = 2T/(S+1), epsilon = 0.5 sqrt(S/T)) minus its slope on a "
    "stationary env with the same N and epsilon (one fixed best expert)",
    predicted=LOWER_CONTRAST,
    tolerance=0.0,
    kind="at_least",
    sweeps=(
        Sweep(
            "nch-stationary",
            "noisy-clipped-hedge",
            "DPExperts-Oblivious-v0",
            _stationary_below(LOWER_T),
            _stationary_below(LOWER_T_QUICK),
            **_LOWER_SIZES,
        ),
        Sweep(
            "noisy-clipped-hedge",
            "noisy-clipped-hedge",
            "DPExperts-Adaptive-v0",
            _below_threshold(LOWER_T),
            _below_threshold(LOWER_T_QUICK),
            **_LOWER_SIZES,
        ),
        Sweep(
            "noisy-clipped-hedge-eps-inf",
            "noisy-clipped-hedge",
            "DPExperts-Adaptive-v0",
            points_at(LOWER_T, _block_restart, math.inf),
            points_at(LOWER_T_QUICK, _block_restart, math.inf),
            **_LOWER_SIZES,
        ),
    ),
    analyse=_lower_bound_slopes,
    control=UNIFORM,
    specific=_lower_bound_specific,
    untestable="no learner of the suite learns the stationary env at epsilon = 0.5 sqrt(S/T) with "
    "N = T/2 experts at T <= 8,000; the regime needs a learner whose regret there is below 0.8 x "
    "uniform play's (for noisy-clipped-hedge, whose noise grows with N, far larger T)",
    # The learning gate reads the first, the stationary env (docs/reproduce.md, "Verdicts").
    learner_sweeps=("nch-stationary", "noisy-clipped-hedge", "noisy-clipped-hedge-eps-inf"),
    x_label="T",
    notes="A lower bound holds for every private learner, so running one learner cannot confirm "
    "it; what this checks is the construction: the same learner, at the same epsilon and "
    "number of experts, must grow linearly on it while growing sublinearly on a stationary "
    "env (slope difference >= 0.3), and it must learn on the stationary env (regret below "
    "0.8 x uniform play's there) for the claim to be judged at all; uniform play (slope 1 on "
    "both, difference 0) cannot pass. Each block runs the sign-estimation adversary of the "
    "static lower bound (Asi, Feldman, Koren & Talwar 2023, Thm 9) with this suite's default "
    "fingerprint code; N = 2T/(S+1) is the theorem's condition. At these sizes no learner of "
    "the suite learns the stationary env at epsilon = 0.5 sqrt(S/T) with N = T/2 experts "
    "(noisy-clipped-hedge's strict noise grows with N; private-shrinking-dartboard and "
    "svt-restart lose 0.88-1.00 per round there too, measured at T = 500..8,000), so the "
    "verdict is `burn-in`: the theorem's regime is where nothing learns, and the experiment "
    "cannot tell the construction's effect from the learner's epsilon. The epsilon = inf "
    "curve (sublinear on the same adversary) is in the figure and the detail.",
)


def claims(quick: bool = False) -> list[Claim]:
    """The paper's claims in report order (``quick``: the ``--quick`` sizes where they differ)."""
    return [
        svt_vs_t,
        svt_vs_s,
        svt_eps,
        nch_vs_t,
        _collapse_claim(quick),
        collapse_s,
        lazy_adaptive,
        hedge_adaptive,
        lower_bound,
    ]
