"""The registry of the papers' claims that ``dp-experts reproduce`` checks.

None of the five papers has an experiment: what they claim are rates (upper bounds, lower
bounds, dependences on T, S, epsilon, the gap). Each entry turns one of them into a measurable
quantity on this suite's environments (an exponent, a ratio, a spread) with a tolerance and a
direction. Upper bounds are one-sided (``at_most``): a learner may do better than its bound.
Where the rate is the learner's exact behaviour on a construction built for it (a horizon-free
bound, a 1/epsilon dependence, the sqrt(KT/epsilon) scaling on its matching env) the claim is
two-sided. The choices of sizes and of the measured quantity are documented in docs/reproduce.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claims import (
    Claim,
    Control,
    Measurement,
    Point,
    Sweep,
    collapse_exponent,
    excess_loglog_slope,
    largest_ratio_over_x,
    loglog_slope,
    mean_with_ci,
    power_plus_constant,
    spread_of_normalised_gain,
    worst_case_loglog_slope,
)

__all__ = ["CLAIMS", "claim_names", "get_claims"]

ARS = 'Asi, Raman & Saha 2025, "Tracking the Best Expert Privately"'
AKST = 'Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy OCO"'
AFKT = 'Asi, Feldman, Koren & Talwar 2023, "Private Online Prediction from Experts"'
CC = 'Cesari & Colomboni 2026, "Optimal Gap-Dependent Regret for Private Stochastic DTOL"'
FRPAB = '"Faster Rates for Private Adversarial Bandits" (2025)'

#: The no-learning controls (run in the learner's role, same envs and seeds).
UNIFORM = Control("uniform", {}, "a uniformly random expert (arm) every round: it learns nothing")
CENTRE = Control(
    "ogd", {"step": 0.0}, "OGD with step 0: the centre of the body every round, learns nothing"
)


def _slope_of(key: str, metric: str) -> object:
    def analyse(rows: Mapping[str, pd.DataFrame]) -> Measurement:
        return loglog_slope(rows[key], metric)

    return analyse


def _slope_experiment(
    agent: str,
    env_id: str,
    points: tuple[Point, ...],
    quick_points: tuple[Point, ...] = (),
    *,
    metric: str = "dynamic_regret",
    seeds: int = 16,
    quick_seeds: int = 8,
    control: Control = UNIFORM,
) -> dict[str, object]:
    """One learner over a series of points, judged by its log-log slope (``Claim`` keywords)."""
    sweep = Sweep(
        agent,
        agent,
        env_id,
        points,
        quick_points,
        metric=metric,
        seeds=seeds,
        quick_seeds=quick_seeds,
    )
    return {"sweeps": (sweep,), "analyse": _slope_of(agent, metric), "control": control}


def _points(values: tuple[float, ...], make: object, epsilon: float | None = None) -> tuple:
    return tuple(Point(float(v), make(v), epsilon) for v in values)  # type: ignore[operator]


def _eps_points(values: tuple[float, ...], env: Mapping[str, object]) -> tuple:
    return tuple(Point(float(v), dict(env), float(v)) for v in values)


# ----------------------------------------------------------------------------- paper 000
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


#: Horizons of the T-claims on the shifting env. Theorem 3.6's explicit bound (S = 4, N = 10,
#: epsilon = 8) is below T only from T ~ 1.6 x 10^4 on, so the full run starts at 2 x 10^4;
#: quick mode's horizons are below it and cannot settle ars-shift-dr-vs-T (it says `vacuous`).
SHIFT_T = (20_000, 40_000, 80_000, 160_000)
SHIFT_T_QUICK = (2_500, 5_000, 10_000)

svt_vs_t = Claim(
    name="ars-shift-dr-vs-T",
    paper=ARS,
    source="Table 1 (shifting stochastic row), Thm 3.6",
    statement="The private tracker's dynamic regret on a shifting stochastic sequence is "
    "O(sqrt(S T log N) + S log N / epsilon): at most sqrt(T) growth in T for fixed S.",
    quantity="log-log slope of dynamic regret in T (S = 4, gap 0.3, epsilon = 8)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **_slope_experiment(
        "svt-restart",
        "DPExperts-Shift-v0",
        _points(SHIFT_T, lambda t: _shift(horizon=int(t)), 8.0),
        _points(SHIFT_T_QUICK, lambda t: _shift(horizon=int(t)), 8.0),
        metric="dynamic_regret",
    ),
    explicit_bound=_thm36_bound,
    x_label="T",
    notes="A shift detector with a fixed false-alarm level needs a number of rounds that "
    "depends on the gap, not on T, so its regret per shift is roughly constant in T.",
)

svt_vs_s = Claim(
    name="ars-shift-dr-vs-S",
    paper=ARS,
    source="Table 1 (shifting stochastic row), Thm 3.6",
    statement="The dynamic regret is O(sqrt(S T log(NT)) + S log(NT) / epsilon); at epsilon = 8 "
    "the sqrt(S T log(NT)) term is the larger one by two orders of magnitude, so the regret "
    "grows at most like sqrt(S).",
    quantity="log-log slope of dynamic regret in S (T = 10^4, gap 0.3, epsilon = 8)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **_slope_experiment(
        "svt-restart",
        "DPExperts-Shift-v0",
        _points((1, 2, 4, 8), lambda s: _shift(horizon=10_000, n_shifts=int(s)), 8.0),
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
    paper=ARS,
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
    **_slope_experiment(
        "noisy-clipped-hedge",
        "DPExperts-Shift-v0",
        _points(SHIFT_T, lambda t: _shift(horizon=int(t)), 32.0),
        _points(SHIFT_T_QUICK, lambda t: _shift(horizon=int(t)), 32.0),
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
    paper=ARS,
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
        Sweep("svt-restart", "svt-restart", "DPExperts-Shift-v0", _eps_points(SVT_EPS, _svt_env)),
        Sweep(
            "svt-restart-eps-inf",
            "svt-restart",
            "DPExperts-Shift-v0",
            (Point(math.inf, _svt_env, math.inf),),
            # The boundary's level at finite epsilon (beta / 4, as the two detector-noise tails
            # and the selection allowance); at epsilon = inf it would take all of beta, an
            # epsilon-free difference that is not the 1/epsilon term (#29).
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


#: A collapse is only testable on curves that cross the transition: the mean normalised gain
#: must rise by at least this much from the smallest x to the largest (uniform play's is 0).
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
        # Curves that stay flat (a learner that never leaves uniform play, or never reaches
        # Fixed-Share) coincide trivially: there is no transition to line up.
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
        paper=ARS,
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


#: The S-dependence of the threshold: one T, several S, x on a factor-2 grid so that dropping
#: S from the abscissa (x sqrt(S)) moves the curves by whole grid steps.
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
    paper=ARS,
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
#: A learner is sublinear on a twin when its static regret per round at the largest T is below
#: this (upper end of the 95% interval); a learner that is linear there (Follow-the-Leader on
#: ftl_trap: 1/2 per round; a constant expert on the stationary twin: ~0.9) is linear for
#: another reason than laziness. A fifth of Follow-the-Leader's 1/2 (first set at 0.05, which
#: private-lazy-hedge's quick run at T = 4,000 straddled: 0.048 [0.036, 0.060] per round).
TWIN_RATE = 0.1


def _twin_points(values: tuple[int, ...], family: Mapping[str, object]) -> tuple[Point, ...]:
    return _points(values, lambda t: {**family, "horizon": int(t), "n_experts": 10}, 8.0)


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
    paper=ARS,
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
            _points(ADAPTIVE_T, lambda t: {"horizon": int(t)}, 8.0),
            _points(ADAPTIVE_T_QUICK, lambda t: {"horizon": int(t)}, 8.0),
            metric="static_regret",
        ),
        *_lazy_twins(),
    ),
    analyse=_slope_of("private-lazy-hedge", "static_regret"),
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
    paper=ARS,
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
            _points(ADAPTIVE_T, lambda t: {"horizon": int(t)}),
            _points(ADAPTIVE_T_QUICK, lambda t: {"horizon": int(t)}),
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


#: The construction must make the learner grow faster than it does on a stationary env at the
#: same epsilon and N: linear (slope ~1) against a learner that is sublinear there (<= ~0.6,
#: e.g. log N / epsilon regret with epsilon ~ T^-1/2 is sqrt(T) log T).
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
    """Slope on the construction minus the slope on the stationary env (same learner, epsilon).

    The detail adds both slopes and the noiseless contrast's slope on the construction.
    """
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
    # Both intervals come from independent seed bootstraps: the difference's interval is the
    # conservative one (lower end minus upper end, and the converse).
    return Measurement(
        private.value - calm.value,
        private.ci_low - calm.ci_high,
        private.ci_high - calm.ci_low,
        text,
    )


_LOWER_SIZES = {"metric": "dynamic_regret", "seeds": 8, "quick_seeds": 4}

lower_bound = Claim(
    name="ars-adaptive-lower-bound-linear",
    paper=ARS,
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
            _points(LOWER_T, _block_restart, math.inf),
            _points(LOWER_T_QUICK, _block_restart, math.inf),
            **_LOWER_SIZES,
        ),
    ),
    analyse=_lower_bound_slopes,
    control=UNIFORM,
    specific=_lower_bound_specific,
    untestable="no learner of the suite learns the stationary env at epsilon = 0.5 sqrt(S/T) with "
    "N = T/2 experts at T <= 8,000; the regime needs a learner whose regret there is below 0.8 x "
    "uniform play's (for noisy-clipped-hedge, whose noise grows with N, far larger T)",
    # The learning gate reads the first learner sweep, the stationary env: the claim is judged
    # only where the learner learns there, so linear growth on the construction is the
    # construction's doing, not the learner's epsilon.
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


# ----------------------------------------------------------------------------- paper 001
def _count_switches(
    sweep: Sweep, points: tuple[Point, ...], seeds: int, base_seed: int = 0
) -> pd.DataFrame:
    """Play the lazy learner and read its switch counter (rows: x, seed, switches / S)."""
    import gymnasium as gym

    import agents
    from dp_experts_env.evaluation.episode import play
    from dp_experts_env.evaluation.grid import derive_seed

    out = []
    for p in points:
        env = gym.make_vec(
            sweep.env_id, num_envs=seeds, vectorization_mode="vector_entry_point", **p.env_params
        )
        agent = agents.make(sweep.agent, env=env, seed=derive_seed(base_seed, "switches", p.x))
        env_seeds = [derive_seed(base_seed, "switch-env", p.x, i) for i in range(seeds)]
        play(env, agent, env_seeds, np.array([int(env.unwrapped.horizon)]))
        # The learner's bound on its expected switches at the parameters used; the calibrated
        # lazy tuning makes it exactly the switch budget S = sqrt(d T).
        budget = float(agent.parameters.expected_switches)
        for i, s in enumerate(np.asarray(agent.switches)):
            out.append({"x": p.x, "seed": i, "switches_over_budget": float(s) / budget})
        env.close()
    return pd.DataFrame(out)


def _lazy_bound(p: Point) -> tuple[float, float]:
    """Thm 4.2's bound with S = sqrt(d T), in units of G D: sqrt(T) + 16 ln(T) sqrt(T); and T."""
    t = float(p.env_params["horizon"])
    return math.sqrt(t) + 16 * math.log(t) * math.sqrt(t), t


