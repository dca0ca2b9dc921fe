"""`reproduce`'s base seeds and modes (issue 36 item 5, issue 39 item 4): ``--seed K``, three base
seeds by default with ``unstable`` when their verdicts differ, and claims.csv / report.md that
carry the mode and the seeds (rows of the other mode in the same folder are dropped, named)."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from dp_experts_env.cli import main
from dp_experts_env.evaluation.claims import (
    UNSTABLE,
    Claim,
    Control,
    Judgement,
    Point,
    Sweep,
    loglog_slope,
)
from dp_experts_env.evaluation.reproduce import DEFAULT_BASE_SEEDS, combine_seeds, run_claims


def _claim(name: str = "tiny-seeds") -> Claim:
    env = {"n_experts": 3, "n_shifts": 1, "gap": 0.3}
    pts = tuple(Point(float(t), {**env, "horizon": t}) for t in (60, 120, 240))
    sweep = Sweep("hedge", "hedge", "DPExperts-Shift-v0", pts, pts[:2], seeds=3, quick_seeds=2)
    return Claim(
        name, "textbook", "Hedge", "Hedge's regret grows at most like sqrt(T).", "slope",
        0.5, 0.5, "at_most", (sweep,), lambda rows: loglog_slope(rows["hedge"], "dynamic_regret"),
        x_label="T", control=Control("uniform"),
    )  # fmt: skip


def _table(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_combine_seeds_agreement_or_unstable():
    """Known answers: three equal verdicts keep it (the reason says so); one that differs makes
    the claim ``unstable`` with the three shown (planted: a holds at two seeds of three must not
    read as holds); one base seed is judged alone."""
    holds = Judgement("holds", "inside the band", "holds")
    inc = Judgement("inconclusive", "straddles", "inconclusive")
    j = combine_seeds((0, 1, 2), [holds, holds, holds])
    assert j.verdict == "holds" and "the same at base seeds 0, 1, 2" in j.reason
    j = combine_seeds((0, 1, 2), [holds, inc, holds])
    assert j.verdict == UNSTABLE
    assert "0: holds, 1: inconclusive, 2: holds" in j.reason
    assert combine_seeds((0, 1, 2), [inc, inc, inc]).verdict == "inconclusive"
    assert combine_seeds((7,), [inc]) is inc
    assert DEFAULT_BASE_SEEDS == (0, 1, 2)


def test_run_claims_refuses_bad_base_seeds(tmp_path):
    for bad in ((), (-1,), (0, 0), (1.5,), (True,)):
        with pytest.raises(ValueError, match="base_seeds"):
            run_claims([_claim()], tmp_path, quick=True, backend="serial", base_seeds=bad)


@pytest.mark.slow
def test_each_base_seed_is_its_own_experiment_and_the_csv_says_which(tmp_path):
    """Base seeds 0 and 1: other loss streams (other measurements), folders of their own (the
    seed-0 folders are those of a single-seed run, reused), the three columns filled and the
    report's header naming mode and seeds."""
    (one,) = run_claims([_claim()], tmp_path, quick=True, backend="serial")
    (two,) = run_claims([_claim()], tmp_path, quick=True, backend="serial", base_seeds=(0, 1))
    assert two["measured"] == one["measured"]  # the first seed is the row's measurement
    per_seed = two["seed_verdicts"].split("; ")
    assert [p.split(":")[0] for p in per_seed] == ["0", "1"]
    assert per_seed[0].split()[2] != per_seed[1].split()[2]  # other streams, other values
    assert (tmp_path / "runs" / "tiny-seeds" / "hedge@s1").is_dir()
    # The control runs at the first base seed only and is read at the others (its level does
    # not depend on the base seed): no control folder of base seed 1.
    folders = sorted(p.name for p in (tmp_path / "runs" / "tiny-seeds").iterdir())
    assert [f for f in folders if f.endswith("@s1")] == ["hedge@s1"], folders
    assert len(folders) == 3, folders  # hedge, hedge@s1 and the control's one folder
    (row,) = _table(tmp_path / "claims.csv")
    assert row["mode"] == "quick" and row["seeds"] == "0 1"
    report = (tmp_path / "report.md").read_text()
    assert "Mode: **quick**; base seeds: **0, 1**" in report
    assert f"At each base seed: {two['seed_verdicts']}." in report


