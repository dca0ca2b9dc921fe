"""`dp-experts reproduce`: the analyses on synthetic rows with known answers, the verdict rule,
the claims registry, and the pipeline (outputs, resume) on a tiny configuration."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest
from _claim_rows import shared_sweep_rows  # noqa: F401 (a fixture)

import agents
from dp_experts_env.cli import main
from dp_experts_env.evaluation.claims import (
    VERDICTS,
    Claim,
    Control,
    Measurement,
    Point,
    Sweep,
    excess_loglog_slope,
    judge,
    local_slopes,
    loglog_slope,
    mean_with_ci,
    spread_of_normalised_gain,
    verdict,
)
from dp_experts_env.evaluation.paper_claims import CLAIMS, claim_names, get_claims
from dp_experts_env.evaluation.reproduce import COLUMNS, run_claims


def _rows(xs, fn, seeds=12, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    out = [
        {"x": float(x), "seed": s, "r": fn(x) * math.exp(noise * rng.standard_normal())}
        for x in xs
        for s in range(seeds)
    ]
    return pd.DataFrame(out)


def _claim(kind, predicted=1.0, tolerance=0.1):
    return Claim("c", "p", "s", "st", "q", predicted, tolerance, kind, (), lambda rows: None)


# ----------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize(
    ("kind", "interval", "expected"),
    [
        ("two_sided", (0.95, 1.05), "holds"),
        ("two_sided", (1.2, 1.3), "fails"),
        ("two_sided", (0.7, 0.8), "fails"),
        ("two_sided", (1.05, 1.2), "inconclusive"),
        ("at_most", (0.2, 1.1), "holds"),
        ("at_most", (1.0, 1.2), "inconclusive"),
        ("at_most", (1.11, 1.2), "fails"),
        ("at_least", (0.9, 3.0), "holds"),
        ("at_least", (0.5, 0.95), "inconclusive"),
        ("at_least", (0.2, 0.8), "fails"),
        ("two_sided", (math.nan, 1.0), "inconclusive"),
    ],
)
def test_verdict_compares_the_interval_with_the_band(kind, interval, expected):
    m = Measurement(sum(interval) / 2, *interval)
    assert verdict(_claim(kind), m) == expected


def test_claim_rejects_an_unknown_kind_and_duplicate_sweeps():
    with pytest.raises(ValueError, match="kind must be one of"):
        _claim("roughly")
    s = Sweep("a", "hedge", "DPExperts-Shift-v0", (Point(1.0, {}),))
    with pytest.raises(ValueError, match="sweep keys must be distinct"):
        Claim("c", "p", "s", "st", "q", 1.0, 0.1, "at_most", (s, s), lambda rows: None)


# ----------------------------------------------------------------------------- analyses
@pytest.mark.parametrize("exponent", [0.5, 0.0, -1.0, 1.0])
def test_loglog_slope_recovers_a_known_exponent(exponent):
    rows = _rows([100, 400, 1600, 6400], lambda x: 3.0 * x**exponent)
    m = loglog_slope(rows, "r")
    assert m.value == pytest.approx(exponent, abs=0.03)
    assert m.ci_low < exponent < m.ci_high
    assert m.ci_high - m.ci_low < 0.1  # 12 seeds at 5% noise pin it down


def test_loglog_slope_interval_widens_with_noise_and_refuses_one_point():
    quiet = loglog_slope(_rows([1, 2, 4], lambda x: x, noise=0.01), "r")
    loud = loglog_slope(_rows([1, 2, 4], lambda x: x, noise=0.3), "r")
    assert loud.ci_high - loud.ci_low > 5 * (quiet.ci_high - quiet.ci_low)
    with pytest.raises(ValueError, match="two x values"):
        loglog_slope(_rows([1], lambda x: x), "r")
    flat = loglog_slope(_rows([1, 2], lambda x: 0.0, noise=0.0), "r")
    assert math.isnan(flat.value) and "no log-log fit" in flat.detail


def test_excess_slope_removes_the_baseline():
    base = _rows([math.inf], lambda x: 50.0, seed=1)
    rows = _rows([0.5, 1, 2, 4], lambda e: 50.0 + 20.0 * e ** (-2 / 3), seed=2, noise=0.01)
    m = excess_loglog_slope(rows, base, "r")
    assert m.value == pytest.approx(-2 / 3, abs=0.05)
    # The raw regret's slope is much flatter: the baseline would hide the rate.
    assert loglog_slope(rows, "r").value > -0.4


def test_spread_of_normalised_gain_is_zero_for_a_collapse_and_the_gap_otherwise():
    def series(gain_at, lo=100.0, hi=20.0, seed=0):
        curve = _rows([1, 10, 100], lambda x: lo - gain_at(x) * (lo - hi), noise=0.001, seed=seed)
        low = _rows([0], lambda x: lo, noise=0.001, seed=seed + 1)
        high = _rows([0], lambda x: hi, noise=0.001, seed=seed + 2)
        return curve, low, high

    gain = {1.0: 0.1, 10.0: 0.5, 100.0: 0.9}
    a = series(lambda x: gain[x])
    b = series(lambda x: gain[x], lo=400.0, hi=50.0, seed=5)  # another T: other scale, same gain
    same = spread_of_normalised_gain(
        {"a": a[0], "b": b[0]}, {"a": a[1], "b": b[1]}, {"a": a[2], "b": b[2]}, "r"
    )
    assert same.value < 0.01 and same.ci_high < 0.02
    c = series(lambda x: gain[x] * 0.5, seed=9)
    apart = spread_of_normalised_gain(
        {"a": a[0], "c": c[0]}, {"a": a[1], "c": c[1]}, {"a": a[2], "c": c[2]}, "r"
    )
    assert apart.value == pytest.approx(0.45, abs=0.01)


def test_mean_with_ci_brackets_the_mean():
    rows = _rows([1], lambda x: 0.5, seeds=200, noise=0.1)
    m = mean_with_ci(rows, "r")
    assert m.ci_low < m.value < m.ci_high and m.value == pytest.approx(0.5, rel=0.03)


# ----------------------------------------------------------------------------- registry
def test_a_new_paper_module_is_found_without_a_list(tmp_path, monkeypatch):
    """Claims by paper (issue 41 item 4): a module dropped into the papers package registers its
    claims in its report place, with no list edited."""
    import sys
    import textwrap

    from dp_experts_env.evaluation import papers

    (tmp_path / "zz_new_paper.py").write_text(
        textwrap.dedent(
            """
            from dataclasses import replace

            from dp_experts_env.evaluation.papers.ars import svt_vs_t

            PAPER = "A new paper"
            REPORT_ORDER = 99


            def claims(quick=False):
                return [replace(svt_vs_t, name="new-paper-claim", paper=PAPER)]
            """
        )
    )
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    try:
        names = [c.name for c in get_claims()]
    finally:
        sys.modules.pop("dp_experts_env.evaluation.papers.zz_new_paper", None)
    assert names[-1] == "new-paper-claim" and names[:-1] == claim_names()


def test_registry_covers_every_paper_with_distinct_runnable_claims():
    assert len(CLAIMS) >= 12
    assert len(set(claim_names())) == len(CLAIMS)
    from dp_experts_env.evaluation.paper_claims import paper_modules

    # Every paper's module has claims (the count is the package's, not a number written here).
    modules = paper_modules()
    assert modules and {c.paper for c in CLAIMS} == {m.PAPER for m in modules}
    assert [m.REPORT_ORDER for m in modules] == sorted({m.REPORT_ORDER for m in modules})
    import gymnasium as gym

    import dp_experts_env  # noqa: F401

    for claim in CLAIMS:
        for sweep in claim.sweeps:
            agents.spec(sweep.agent)  # raises for an unknown learner
            gym.spec(sweep.env_id)
            assert sweep.points and all(isinstance(p, Point) for p in sweep.points)
            assert len(sweep.chosen(True)[0]) <= len(sweep.points)


def test_get_claims_names_the_unknown_claim():
    with pytest.raises(ValueError, match="unknown claim.*registered"):
        get_claims(["no-such-claim"])
    assert [c.name for c in get_claims(["cc-horizon-free"])] == ["cc-horizon-free"]


def test_cli_reports_an_unknown_claim(capsys):
    assert main(["reproduce", "no-such-claim", "--out", "unused"]) == 2
    assert "unknown claim" in capsys.readouterr().err


# ----------------------------------------------------------------------------- pipeline
def _tiny_claim() -> Claim:
    env = {"n_experts": 3, "n_shifts": 1, "gap": 0.3}
    pts = tuple(Point(float(t), {**env, "horizon": t}) for t in (60, 120, 240))
    sweep = Sweep("hedge", "hedge", "DPExperts-Shift-v0", pts, pts[:2], seeds=3, quick_seeds=2)
    return Claim(
        "tiny-hedge",
        "textbook",
        "Hedge",
        "Hedge's regret grows at most like sqrt(T).",
        "slope",
        0.5,
        0.5,
        "at_most",
        (sweep,),
        lambda rows: loglog_slope(rows["hedge"], "dynamic_regret"),
        x_label="T",
        control=Control("uniform"),
    )


def test_pipeline_writes_the_outputs_and_resumes_without_rerunning(tmp_path):
    claim = _tiny_claim()
    rows = run_claims([claim], tmp_path, quick=True, backend="serial")
    assert [r["claim"] for r in rows] == ["tiny-hedge"]
    with open(tmp_path / "claims.csv") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == list(COLUMNS)
    assert table[0]["verdict"] in VERDICTS
    assert table[0]["control"] == "uniform" and table[0]["control_verdict"] in VERDICTS
    assert (tmp_path / "figures" / "tiny-hedge.png").stat().st_size > 1000
    report = (tmp_path / "report.md").read_text()
    assert "## tiny-hedge" in report and "figures/tiny-hedge.png" in report
    assert "2 seeds" in report  # the quick configuration is what the report describes
    runs = sorted(p for p in (tmp_path / "runs").rglob("unit-*.pack") if "cells" in p.parts)
    assert runs  # the claim's runs are stored as unit files
    stamps = {p: p.stat().st_mtime_ns for p in runs}
    again = run_claims([claim], tmp_path, quick=True, backend="serial")
    assert again[0]["measured"] == rows[0]["measured"]  # same stored runs, same number
    assert {p: p.stat().st_mtime_ns for p in runs} == stamps  # nothing was re-run
    full = run_claims([claim], tmp_path, quick=False, backend="serial")
    assert full[0]["detail"].count(":") == 3  # three points (x = 60, 120, 240) now


def test_custom_sweeps_are_stored_with_their_code_fingerprint(tmp_path):
    calls = []

    def count(sweep, points, seeds):
        calls.append(len(points))
        return pd.DataFrame({"x": [p.x for p in points], "seed": 0, "v": 1.0})

    pts = (Point(1.0, {"horizon": 10}),)
    sweep = Sweep("s", "hedge", "DPExperts-Shift-v0", pts, metric="v", custom=count)
    claim = Claim(
        "custom",
        "p",
        "s",
        "st",
        "q",
        1.0,
        0.0,
        "at_most",
        (sweep,),
        lambda rows: mean_with_ci(rows["s"], "v"),
        no_control="a test of the storage",
    )
    first = run_claims([claim], tmp_path)
    second = run_claims([claim], tmp_path)
    assert calls == [1] and first[0]["measured"] == second[0]["measured"] == 1.0


def test_rerunning_one_claim_keeps_the_other_rows(tmp_path, monkeypatch):
    import dataclasses

    from dp_experts_env.evaluation import paper_claims

    tiny = _tiny_claim()
    other = dataclasses.replace(tiny, name="tiny-hedge-2")
    registry = [tiny, other]
    monkeypatch.setattr(paper_claims, "get_claims", lambda names=None, quick=False: registry)
    first = run_claims([tiny, other], tmp_path, quick=True, backend="serial")
    run_claims([other], tmp_path, quick=True, backend="serial")
    with open(tmp_path / "claims.csv") as f:
        table = list(csv.DictReader(f))
    assert [r["claim"] for r in table] == ["tiny-hedge", "tiny-hedge-2"]
    assert float(table[0]["measured"]) == pytest.approx(first[0]["measured"], rel=1e-5)
    report = (tmp_path / "report.md").read_text()
    assert "## tiny-hedge\n" in report and "## tiny-hedge-2" in report
    # A claim no longer registered is dropped rather than reported from stale rows.
    registry.pop(0)
    run_claims([other], tmp_path, quick=True, backend="serial")
    with open(tmp_path / "claims.csv") as f:
        assert [r["claim"] for r in csv.DictReader(f)] == ["tiny-hedge-2"]


# ----------------------------------------------------------------------------- figures
def test_collapse_figure_draws_the_normalised_gain_per_horizon():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dp_experts_env.evaluation.papers.ars import _collapse_figure

    def frame(values):  # {x: regret}, three identical seeds per x
        return pd.DataFrame(
            [{"x": x, "seed": s, "dynamic_regret": v} for x, v in values.items() for s in range(3)]
        )

    rows = {
        "nch-T100": frame({3.0: 90.0, 30.0: 40.0}),
        "uniform-T100": frame({0.0: 100.0}),
        "fixed-share-T100": frame({0.0: 20.0}),
    }
    fig, ax = plt.subplots()
    label = _collapse_figure(rows, ax)
    (line,) = ax.get_lines()[:1]
    assert list(line.get_xdata()) == [3.0, 30.0]
    np.testing.assert_allclose(line.get_ydata(), [0.125, 0.75])  # (100 - R) / (100 - 20)
    assert "R_uniform - R" in label
    plt.close(fig)


def test_pipeline_uses_a_claims_own_figure(tmp_path):
    calls = []

    def draw(rows, ax):
        calls.append(sorted(rows))
        ax.plot([1, 2], [3, 4], label="custom")
        return "custom quantity"

    claim = _tiny_claim()
    custom = Claim(**{**claim.__dict__, "name": "tiny-custom-figure", "figure": draw})
    run_claims([custom], tmp_path, quick=True, backend="serial")
    assert calls == [["hedge"], ["hedge"]]  # the learner's rows, then the control's
    assert (tmp_path / "figures" / "tiny-custom-figure.png").stat().st_size > 1000


def test_lower_bound_claim_measures_the_construction_against_a_stationary_env():
    from dp_experts_env.evaluation.papers.ars import _lower_bound_slopes, lower_bound

    def regret(fn, seed):
        return _rows([500, 1000, 2000], fn, seed=seed).rename(columns={"r": "dynamic_regret"})

    linear, root = regret(lambda t: 0.8 * t, 0), regret(lambda t: 2 * t**0.5, 3)
    # linear on the construction, sqrt on the stationary env: the construction's doing
    m = _lower_bound_slopes(
        {"noisy-clipped-hedge": linear, "nch-stationary": root, "noisy-clipped-hedge-eps-inf": root}
    )
    assert m.value == pytest.approx(0.5, abs=0.05)
    assert verdict(lower_bound, m) == "holds"
    assert "at epsilon = inf on the construction 0.5" in m.detail
    # linear on both (a learner at uniform play at this epsilon): the construction shows nothing
    flat = _lower_bound_slopes(
        {"noisy-clipped-hedge": linear, "nch-stationary": regret(lambda t: 0.9 * t, 5),
         "noisy-clipped-hedge-eps-inf": root}
    )  # fmt: skip
    assert flat.value == pytest.approx(0.0, abs=0.05) and verdict(lower_bound, flat) == "fails"
    # the gate reads the stationary env first: a learner at uniform's level there is burn-in
    assert lower_bound.roles()[0] == "nch-stationary"
    j = judge(lower_bound, m, flat, {500.0: 0.99, 1000.0: 0.9, 2000.0: 0.85})
    assert j.verdict == "burn-in"
    # flat at the control's level (not moving toward leaving it): not in regime
    j = judge(lower_bound, m, flat, {500.0: 0.95, 1000.0: 0.96, 2000.0: 0.95})
    assert j.verdict == "not in regime" and "not moving toward leaving it" in j.reason
    # The construction's sizes follow the theorem: N = 2T/(S+1), epsilon below sqrt(S/T); the
    # stationary env has the same N and epsilon at every T.
    by_key = {s.key: s for s in lower_bound.sweeps}
    for point, calm in zip(
        by_key["noisy-clipped-hedge"].points, by_key["nch-stationary"].points, strict=True
    ):
        s = point.env_params["n_shifts"]
        assert point.env_params["n_experts"] == 2 * int(point.x) // (s + 1)
        assert point.epsilon < math.sqrt(s / point.x)
        assert calm.epsilon == point.epsilon and calm.x == point.x
        assert calm.env_params["n_experts"] == point.env_params["n_experts"]
        assert calm.env_params["n_shifts"] == 0


def _collapsing(b_true, seeds=8, seed=0):
    """Gain curves at S = 1, 4, 16 that collapse under x S^(1/2 - b_true) (x has S^(1/2))."""
    curves, low, high = {}, {}, {}
    for i, s in enumerate((1.0, 4.0, 16.0)):

        def gain(x, s=s):
            return 1 / (1 + math.exp(-1.5 * (math.log(x * s ** (0.5 - b_true)) - math.log(20))))

        xs = [2, 4, 8, 16, 32, 64, 128]
        curves[s] = _rows(xs, lambda x, g=gain: 100 - 80 * g(x), seeds, 0.01, seed + i)
        low[s] = _rows([0], lambda x: 100.0, seeds, 0.01, seed + 10 + i)
        high[s] = _rows([0], lambda x: 20.0, seeds, 0.01, seed + 20 + i)
    return curves, low, high


@pytest.mark.parametrize("b_true", [0.5, 0.0, 1.0])
def test_collapse_exponent_recovers_the_power_of_s_in_the_threshold(b_true):
    from dp_experts_env.evaluation.claims import collapse_exponent

    m = collapse_exponent(*_collapsing(b_true), "r")
    assert m.value == pytest.approx(b_true, abs=0.051)
    assert m.ci_low <= b_true <= m.ci_high and m.ci_high - m.ci_low <= 0.2
    spreads = m.detail.split("(b = 0.5): ")[1]
    with_s, without_s = float(spreads[:4]), float(spreads.split("(b = 0): ")[1][:4])
    if b_true == 0.5:  # both halves of the statement: collapse with S, none without it
        assert with_s < 0.05 and without_s > 0.3


def test_collapse_exponent_refuses_flat_curves_and_curves_that_never_collapse():
    from dp_experts_env.evaluation.claims import collapse_exponent

    curves, low, high = _collapsing(0.5)
    flat = {s: _rows([2, 4, 8, 16, 32, 64, 128], lambda x: 100.0, seed=i)
            for i, s in enumerate(curves)}  # fmt: skip
    m = collapse_exponent(flat, low, high, "r")
    assert math.isnan(m.value) and "no transition" in m.detail
    # a curve of another shape (a step where the others are gentle): no shift lines it up
    apart = dict(curves)
    apart[4.0] = _rows([2, 4, 8, 16, 32, 64, 128], lambda x: 100 - 80 * (x > 20))
    m = collapse_exponent(apart, low, high, "r")
    assert math.isnan(m.value) and "nothing collapses" in m.detail


def test_batched_dartboard_points_lie_in_corollary_6s_range_below_the_trivial_bound():
    from dp_experts_env.evaluation.papers.afkt import (
        _cor6_range,
        _thm5_bound,
        batched_dartboard_t,
    )

    sweep = batched_dartboard_t.sweeps[0]  # anti_lazy; the other families share the points
    assert all(s.points[0].x == sweep.points[0].x for s in batched_dartboard_t.sweeps)
    for point in (*sweep.points, *sweep.quick_points):
        low, high = _cor6_range(point)
        assert low <= point.epsilon <= high
        bound, trivial = _thm5_bound(point)
        assert bound < trivial == point.x


# ----------------------------------------------------------------------------- controls
def _slope_claim(kind="at_most", predicted=0.5, tolerance=0.1, **kw):
    s = Sweep("a", "hedge", "DPExperts-Shift-v0", (Point(1.0, {}),))
    return Claim(
        "c", "p", "s", "st", "q", predicted, tolerance, kind, (s,), lambda rows: None,
        control=Control("uniform"), **kw,
    )  # fmt: skip


def test_judge_reports_burn_in_when_the_learner_is_at_the_controls_level():
    claim = _slope_claim()
    m = Measurement(0.5, 0.45, 0.55)
    control = Measurement(1.0, 0.95, 1.05)
    assert judge(claim, m, control, {1e3: 0.5, 1e4: 0.3}).verdict == "holds"
    j = judge(claim, m, control, {1e3: 0.9, 1e4: 0.3})
    assert j.verdict == "burn-in" and "has not left the control's level" in j.reason
    assert "control uniform: 1" in j.reason and "1000: 0.90" in j.reason
    # at the largest x only (a curve that starts at the control's level by design)
    largest = _slope_claim(learning_at="largest")
    assert judge(largest, m, control, {1e3: 0.9, 1e4: 0.3}).verdict == "holds"


def test_judge_reports_vacuous_when_the_control_passes_too():
    claim = _slope_claim()
    m = Measurement(0.5, 0.45, 0.55)
    flat = Measurement(0.0, -0.05, 0.05)  # uniform's regret does not grow: passes "<= 0.6"
    j = judge(claim, m, flat, {1.0: 0.5})
    assert j.verdict == "vacuous" and j.band == "holds"
    # the control judged by the same logic (its own level: ratio 1) never holds
    assert judge(claim, flat, flat, {1.0: 1.0}).verdict == "burn-in"
    assert judge(_slope_claim(learning_fraction=None), flat, flat).verdict == "vacuous"


def test_judge_tells_failure_from_burn_in_by_the_local_slopes():
    claim = _slope_claim()
    control = Measurement(1.0, 0.95, 1.05)
    falling = Measurement(0.8, 0.75, 0.85, local=(0.9, 0.8, 0.65))
    j = judge(claim, falling, control, {1.0: 0.5})
    assert j.verdict == "burn-in" and "local slopes" in j.reason and "0.65" in j.reason
    steady = Measurement(0.8, 0.75, 0.85, local=(0.8, 0.8, 0.82))
    assert judge(claim, steady, control, {1.0: 0.5}).verdict == "fails"
    one_window = Measurement(0.8, 0.75, 0.85, local=(0.8,))
    assert judge(claim, one_window, control, {1.0: 0.5}).verdict == "inconclusive"
    # a lower bound moving up toward its prediction is burn-in too
    lower = _slope_claim(kind="at_least", predicted=1.0, learning_fraction=None)
    rising = Measurement(0.7, 0.65, 0.75, local=(0.6, 0.75))
    assert judge(lower, rising, control).verdict == "burn-in"


def test_judge_calls_a_claim_vacuous_where_the_explicit_bound_is_trivial():
    claim = _slope_claim()
    m = Measurement(0.5, 0.45, 0.55)
    control = Measurement(1.0, 0.95, 1.05)
    j = judge(claim, m, control, {1.0: 0.5}, {1e3: (1.2e3, 1e3), 1e4: (1.1e4, 1e4)})
    assert j.verdict == "vacuous" and "explicit bound" in j.reason
    j = judge(claim, m, control, {1.0: 0.5}, {1e3: (1.2e3, 1e3), 1e4: (5e3, 1e4)})
    assert j.verdict == "vacuous" and "at x = 1000" in j.reason and "10000" not in j.reason[:70]
    j = judge(claim, m, control, {1.0: 0.5}, {1e3: (0.9e3, 1e3), 1e4: (5e3, 1e4)})
    assert j.verdict == "holds" and "1000: 0.90" in j.reason


def test_local_slopes_are_fits_over_three_points():
    xs = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    means = np.array([1.0, 2.0, 4.0, 4 * 2**0.5, 8.0])  # slope 1, then 0.5
    assert local_slopes(xs, means) == pytest.approx((1.0, 0.75, 0.5))
    assert local_slopes(xs[:2], means[:2]) == pytest.approx((1.0,))  # one window, no trend
    assert local_slopes(xs[:1], means[:1]) == ()


def test_with_learner_replaces_the_learner_role_only():
    from dp_experts_env.evaluation.paper_claims import get_claims

    (collapse,) = get_claims(["ars-threshold-collapse"], quick=True)
    swapped = collapse.with_learner("uniform")
    for before, after in zip(collapse.sweeps, swapped.sweeps, strict=True):
        if before.key.startswith("nch-"):
            assert after.agent == "uniform" and after.folder == f"{before.key}~uniform"
        else:  # the references (uniform, fixed-share) stay
            assert after == before
    (switches,) = get_claims(["akst-lazy-switches"])
    with pytest.raises(ValueError, match="internals"):
        switches.with_learner("uniform")
    (oco,) = get_claims(["akst-dp-oco-regret-vs-T"])
    centre = oco.with_learner("ogd", {"step": 0.0})
    assert centre.sweeps[0].agent_params == {"step": 0.0}
    assert centre.sweeps[0].folder.startswith("p-comw~ogd-")


def test_every_claim_names_a_control_or_says_why_not():
    import agents as registry

    for claim in CLAIMS:
        if claim.control is None:
            assert claim.no_control
        elif claim.control.agent == claim.sweeps[0].agent:
            # A negative control (paper 004's local learner: the same learner at tau = 1): it
            # must differ from the learner and the claim must not gate on beating it.
            assert claim.control.params and claim.sweeps[0].agent_params != claim.control.params
            assert claim.learning_fraction is None
        else:
            assert not registry.spec(claim.control.agent).private  # learns nothing, no noise


def test_the_central_vs_local_claim_runs_where_local_dp_must_be_linear():
    """Paper 004's separation: every full-run point has epsilon sqrt(T) < 1 (Basu et al.'s
    regime), the gap where uniform's regret is c sqrt(KT/epsilon), and tau = 1 as the control."""
    (claim,) = get_claims(["frpab-central-vs-local"])
    assert claim.control.agent == "private-batched-bandit" and claim.control.params == {"tau": 1}
    learner, reference = claim.sweeps
    assert [p.env_params for p in learner.points] == [p.env_params for p in reference.points]
    for p in learner.points:
        t = p.env_params["horizon"]
        assert p.epsilon * t**0.5 < 1.0
        assert p.env_params["gap"] == pytest.approx(min(0.5, 4 * (5 / (p.epsilon * t)) ** 0.5))
    # the control's runs never share the learner's results folder
    local = claim.with_learner("private-batched-bandit", {"tau": 1})
    assert local.sweeps[0].folder != learner.folder