OCO_T = (1_000, 4_000, 16_000)
OCO_T_QUICK = (1_000, 4_000)

lazy_switches = Claim(
    name="akst-lazy-switches",
    paper=AKST,
    source="Thm 4.2 (lazy OCO)",
    statement="P-COMW in its lazy setting switches at most S times in expectation.",
    quantity="mean switches / the learner's expected-switch bound at its parameters (<= S = "
    "sqrt(d T) by construction, = S for the calibrated tuning), over T and seeds (d = 5)",
    predicted=1.0,
    tolerance=0.1,
    kind="two_sided",
    sweeps=(
        Sweep(
            "p-comw-lazy",
            "p-comw-lazy",
            "DPExperts-OCO-v0",
            _points(OCO_T, lambda t: {"horizon": int(t)}),
            _points(OCO_T_QUICK, lambda t: {"horizon": int(t)}),
            metric="switches_over_budget",
            custom=_count_switches,
        ),
    ),
    analyse=lambda rows: mean_with_ci(rows["p-comw-lazy"], "switches_over_budget"),
    no_control="the quantity is p-comw-lazy's own switch counter over its own switch bound; a "
    "learner without that counter cannot take its role, and the claim is a budget, not a rate.",
    x_label="T",
    notes="The bound on E[switches] is met with equality by the calibrated tuning (its stay "
    "coin is never clipped), so a one-sided test of 'at most S' would sit on its boundary and "
    "be inconclusive however many runs it used. The claim is therefore checked in two parts: "
    "the learner's expected-switch formula at its parameters is <= S (deterministic, asserted "
    "in the tests), and the measured mean agrees with that formula within 10% (this sweep).",
)

