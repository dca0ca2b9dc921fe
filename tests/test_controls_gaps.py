"""Known-answer controls and planted defects for verdict paths no other test forces.

An audit of the suite's verdicts (claims, privacy audit, table, figures, verify, attack) found
these (feature, verdict) paths exercised by no case with a known answer; each test below forces
one, and its docstring names the mutant of the code it catches (each was checked by planting the
mutant and seeing the test fail):

* ``reproduce``: :func:`~dp_experts_env.evaluation.reproduce.learner_ratios` (the learning gate's
  input) had no known-answer test, and no pipeline test forced a verdict other than "one of
  VERDICTS": a learner that learns must leave burn-in, the control in its role must not.
* ``reproduce``: ``explicit_bounds`` (where the ``vacuous`` verdict of a loose explicit bound
  comes from) was never read on a claim's quick points.
* ``audit``: the fresh-noise check (:func:`~dp_experts_env.evaluation.audit.noise_freshness`) and
  the ``VIOLATION: fresh-noise check failed`` verdict were only reached through the zoo's pinned
  ``violation`` flag (which the statistical test also sets); a pass whose event could show no
  violation at all, and the "never seen" inconclusive verdict, had no known-answer case.
* OCO audit: no harmless change (more noise than the claim needs) was audited, and
  :meth:`OCOAuditResult.summary`'s inconclusive verdict had no case.
* table: the ``=`` tie mark was tested within one env only (never across an env boundary);
  ``summarize``'s score was pinned for the baseline only (0), here for learners at 0.5x and
  1.5x its regret too.
* figures: the aggregate figure (rliable's interval plot) was never compared with aggregate.csv.
* ``verify``: an unfinished sweep (manifest not marked complete) and a missing grid.json were
  never shown to make a folder "NOT current".
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pandas as pd
import pytest
from _planted_agents import HedgeNoiseReused as _NoiseReused

from agents.noisy_clipped_hedge import NoisyClippedHedge
from agents.registry import _REGISTRY, register
from dp_experts_env.evaluation.claims import Claim, Control, Point, Sweep, judge, mean_with_ci
from dp_experts_env.evaluation.reproduce import learner_ratios, run_claims
from dp_experts_env.evaluation.sweep import summarize
from dp_experts_env.evaluation.table import terminal_table, ties


# ----------------------------------------------------------------------------- reproduce
def _rows(means: dict[float, float], metric: str = "dynamic_regret", seeds: int = 4):
    return pd.DataFrame(
        [{"x": x, "seed": s, metric: m + 0.1 * (s - 1.5)} for x, m in means.items()
         for s in range(seeds)]
    )  # fmt: skip


def _gate_claim(**kw) -> Claim:
    pts = (Point(10.0, {}), Point(100.0, {}))
    learner = Sweep("l", "hedge", "DPExperts-Shift-v0", pts)
    reference = Sweep("ref", "fixed-share", "DPExperts-Shift-v0", pts)
    return Claim(
        "c", "p", "s", "st", "q", 0.5, 0.1, "at_most", (learner, reference), lambda rows: None,
        control=Control("uniform"), **kw,
    )  # fmt: skip


def test_learner_ratios_are_the_learners_mean_over_the_controls_per_x():
    """Known answer: means 2, 30 over the control's 10, 40 give 0.2, 0.75 (the reference sweep,
    not in the learner's role, is never read; it is 1000x off so reading it would show).

    Mutants caught: the ratio inverted (control / learner: 5, 1.33 -> a learning learner reads
    as burn-in); the control's non-positive mean not refused (a ratio against 0 or a negative
    level would gate on nonsense); the ``learning_fraction is None`` early exit dropped.
    """
    claim = _gate_claim()
    rows = {"l": _rows({10.0: 2.0, 100.0: 30.0}), "ref": _rows({10.0: 9e3, 100.0: 9e3})}
    control = {"l": _rows({10.0: 10.0, 100.0: 40.0}), "ref": _rows({10.0: 1.0, 100.0: 1.0})}
    got = learner_ratios(claim, rows, control)
    assert got == pytest.approx({10.0: 0.2, 100.0: 0.75}, abs=1e-12)
    # The gate reads them: 0.75 < 0.8 is learning; the control at its own level is not.
    m = mean_with_ci(_rows({1.0: 0.3}), "dynamic_regret")
    assert judge(claim, m, None, got).verdict != "burn-in"
    # At the control's level and flat across x: not in regime (issue 36); falling: burn-in.
    assert judge(claim, m, None, dict.fromkeys(got, 1.0)).verdict == "not in regime"
    assert judge(claim, m, None, {10.0: 1.0, 100.0: 0.9}).verdict == "burn-in"
    # No level to compare with: a control whose mean regret is <= 0 somewhere.
    flat = {"l": _rows({10.0: 10.0, 100.0: 0.0}), "ref": control["ref"]}
    assert learner_ratios(claim, rows, flat) is None
    # A lower-bound claim has no learning gate.
    assert learner_ratios(_gate_claim(learning_fraction=None), rows, control) is None


def _stochastic_claim() -> Claim:
    """Hedge's regret grows at most like sqrt(T) (its horizon-tuned rate) on a stochastic game.

    DPExperts-Stochastic-v0 with N = 3 and gap 0.4 (T = 100, 400, 1600, 12 seeds): Hedge's
    static regret is 3-19% of uniform's, which grows like gap x T; the quantity is the log-log
    slope of static regret in T, judged ``at_most 0.5 + 0.25`` against uniform in the learner's
    role (measured: Hedge 0.34 [0.24, 0.44]; uniform 1.00 [0.98, 1.03], band test fails).
    """
    from dp_experts_env.evaluation.claims import loglog_slope

    env = {"n_experts": 3, "gap": 0.4}
    pts = tuple(Point(float(t), {**env, "horizon": t}) for t in (100, 400, 1600))
    sweep = Sweep("hedge", "hedge", "DPExperts-Stochastic-v0", pts, pts, seeds=12, quick_seeds=12)
    return Claim(
        "ctl-stochastic-hedge", "textbook", "Hedge", "bounded regret on a stochastic game",
        "slope", 0.5, 0.25, "at_most", (sweep,),
        lambda rows: loglog_slope(rows["hedge"], "static_regret"),
        x_label="T", control=Control("uniform"),
    )  # fmt: skip


@pytest.mark.slow
def test_pipeline_verdicts_of_a_learning_learner_and_of_the_control_in_its_role(tmp_path):
    """End to end (run_claims, serial): Hedge learns, so the verdict is the band's (``holds``);
    the no-learning control put in the learner's role is ``not in regime`` on the same claim
    (at its own level at every x, not moving: issue 36's verdict, formerly ``burn-in``).

    Mutants caught: ``run_claims`` passing the control's ratios (1.0) or none for the learner
    (verdict no longer follows the band), ``learner_ratios`` inverted (Hedge reads as burn-in),
    ``judge``'s gate skipped (uniform's slope 1 is then ``fails``, not burn-in).
    """
    claim = _stochastic_claim()
    (row,) = run_claims([claim], tmp_path / "hedge", quick=True, backend="serial")
    assert row["verdict"] == "holds", (row["ci_low"], row["ci_high"], row["reason"])
    assert "regret / control's at x = " in row["reason"]
    shown = row["reason"].split("regret / control's at x = ")[1].split(";")[0]
    ratios = [float(pair.split(": ")[1]) for pair in shown.split(", ")]
    assert max(ratios) < 0.5  # clearly learning: far below the 0.8 gate (measured 0.03-0.19)
    assert row["control_verdict"] == "not in regime"
    (ctl,) = run_claims(
        [claim], tmp_path / "uniform", quick=True, backend="serial", agent="uniform"
    )
    assert ctl["learner"] == "uniform" and ctl["verdict"] == "not in regime", ctl["reason"]
    assert "has not left the control's level" in ctl["reason"]


def test_explicit_bounds_are_read_at_the_points_actually_run():
    """``explicit_bounds`` gives ``{x: (bound, trivial)}`` at the learner's points of the run
    (quick points in quick mode), and a bound above the trivial one at a quick point makes the
    verdict ``vacuous``, while the full run's points (all below the trivial bound) do not.

    Mutants caught: the full points read in quick mode (the loose quick point is missed and a
    learner "holds" where the theorem says nothing); the points of a reference sweep read
    instead of the learner's.
    """
    from dp_experts_env.evaluation.reproduce import explicit_bounds

    full = (Point(100.0, {}), Point(1000.0, {}))
    quick = (Point(10.0, {}), Point(100.0, {}))
    learner = Sweep("l", "hedge", "DPExperts-Shift-v0", full, quick)
    reference = Sweep("ref", "uniform", "DPExperts-Shift-v0", (Point(7.0, {}),))
    claim = Claim(
        "c", "p", "s", "st", "q", 0.5, 0.1, "at_most", (learner, reference), lambda rows: None,
        control=Control("uniform"), explicit_bound=lambda p: (300.0, p.x),
    )  # fmt: skip
    assert explicit_bounds(claim, quick=False) == {100.0: (300.0, 100.0), 1000.0: (300.0, 1e3)}
    got = explicit_bounds(claim, quick=True)
    assert got == {10.0: (300.0, 10.0), 100.0: (300.0, 100.0)}
    m = mean_with_ci(_rows({1.0: 0.3}), "dynamic_regret")  # inside the band
    ratios = {10.0: 0.3, 100.0: 0.3}
    assert judge(claim, m, None, ratios, got).verdict == "vacuous"
    tight = {100.0: (300.0, 400.0), 1000.0: (300.0, 1e3)}
    assert judge(claim, m, None, ratios, tight).verdict == "holds"


# ----------------------------------------------------------------------------- privacy audit
@contextlib.contextmanager
def _registered(name, cls):
    register(name, private=True, summary="test copy of noisy-clipped-hedge")(cls)
    try:
        yield name
    finally:
        _REGISTRY.pop(name, None)


class _ExtraDraw(NoisyClippedHedge):
    """Harmless: an extra, unused Laplace draw through the backend every round."""

    def _learn(self, obs):
        self.noise.add_laplace(self.rng, np.zeros((self.num_envs, 2)), 1.0)
        super()._learn(obs)


def _rival():
    from dp_experts_env.audit import make_scenario, rival_pair

    return make_scenario("rival", rival_pair(6, 3, 0), {"epsilon": 1.0})


def test_fresh_noise_check_flags_reused_noise_and_passes_fresh_noise():
    """The freshness check alone, on a planted bug and two controls (64 runs, T = 6, N = 3).

    Mutants caught: ``noise_freshness`` returning "" always (the reused vector is not named);
    its draw-count comparison inverted (``recorder.drawn > promised``: the correct learner and
    the harmless extra draw are flagged).
    """
    from dp_experts_env.evaluation.audit import noise_freshness

    sc = _rival()
    assert noise_freshness("noisy-clipped-hedge", sc) == ""
    with _registered("ctl-extra-draw", _ExtraDraw) as name:
        assert noise_freshness(name, sc) == ""
    with _registered("ctl-noise-reused", _NoiseReused) as name:
        found = noise_freshness(name, sc)
    assert found, "reused noise not flagged"
    assert "fresh Laplace coordinates" in found or "repeat" in found or "same noise" in found


def _result(**kw):
    from dp_experts_env.privacy.audit import AuditResult

    base = dict(
        epsilon_lower_bound=0.4, claimed_epsilon=1.0, claimed_delta=0.0, passed=True,
        event="e", counts=(900, 500), n_heldout=1000, n_runs=2000, alpha=1e-3,
        detectable_epsilon=1.3,
    )  # fmt: skip
    return AuditResult(**{**base, **kw})


def test_a_passed_statistical_test_with_stale_noise_is_a_violation():
    """AuditReport's verdict: the statistical test passed, the freshness check did not.

    Mutants caught: ``violation`` ignoring ``stale_noise`` (exit code 0 for reused noise); the
    verdict returning the test's plain pass when the freshness check failed.
    """
    from dp_experts_env.evaluation.audit import AuditReport

    def report(stale):
        return AuditReport(
            agent="x", multiplier=1.0, result=_result(), chosen=None, candidates=[], claim=None,
            selection_runs=1, test_runs=1000, scenarios_total=1, skipped=[], time_budget=1.0,
            seconds=0.0, stale_noise=stale,
        )  # fmt: skip

    clean = report("")
    assert not clean.violation and clean.verdict.startswith("no violation found (could detect")
    stale = report("call 0 of add_laplace drew the same noise in 64 of 64 runs")
    assert stale.violation
    assert stale.verdict.startswith("VIOLATION: fresh-noise check failed (call 0")
    assert "noise freshness: call 0" in stale.summary()


def test_a_pass_whose_event_can_show_nothing_is_inconclusive_never_a_plain_pass():
    """Known answers for AuditResult.verdict: an event with no power (``detectable_epsilon``
    inf) is inconclusive, and a never-seen event says no run count can be read off it.

    Mutants caught: ``inconclusive`` requiring a finite power (``math.isfinite(power) and ...``:
    a powerless pass would then print "no violation found"); the ``runs_needed`` inf branch
    dropped or swapped with the finite one.
    """
    blind = _result(detectable_epsilon=math.inf, runs_needed=math.inf, counts=(0, 0))
    assert blind.inconclusive
    assert blind.verdict.startswith("inconclusive at this run count")
    assert "the event was never seen, so no run count can be read off it" in blind.verdict
    assert "no violation found (" not in blind.verdict
    finite = _result(detectable_epsilon=5.0, runs_needed=12_345.0)
    assert finite.inconclusive and "about 1.23e+04 runs per side would" in finite.verdict
    powered = _result(detectable_epsilon=1.9)  # < 2 x the claim: an informative pass
    assert not powered.inconclusive and powered.verdict == (
        "no violation found (could detect eps > 1.9)"
    )
    assert _result(passed=False, epsilon_lower_bound=1.7).verdict.startswith(
        "VIOLATION: epsilon >= 1.700 > claimed 1"
    )


def test_oco_summary_says_inconclusive_before_pass():
    """OCOAuditResult.summary on known results: powerless pass, informative pass, violation.

    Mutants caught: the ``inconclusive`` branch after ``passed`` (a powerless pass reads "no
    violation found"); the violation branch reached for a pass.
    """
    from dp_experts_env.privacy.audit_oco import OCOAuditResult

    base = dict(
        epsilon_lower_bound=0.2, claimed_epsilon=1.0, claimed_delta=0.0, passed=True,
        event="e", counts=(30, 20), n_heldout=1000, n_runs=2000, alpha=1e-3,
    )  # fmt: skip
    blind = OCOAuditResult(**base, detectable_epsilon=math.inf)
    assert blind.summary().startswith("inconclusive at this run count"), blind.summary()
    good = OCOAuditResult(**base, detectable_epsilon=1.4)
    assert good.summary().startswith("no violation found (could detect eps > 1.4)")
    bad = OCOAuditResult(**{**base, "passed": False, "epsilon_lower_bound": 1.6})
    assert bad.summary().startswith("VIOLATION: epsilon >= 1.600")


@pytest.mark.slow
def test_an_over_noised_oco_learner_passes_and_shows_less_than_the_correct_one():
    """Harmless change for the OCO audit: DP-FTRL (tree) with twice the noise its claim needs.

    T = 3, the first gradient +1 vs -1 (where the x0.5 mutant is caught at these sizes, see
    tests/test_oco_audit.py); 20,000 runs a side, seed 1. Measured: epsilon >= 0.79 for the
    correct learner, >= 0.35 for the over-noised one (claim 1). Mutant caught: an over-strict pass
    rule that flags leakage visible below the claim (``lb <= claimed_epsilon / 4`` in
    ``audit.selection.select_and_test``): the harmless change is then a "violation".
    """
    from agents.oco_baselines import DPFTRLOCO
    from dp_experts_env.evaluation.audit_oco import audit_oco_agent

    def factory(scale):
        def build(num_envs, seed):
            return DPFTRLOCO(
                1, 3, epsilon=1.0, num_envs=num_envs, seed=seed, noise_multiplier=scale
            )

        return build

    x = np.zeros((3, 1))
    x[0, 0] = 1.0
    xn = x.copy()
    xn[0, 0] = -1.0
    right = audit_oco_agent(factory(1.0), x, xn, n_runs=20_000, seed=1)
    over = audit_oco_agent(factory(2.0), x, xn, n_runs=20_000, seed=1)
    assert over.passed, over.summary()
    assert over.epsilon_lower_bound < right.epsilon_lower_bound - 0.2, (
        over.summary(), right.summary(),
    )  # fmt: skip


# ----------------------------------------------------------------------------- table
def _summary(rows):
    out = []
    for env, agent, lo, hi in rows:
        out.append({
            "env": env, "agent": agent, "epsilon": math.inf, "dynamic_regret_mean": (lo + hi) / 2,
            "ci_low": lo, "ci_high": hi, "dynamic_regret_iqm": (lo + hi) / 2,
        })  # fmt: skip
    table = pd.DataFrame(out)
    table.insert(1, "rank", table.groupby("env").cumcount() + 1)
    return table


def test_a_tie_never_crosses_an_env_boundary():
    """The first row of env B overlaps the last row of env A: it is rank 1, not ``1=``.

    Mutant caught: ``ties`` ignoring the env (``tied = lo <= previous_hi``).
    """
    table = _summary([("A", "a", 5.0, 9.0), ("B", "b", 1.0, 2.0), ("B", "c", 1.5, 3.0)])
    assert ties(table) == [False, False, True]
    frame = pd.DataFrame({"agent": list("abc"), "epsilon": math.inf, "env": list("ABB")})
    text = terminal_table(frame, table, "dynamic_regret")
    ranks = [line.split()[1] for line in text.splitlines() if line[:2] in ("A ", "B ")]
    assert ranks == ["1", "1", "2="]


def test_summarize_ranks_and_scores_known_means():
    """Synthetic final rows with known regrets: per seed, hedge has half uniform's regret and
    ftl 1.5x; the ranks are hedge, uniform, ftl and the scores 0.5, 0, -0.5 exactly.

    Mutants caught: the sort descending (ranks reversed); the score as ``values / ref`` or
    against another seed's baseline; the ties of well separated rows marked.
    """
    rows = []
    for seed in range(8):
        base = 100.0 + 10.0 * seed
        for agent, factor in (("uniform", 1.0), ("hedge", 0.5), ("ftl", 1.5)):
            rows.append(dict(
                env="E", agent=agent, epsilon=math.inf, seed=seed, round=50,
                dynamic_regret=factor * base, static_regret=0.0, certified=True,
            ))  # fmt: skip
    table = summarize(pd.DataFrame(rows), "dynamic_regret", n_boot=200)
    assert list(table["agent"]) == ["hedge", "uniform", "ftl"]
    assert list(table["rank"]) == [1, 2, 3]
    np.testing.assert_allclose(table["score_vs_uniform"], [0.5, 0.0, -0.5], atol=1e-12)
    np.testing.assert_allclose(table["dynamic_regret_mean"], [67.5, 135.0, 202.5])
    assert ties(table) == [False, False, False]


# ----------------------------------------------------------------------------- verify
def test_verify_says_an_unfinished_sweep_or_a_missing_grid_is_not_current(tmp_path, capsys):
    """A folder whose every run is current but whose sweep did not finish (manifest not marked
    complete), or whose grid.json is gone, is NOT current; the untouched folder is (control).

    Mutants caught: ``verify_folder`` not reading ``complete`` (an interrupted sweep reported
    current, exit 0); the grid.json-missing problem dropped; ``FolderReport.ok`` ignoring
    ``problems``.
    """
    import json

    from dp_experts_env import cli
    from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
    from dp_experts_env.evaluation.store import MANIFEST
    from dp_experts_env.evaluation.verify import verify_folder

    env = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 30, "n_shifts": 1})
    out = tmp_path / "out"
    grid = Grid(agents=["uniform", "hedge"], envs=[env], n_seeds=2, n_record=4)
    run_grid(grid, out, backend="serial", progress=False)
    assert verify_folder(out).ok and verify_folder(out).current == 4
    manifest = out / MANIFEST
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "complete": False}))
    report = verify_folder(out)
    assert report.current == 4 and not report.ok
    assert any("did not finish" in p for p in report.problems)
    assert cli.main(["verify", str(out)]) == 1
    assert "NOT current" in capsys.readouterr().out
    manifest.write_text(json.dumps(data))
    (out / "grid.json").unlink()
    report = verify_folder(out)
    assert report.problems == ["grid.json is missing"] and not report.ok


# ----------------------------------------------------------------------------- figures
def test_the_aggregate_figure_draws_the_aggregate_table_best_on_top():
    """plot_aggregate's points are aggregate.csv's: per learner the filled IQM point, hollow mean
    and interval bar equal :func:`~dp_experts_env.evaluation.report.aggregate_table`'s row, and
    the best learner is the top row. Known answer: on 2 envs x 8 seeds hedge has half uniform's
    regret in every run (score 0.5: uniform's regret is a constant per env, and scores are
    normalised by its per-env mean), ftl 1.2x-2.2x, skewed over seeds (IQM and mean apart).

    Mutants caught: the ``iloc[::-1]`` dropped (best at the bottom, labels on the wrong rows);
    the filled point drawn at the mean or the bar at another learner's interval.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dp_experts_env.evaluation.plots import plot_aggregate
    from dp_experts_env.evaluation.report import aggregate_table

    rows = []
    for env, base in (("E[horizon=50]", 100.0), ("E[horizon=100]", 250.0)):
        for seed in range(8):
            # ftl's factor varies by seed so its IQM and mean differ (the markers are told apart)
            for agent, factor in (("uniform", 1.0), ("hedge", 0.5), ("ftl", 1.2 + 0.02 * seed**2)):
                rows.append(dict(
                    env=env, env_id="E", agent=agent, epsilon=math.inf, seed=seed, round=50,
                    dynamic_regret=factor * base, static_regret=0.0, certified=True,
                ))  # fmt: skip
    frame = pd.DataFrame(rows)
    table = aggregate_table(frame).set_index("agent")
    assert table.loc["hedge", "iqm"] == pytest.approx(0.5) and table.loc["uniform", "iqm"] == 0
    assert table.loc["ftl", "iqm"] != pytest.approx(table.loc["ftl", "mean"], abs=1e-3)
    fig = plot_aggregate(frame)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "hedge" and labels[0] == "ftl"  # y grows upward: best on top
    for y, agent in enumerate(labels):
        row = table.loc[agent]
        at = [line for line in ax.get_lines() if list(line.get_ydata()) == [y] * len(
            line.get_ydata())]  # fmt: skip
        bar = [line for line in at if len(line.get_xdata()) == 2]
        filled = [
            ln for ln in at if len(ln.get_xdata()) == 1 and ln.get_markerfacecolor() != "none"
        ]
        hollow = [
            ln for ln in at if len(ln.get_xdata()) == 1 and ln.get_markerfacecolor() == "none"
        ]
        assert len(bar) == len(filled) == len(hollow) == 1, agent
        np.testing.assert_allclose(bar[0].get_xdata(), [row["iqm_low"], row["iqm_high"]])
        np.testing.assert_allclose(filled[0].get_xdata(), [row["iqm"]])
        np.testing.assert_allclose(hollow[0].get_xdata(), [row["mean"]])
    plt.close(fig)