def _controls():
    out = []
    for claim in CLAIMS:
        if claim.control is None:
            continue
        out.append(pytest.param(claim.name, claim.control.agent, dict(claim.control.params)))
    return out


@pytest.mark.slow
@pytest.mark.usefixtures("shared_sweep_rows")
@pytest.mark.parametrize(("name", "agent", "params"), _controls())
def test_a_no_learning_control_holds_no_claim(name, agent, params, tmp_path):
    """`dp-experts reproduce --agent CONTROL` (quick sizes) gives no `holds` on any claim.

    Serial, in this process: the verdict is this test's point, not the backend (the quick
    claims' grids are under the local backend's floor of work per process, so it plays them here
    too; test_cli_agent_runs_a_claim_with_another_learner keeps the command's default). The
    sweeps' rows are shared with tests/test_cheats_zoo.py (``_claim_rows``: the control in the
    learner's role is the cheats' control; the references are the same sweeps)."""
    from dp_experts_env.evaluation.paper_claims import get_claims

    claims = get_claims([name], quick=True)
    (row,) = run_claims(
        claims, tmp_path, quick=True, backend="serial", agent=agent, agent_params=params
    )
    assert row["learner"] == agent
    assert row["verdict"] != "holds", row["reason"]
    assert row["control_verdict"] != "holds"
    assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 1000  # rendered to PNG