lazy_regret = Claim(
    name="akst-lazy-regret-vs-T",
    paper=AKST,
    source="Thm 4.2 (lazy OCO)",
    statement="With S = sqrt(d T) switches, lazy P-COMW's regret is "
    "O(G D sqrt(T) + G D sqrt(d) log(T) T / S) = O~(sqrt(T)).",
    quantity="log-log slope of static regret in T (stochastic gradients, d = 5)",
    predicted=0.5,
    tolerance=0.15,
    kind="at_most",
    **_slope_experiment(
        "p-comw-lazy",
        "DPExperts-OCO-v0",
        _points(OCO_T, lambda t: {"horizon": int(t)}),
        _points(OCO_T_QUICK, lambda t: {"horizon": int(t)}),
        metric="static_regret",
        control=CENTRE,
    ),
    explicit_bound=_lazy_bound,
    untestable="Thm 4.2's explicit bound (G D (sqrt(T) + 16 ln(T) sqrt(T)) with S = sqrt(d T)) "
    "is above the trivial G D T up to T ~ 2.7 x 10^4 (1.23 T at the largest T run, 1.6 x 10^4): "
    "the sweep would have to start there",
    x_label="T",
    notes="Not confirmed at these horizons, and not expected to be: with S = sqrt(d T) the "
    "bound's second term is 16 G D sqrt(d) ln(T) T / S = 16 G D ln(T) sqrt(T), which exceeds "
    "the trivial regret G D T until T is about 10^6, so at T <= 1.6 x 10^4 the theorem does not "
    "constrain the slope and the measured growth is close to linear. The tolerance 0.15 absorbs "
    "the log factor where the bound does bind.",
)