@pytest.mark.slow
def test_rows_of_the_other_mode_are_dropped_and_named(tmp_path):
    """A quick run then a full run of another claim into the same folder: the quick row is
    dropped (named on the log), never shown beside the full one unlabelled."""
    import dp_experts_env.evaluation.paper_claims as paper_claims

    a, b = _claim("tiny-a"), _claim("tiny-b")
    registry = [a, b]
    monkey = pytest.MonkeyPatch()
    monkey.setattr(paper_claims, "get_claims", lambda names=None, quick=False: registry)
    try:
        run_claims([a], tmp_path, quick=True, backend="serial")
        log = io.StringIO()
        run_claims([b], tmp_path, quick=False, backend="serial", log=log)
        rows = _table(tmp_path / "claims.csv")
        assert [(r["claim"], r["mode"]) for r in rows] == [("tiny-b", "full")]
        assert "dropped the earlier verdicts of tiny-a" in log.getvalue()
        assert "another mode" in log.getvalue()
        # the harmless case: the same mode keeps the other claim's row
        run_claims([a], tmp_path, quick=False, backend="serial")
        assert [r["claim"] for r in _table(tmp_path / "claims.csv")] == ["tiny-a", "tiny-b"]
    finally:
        monkey.undo()


def test_cli_seed_must_be_non_negative(tmp_path, capsys):
    assert main(["reproduce", "cc-horizon-free", "--seed", "-1", "--out", str(tmp_path)]) == 2
    assert "--seed" in capsys.readouterr().err


def test_a_claim_copy_keeps_its_sweeps():
    # dataclasses.replace must keep a claim's gates (a copy for another name is a new claim)
    c = dataclasses.replace(_claim(), name="x", untestable="T = 10^6")
    assert c.untestable == "T = 10^6" and c.sweeps == _claim().sweeps


def test_cli_judges_at_three_base_seeds_by_default_and_one_with_seed(tmp_path, monkeypatch):
    """The command's default is (0, 1, 2); ``--seed K`` is (K,) (the runs themselves are the
    slow tests above: the call is intercepted here)."""
    from dp_experts_env.evaluation import reproduce

    seen = []

    def fake(claims, out, **kw):
        seen.append(kw["base_seeds"])
        return []

    monkeypatch.setattr(reproduce, "run_claims", fake)
    assert main(["reproduce", "cc-horizon-free", "--quick", "--out", str(tmp_path)]) == 0
    assert main(["reproduce", "cc-horizon-free", "--seed", "4", "--out", str(tmp_path)]) == 0
    assert seen == [(0, 1, 2), (4,)]


def test_verify_reads_a_quick_row_against_the_quick_registry(tmp_path):
    """The collapse claim's quick sweeps (other horizons) have their own code version: a
    current quick row is current (the mutant, checking it against the full registry, called it
    stale), and the same row labelled full is stale."""
    from dp_experts_env.evaluation.paper_claims import get_claims
    from dp_experts_env.evaluation.reproduce import claim_code_version, stale_claims

    (quick,) = get_claims(["ars-threshold-collapse"], quick=True)
    (full,) = get_claims(["ars-threshold-collapse"])
    assert claim_code_version(quick) != claim_code_version(full)
    row = {"claim": quick.name, "learner": "noisy-clipped-hedge", "code": claim_code_version(quick)}
    for mode, expected in (("quick", {}), ("full", {quick.name: "code changed since its verdict"})):
        (tmp_path / "claims.csv").write_text(
            "claim,learner,code,mode\n" + f"{row['claim']},{row['learner']},{row['code']},{mode}\n"
        )
        assert stale_claims(tmp_path) == expected, mode