def test_cli_agent_names_an_unknown_learner(tmp_path, capsys):
    assert main(["reproduce", "cc-horizon-free", "--agent", "no-such", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no-such" in err
    assert not (tmp_path / "claims.csv").exists()


@pytest.mark.slow
def test_cli_agent_runs_a_claim_with_another_learner(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "cc-horizon-free", "--quick", "--agent", "uniform"]) == 0
    out = capsys.readouterr().out
    # uniform states no privacy: the claim (at epsilon = 1) is gated, whatever it measures
    assert "cc-horizon-free: not private" in out and "control uniform" in out
    with open(tmp_path / "results" / "reproduce-quick-uniform" / "claims.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert row["learner"] == "uniform" and row["control"] == "uniform"
    assert "certified epsilon inf (no privacy claim) > 1" in row["reason"]
    assert "the measurement alone: not in regime" in row["reason"]
    assert "has not left the control's level" in row["reason"]
    assert row["privacy"].startswith("failed: certificate above the point's epsilon")


def test_earlier_rows_of_another_learner_are_described_with_that_learner():
    from dp_experts_env.evaluation.reproduce import _as_run

    (claim,) = get_claims(["cc-horizon-free"])
    assert _as_run(claim, {"learner": "randomized-prefix-softmax:paper"}) is claim
    assert _as_run(claim, {"learner": "uniform"}).sweeps[0].agent == "uniform"
    (switches,) = get_claims(["akst-lazy-switches"])  # its role cannot be taken: kept as is
    assert _as_run(switches, {"learner": "uniform"}) is switches