# The full run starts at 10^4, where p-comw has left the centre point's level (0.50 x its regret
# in the earlier full run at 1e3..3e4, whose local slopes were still falling at 3e4: 0.81 ->
# 0.64), and goes as far as its per-round cost allows (docs/reproduce.md, "Horizons").
DP_OCO_T = (10_000, 30_000, 100_000, 300_000)
DP_OCO_T_QUICK = (1_000, 3_000, 10_000)

dp_oco = Claim(
    name="akst-dp-oco-regret-vs-T",
    paper=AKST,
    source="Thm 4.1 (DP-OCO)",
    statement="P-COMW with its DP parameters is (epsilon, delta)-DP with static regret "
    "O~(sqrt(T) + sqrt(d) T^(1/3) / epsilon): at most sqrt(T) growth in T.",
    quantity="log-log slope of p-comw's static regret in T (stochastic gradients, d = 5, "
    "epsilon = 1, delta = 1e-5, calibrated tuning, Renyi certificate)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **_slope_experiment(
        "p-comw",
        "DPExperts-OCO-v0",
        _points(DP_OCO_T, lambda t: {"horizon": int(t)}, 1.0),
        _points(DP_OCO_T_QUICK, lambda t: {"horizon": int(t)}, 1.0),
        metric="static_regret",
        control=CENTRE,
    ),
    x_label="T",
    notes="The theorem's own constants (tuning='paper') certify epsilon_out far below the "
    "requested epsilon and give nearly linear regret at these horizons; the measured learner is "
    "the calibrated default, which spends the requested epsilon under the suite's Renyi "
    "accountant. Its temperature must shrink as more rounds share the budget (about T^-0.7 at "
    "these sizes, because the certificate is several times looser than the true Renyi "
    "divergence, docs/privacy.md), so its regret grows faster than sqrt(T) at small T: at "
    "T = 10^3..3 x 10^4 the local slopes fell from about 0.8 toward 0.6 (quick mode's horizons "
    "are in that burn-in); the full run starts at 10^4, past it.",
)


# ----------------------------------------------------------------------------- paper 002
DART_T = (1_000, 4_000, 16_000, 64_000)
DART_T_QUICK = (1_000, 4_000, 16_000)

#: The oblivious families a worst-case rate is judged on: at each T the largest mean regret over
#: them (anti_lazy first: the sweep the learning gate reads).
WORST_FAMILIES = ("anti_lazy", "ftl_trap", "dyadic_alternating", "switching_deterministic")


def _worst_case_experiment(
    agent: str,
    points: tuple[Point, ...],
    quick_points: tuple[Point, ...],
    *,
    seeds: int = 16,
    quick_seeds: int = 8,
) -> dict[str, object]:
    """One sweep per oblivious family (``Claim`` keywords), judged on the worst at each T."""

    def on(family: str, pts: tuple[Point, ...]) -> tuple[Point, ...]:
        return tuple(Point(p.x, {**p.env_params, "family": family}, p.epsilon) for p in pts)

    sweeps = tuple(
        Sweep(
            agent if family == WORST_FAMILIES[0] else f"{agent}@{family}",
            agent,
            "DPExperts-Oblivious-v0",
            on(family, points),
            on(family, quick_points),
            metric="static_regret",
            seeds=seeds,
            quick_seeds=quick_seeds,
        )
        for family in WORST_FAMILIES
    )
    keys = [s.key for s in sweeps]

    def analyse(rows: Mapping[str, pd.DataFrame]) -> Measurement:
        frames = {k.rpartition("@")[2] if "@" in k else WORST_FAMILIES[0]: rows[k] for k in keys}
        return worst_case_loglog_slope(frames, "static_regret")

    return {"sweeps": sweeps, "analyse": analyse, "control": UNIFORM}


dartboard_t = Claim(
    name="afkt-dartboard-regret-vs-T",
    paper=AFKT,
    source="Thm 2 / Cor. 3 (private shrinking dartboard, oblivious adversaries)",
    statement="The private shrinking dartboard's static regret against oblivious sequences is "
    "O(sqrt(T log d) + T^(1/3) log d / epsilon^(2/3)): at most sqrt(T) growth.",
    quantity="log-log slope in T of the worst mean static regret over the oblivious families "
    "anti_lazy, ftl_trap, dyadic_alternating and switching_deterministic (epsilon = 1)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **_worst_case_experiment(
        "private-shrinking-dartboard",
        _points(DART_T, lambda t: {"horizon": int(t)}, 1.0),
        _points(DART_T_QUICK, lambda t: {"horizon": int(t)}, 1.0),
    ),
    x_label="T",
)

#: Corollary 3 needs epsilon <= 1; below 1/4 the learner is within 0.8 x uniform's regret.
DART_EPS = (0.25, 0.35, 0.5, 0.71, 1.0)
_dart_env = {"horizon": 16_000}


def _dart_excess(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return excess_loglog_slope(rows["private"], rows["epsilon=inf"], "static_regret")


dartboard_eps = Claim(
    name="afkt-dartboard-cost-vs-epsilon",
    paper=AFKT,
    source="Cor. 3 (privacy term 20 T^(1/3) ln^(1/3)(1/delta) ln d / epsilon, epsilon <= 1)",
    statement="For epsilon <= 1 the cost of privacy (regret above the same learner without "
    "noise) is the term 20 T^(1/3) ln^(1/3)(1/delta) ln d / epsilon: it scales as 1/epsilon.",
    quantity="log-log slope in epsilon of regret(epsilon) - regret(inf) (T = 16,000, anti_lazy, "
    "epsilon in [1/4, 1])",
    predicted=-1.0,
    tolerance=0.25,
    kind="two_sided",
    sweeps=(
        Sweep(
            "private",
            "private-shrinking-dartboard",
            "DPExperts-Oblivious-v0",
            _eps_points(DART_EPS, _dart_env),
            metric="static_regret",
        ),
        Sweep(
            "epsilon=inf",
            "private-shrinking-dartboard",
            "DPExperts-Oblivious-v0",
            (Point(math.inf, _dart_env, math.inf),),
            metric="static_regret",
        ),
    ),
    analyse=_dart_excess,
    control=UNIFORM,
    x_label="epsilon",
    notes="The calibrated default (docs/algorithms.md, Calibration) is used, not Corollary 3's "
    "constants, which keep the learner at uniform play at this horizon.",
)


#: Cor. 6's range of epsilon, ln^(2/3)(1/delta) ln d / T <= epsilon <= ln^(2/3)(1/delta) ln d /
#: T^(1/3), holds at epsilon = 0.1 (delta = 1e-6, d = 10) for 133 <= T <= 2.3 x 10^6. The
#: horizons are powers of 2: anti_lazy switches just after every 2^m, so the static regret at
#: T = 2^k is self-similar in k (at other T it depends on where T falls between switches).
BATCHED_DART_EPS = 0.1
#: Thm 5's bound at the learner's parameters is above T at 2^10 (1.14 T), so the sweep starts
#: at 2^12 (0.58 T; 0.025 T at 2^20).
BATCHED_DART_T = (2**12, 2**14, 2**16, 2**18, 2**20)
BATCHED_DART_T_QUICK = (2**12, 2**14, 2**16)


def _cor6_range(p: Point) -> tuple[float, float]:
    """Cor. 6's epsilon range at this T (delta = 1e-6, d = 10)."""
    t = float(p.env_params["horizon"])
    c = math.log(1e6) ** (2 / 3) * math.log(10)
    return c / t, c / t ** (1 / 3)


def _thm5_bound(p: Point) -> tuple[float, float]:
    """Thm 5's bound eta T + B ln d / eta + 2T e^(-Tp/(3B)) at the learner's own parameters; T."""
    import gymnasium as gym

    import agents

    env = gym.make_vec(
        "DPExperts-Oblivious-v0", num_envs=1, vectorization_mode="vector_entry_point",
        **p.env_params,
    )  # fmt: skip
    try:
        agent = agents.make("batched-private-shrinking-dartboard", env=env, epsilon=p.epsilon)
        return float(agent.parameters.regret_bound), float(p.env_params["horizon"])
    finally:
        env.close()


batched_dartboard_t = Claim(
    name="afkt-batched-dartboard-regret-vs-T",
    paper=AFKT,
    source="Thm 5 / Cor. 6 (batched private shrinking dartboard, oblivious adversaries)",
    statement="In the high-privacy range ln^(2/3)(1/delta) ln d / T <= epsilon <= "
    "ln^(2/3)(1/delta) ln d / T^(1/3) the batched private shrinking dartboard's static regret "
    "against oblivious sequences is O(T^(2/5) ln^(1/5)(1/delta) ln^(4/5)(d) / epsilon^(4/5) + "
    "2T e^(-Tp/(3B))): at most T^(2/5) growth in T at fixed epsilon.",
    quantity="log-log slope in T of the worst mean static regret over the oblivious families "
    "anti_lazy, ftl_trap, dyadic_alternating and switching_deterministic (N = 10, epsilon = 0.1, "
    "delta = 1e-6, T = 2^12..2^20, inside Cor. 6's range)",
    predicted=0.4,
    tolerance=0.1,
    kind="at_most",
    **_worst_case_experiment(
        "batched-private-shrinking-dartboard",
        _points(BATCHED_DART_T, lambda t: {"horizon": int(t)}, BATCHED_DART_EPS),
        _points(BATCHED_DART_T_QUICK, lambda t: {"horizon": int(t)}, BATCHED_DART_EPS),
        seeds=32,  # anti_lazy's static regret varies widely across seeds; the runs are cheap
        quick_seeds=32,
    ),
    explicit_bound=_thm5_bound,
    x_label="T",
    notes="The learner is the suite's default (calibrated tuning, batch_size='balanced': the "
    "batch that balances Thm 5's two terms, docs/algorithms.md), not Cor. 6's printed B, whose "
    "exponent does not balance them (docs/errata.md, E-AFKT-9); the T exponent 2/5 is the same "
    "for both. Corollary 6 states no constant; Thm 5's explicit bound at the learner's own "
    "parameters (eta, p, B) is the explicit-bound column (it grows like T^0.43 over "
    "2^12..2^20). Uniform play's regret on anti_lazy is linear (slope 1), so the control "
    "fails the band.",
)


# ----------------------------------------------------------------------------- paper 003
def _gap_env(gap: float, t: int = 10_000) -> dict[str, object]:
    return {"family": "one_vs_rest", "gap": float(gap), "horizon": int(t)}


RPS_T = (1_000, 4_000, 16_000, 64_000)
RPS_T_QUICK = (1_000, 4_000, 16_000)

# Each run is cheap and these claims are two-sided with narrow bands, so they use more seeds.
RPS_SEEDS = {"seeds": 64, "quick_seeds": 16}

rps_horizon_free = Claim(
    name="cc-horizon-free",
    paper=CC,
    source="Thm 1, eq. (1)",
    statement="Randomized prefix softmax's regret on i.i.d. losses with a unique best expert is "
    "bounded independently of T (1 + 800 log K / gap + 16 log K / eta).",
    quantity="log-log slope of pseudo-regret in T (gap 0.2, epsilon = 1; on this stationary env "
    "the per-round-best pseudo-regret equals the static one)",
    predicted=0.0,
    tolerance=0.1,
    kind="two_sided",
    **_slope_experiment(
        "randomized-prefix-softmax",
        "DPExperts-Stochastic-v0",
        _points(RPS_T, lambda t: _gap_env(0.2, int(t)), 1.0),
        _points(RPS_T_QUICK, lambda t: _gap_env(0.2, int(t)), 1.0),
        metric="per_round_best_pseudo_regret",
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
    return _points(values, lambda t: {**_gap_env(0.2, int(t)), "n_experts": 10}, 1.0)


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
    paper=CC,
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
            "randomized-prefix-softmax",
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
    paper=CC,
    source="Thm 1, eq. (2): log K / epsilon term",
    statement="In the privacy-dominated regime (large gap, small epsilon) the regret is "
    "proportional to log K / epsilon.",
    quantity="log-log slope of pseudo-regret in epsilon (gap 0.5, T = 10^4)",
    predicted=-1.0,
    tolerance=0.2,
    kind="two_sided",
    **_slope_experiment(
        "randomized-prefix-softmax",
        "DPExperts-Stochastic-v0",
        _eps_points((0.02, 0.04, 0.08, 0.16), _gap_env(0.5)),
        metric="per_round_best_pseudo_regret",
        **RPS_SEEDS,
    ),
    x_label="epsilon",
)


def _gap_shape(rows: Mapping[str, pd.DataFrame]) -> Measurement:
    return power_plus_constant(rows["randomized-prefix-softmax"], "per_round_best_pseudo_regret")


rps_gap = Claim(
    name="cc-one-over-gap",
    paper=CC,
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
            "randomized-prefix-softmax",
            "DPExperts-Stochastic-v0",
            _points((0.0125, 0.025, 0.05, 0.1), lambda g: _gap_env(g, 50_000), 1.0),
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


# ----------------------------------------------------------------------------- paper 004
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
    paper=FRPAB,
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

# The central-vs-local separation is visible only where local DP must be linear,
# epsilon < 1 / sqrt(T) (Basu et al. 2019, as the paper cites them after Cor. 2), while uniform
# play's regret is still proportional to sqrt(K T / epsilon): on the gap 4 sqrt(K / (epsilon T)),
# at most its cap 0.5 only for epsilon T >= 64 K = 320; the path epsilon T = 320 sits at the cap
# (gap 0.5, as measured when the claim was designed) and has epsilon sqrt(T) < 1 from T = 102,400.
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
    paper=FRPAB,
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
    paper=FRPAB,
    source="Thm 9 (local DP: O(sqrt(T K log N) log(KT) / epsilon))",
    statement="Locally private EXP4's regret is bounded by C sqrt(T K log N) log(KT) / epsilon: "
    "as epsilon falls it grows no faster than 1/epsilon.",
    quantity="log-log slope of static regret in epsilon (ldp-exp4, K = 5, T = 16,000, gap 0.5)",
    predicted=-1.0,
    tolerance=0.0,
    kind="at_least",
    **_slope_experiment(
        "ldp-exp4",
        "DPExperts-Bandit-v0",
        _eps_points((1.0, 2.0, 4.0, 8.0), {"n_arms": 5, "horizon": 16_000, "gap": 0.5}),
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
# Full-run horizons per learner: each starts where the earlier full run (T = 10^3..6.4 x 10^4)
# saw the learner leave uniform play's level with its local slopes still falling, and goes as far
# as the per-round cost allows (docs/reproduce.md, "Horizons"). The batched learner plays its
# blocks in batch segments (play_bandit_block); its local slopes at 6.4 x 10^4 .. 1.024 x 10^6
# (0.82, 0.83, 0.74, 0.70) were still falling above Thm 10's 2/3, so the full run goes to
# 2.048 x 10^6 (horizons fixed before that run; 443 s CPU alone, docs/reproduce.md, "Bandit block
# play").
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
        paper=FRPAB,
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
                _points(horizons, lambda t: {"horizon": int(t)}, 1.0),
                _points(ADVICE_T_QUICK, lambda t: {"horizon": int(t)}, 1.0),
                agent_params=dict(agent_params or {}),
                metric="static_pseudo_regret",
                seeds=seeds,
            ),
        ),
        analyse=_slope_of(agent, "static_pseudo_regret"),
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
    # 12 seeds per base seed (36 over the default three): at 16 the claim alone cost 443 s CPU
    # per base seed, above the full run's budget at three (docs/reproduce.md, "Full-run budget").
    seeds=12,
)


def _registry(quick_collapse: bool = False) -> list[Claim]:
    return [
        svt_vs_t,
        svt_vs_s,
        svt_eps,
        nch_vs_t,
        _collapse_claim(quick_collapse),
        collapse_s,
        lazy_adaptive,
        hedge_adaptive,
        lower_bound,
        lazy_switches,
        lazy_regret,
        dp_oco,
        dartboard_t,
        dartboard_eps,
        batched_dartboard_t,
        rps_horizon_free,
        rps_constant,
        rps_eps,
        rps_gap,
        htinf_sqrt,
        central_vs_local,
        ldp_eps,
        ldp_advice,
        batched_advice,
    ]


CLAIMS: tuple[Claim, ...] = tuple(_registry())


def claim_names() -> list[str]:
    """Every registered claim's name, in report order."""
    return [c.name for c in CLAIMS]


def get_claims(names: list[str] | None = None, *, quick: bool = False) -> list[Claim]:
    """The named claims (all when ``names`` is empty), in report order.

    Raises:
        ValueError: for a name that is not registered, listing the registered ones.
    """
    registry = _registry(quick_collapse=quick)
    if not names:
        return registry
    known = {c.name for c in registry}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown claim(s) {unknown}; registered: {sorted(known)}")
    return [c for c in registry if c.name in names]
