"""The privacy side of a card (dp_experts_env/bench/privacy.py) and the ``bench`` command.

The card reports what others decide: the accountant's certified epsilon (from the rows), the
default audit's verdict and the claims' verdicts. The tests check each is passed through as
decided (a violating audit reads ``violation``, a passing one ``pass``), that a ``--quick`` card
says what it did not run, and which claims apply to which kind of learner, each with a reason.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench.privacy import (
    QUICK_AUDIT,
    QUICK_CLAIMS,
    applicable_claims,
    audit_verdict,
    certified_epsilons,
    claim_verdicts,
    stated_claims,
)
from dp_experts_env.bench.runner import Entrant, play_tasks


@pytest.mark.filterwarnings("ignore:noisy-clipped-hedge with mode='paper' is NOT CERTIFIED")
def test_certified_epsilon_is_the_accountants(tmp_path) -> None:
    protocol = tiny_protocol(("shift",), horizon=100, seeds=2)
    played = play_tasks(protocol, [Entrant("noisy-clipped-hedge", {})], tmp_path, backend="serial")
    out = certified_epsilons(played, "noisy-clipped-hedge")
    assert set(out) == {"1", "inf"}
    assert out["1"]["certified"] is True and 0 < out["1"]["certified_epsilon"] <= 1.0
    assert out["inf"]["certified_epsilon"] == "inf"
    stated = stated_claims("noisy-clipped-hedge", {}, protocol.tasks[0], protocol.epsilons)
    assert stated["1"]["delta"] == 0.0 and stated["1"]["claim"].startswith("1-DP")
    assert "certified" in stated["1"]["claim"] and set(stated) == {"1", "inf"}
    gaussian = stated_claims("gaussian-dp-ftrl-oco", {}, tiny_protocol().tasks[-1], (1.0,))
    assert gaussian["1"]["delta"] > 0 and "(1, " in gaussian["1"]["claim"]
    assert stated_claims("hedge", {}, protocol.tasks[0], protocol.epsilons) == {
        "inf": {"delta": 0.0, "claim": "not private"}
    }
    paper = Entrant("noisy-clipped-hedge", {"mode": "paper"})  # reproduces an erratum
    played = play_tasks(protocol, [paper], tmp_path / "paper", backend="serial")
    assert certified_epsilons(played, paper.label)["1"]["certified"] is False


def test_quick_and_non_private_cards_say_what_was_not_run() -> None:
    quick = audit_verdict("noisy-clipped-hedge", {}, quick=True, private=True, feedback="full")
    assert quick["verdict"] == "not run" and quick["reason"] == QUICK_AUDIT
    assert "not run in --quick" in QUICK_AUDIT and "not run in --quick" in QUICK_CLAIMS
    none = audit_verdict("hedge", {}, quick=False, private=False, feedback="full")
    assert none["verdict"] == "n/a" and "non-private" in none["reason"]


@pytest.mark.parametrize("violation", [True, False])
def test_the_audit_verdict_is_passed_through(monkeypatch, violation) -> None:
    """The default audit's verdict at epsilon 1, as decided: violation (mutant) and pass."""
    from dp_experts_env.evaluation import audit, audit_oco

    calls = []

    def fake(name, **kw):
        calls.append((name, kw))
        return SimpleNamespace(violation=violation, summary=lambda: f"summary of {name}")

    monkeypatch.setattr(audit, "audit_learner", fake)
    monkeypatch.setattr(audit_oco, "audit_oco_learner", fake)
    for name, feedback in [("noisy-clipped-hedge", "full"), ("p-comw", "oco")]:
        out = audit_verdict(name, {"noise": "fast"}, quick=False, private=True, feedback=feedback)
        assert out == {
            "verdict": "violation" if violation else "pass",
            "reason": f"summary of {name}",
            "epsilon": 1.0,
        }
    # The default configuration: only the epsilon and the learner's own keywords.
    assert calls == [
        (n, {"epsilon": 1.0, "params": {"noise": "fast"}})
        for n in ("noisy-clipped-hedge", "p-comw")
    ]


def test_claims_apply_by_kind_with_reasons() -> None:
    from dp_experts_env.kinds import KINDS

    feedback = {spec.env_id: spec.feedback for spec in KINDS.values()}
    for name, kind in [("noisy-clipped-hedge", "full"), ("ldp-exp4", "bandit"), ("p-comw", "oco")]:
        listed = applicable_claims(name)
        applies = [c for c, reason in listed if not reason]
        assert applies, f"{name}: no claim applies"
        for claim in applies:  # every sweep in the learner's role is of the learner's kind
            roles = set(claim.roles())
            assert {feedback[s.env_id] for s in claim.sweeps if s.key in roles} == {kind}
        assert all(r == "" or r.startswith("n/a: ") for _, r in listed)
    hedge = dict((c.name, r) for c, r in applicable_claims("hedge"))
    assert any("non-private" in r for r in hedge.values())
    assert any("bandit feedback" in r for r in hedge.values())


def test_quick_claims_are_listed_not_run(tmp_path) -> None:
    records = claim_verdicts("ldp-exp4", {}, tmp_path, quick=True)
    assert {r["verdict"] for r in records} == {"n/a", "not run"}
    assert not any(tmp_path.iterdir())  # nothing ran
    for r in records:
        assert r["reason"] and r["claim"] and r["source"]


def test_full_claims_run_through_reproduce(monkeypatch, tmp_path) -> None:
    """The claims that apply run as ``reproduce --agent NAME --quick``; verdicts read back."""
    from dp_experts_env.evaluation import reproduce

    seen = {}

    def fake(claims, out, **kw):
        seen.update(kw, names=[c.name for c in claims])
        return [{"claim": c.name, "verdict": "holds", "reason": "r"} for c in claims]

    monkeypatch.setattr(reproduce, "run_claims", fake)
    records = claim_verdicts("p-comw", {"a": 1}, tmp_path, quick=False, backend="serial")
    assert seen["quick"] is True and seen["agent"] == "p-comw"
    assert seen["agent_params"] == {"a": 1}
    ran = [r["claim"] for r in records if r["verdict"] == "holds"]
    assert ran == seen["names"] == [c.name for c, r in applicable_claims("p-comw") if not r]


def test_cli_bench_writes_a_card(monkeypatch, tmp_path, capsys) -> None:
    from dp_experts_env.bench import command
    from dp_experts_env.cli import main

    tiny = tiny_protocol(("shift",), horizon=100, seeds=2)
    monkeypatch.setattr(command, "load_protocol", lambda version: tiny)
    out = tmp_path / "card"
    code = main(["bench", "hedge", "--quick", "--out", str(out), "--backend", "serial"])
    assert code == 0
    data = json.loads((out / "bench.json").read_text())
    assert data["command"] == f"dp-experts bench hedge --quick --out {out} --backend serial"
    assert data["headline_epsilon"] == "inf"  # non-private: its only epsilon
    assert data["capabilities"]["tracking"]["scores"]["inf"]["mean"] == pytest.approx(
        data["tasks"][0]["scores"]["inf"]["mean"]
    )
    assert "tracking" in capsys.readouterr().out
    args = ["bench", "hedge", "--quick", "--replay-stale", "--out", str(out), "--backend", "serial"]
    assert main(args) == 0  # the stored runs are read again
    again = json.loads((out / "bench.json").read_text())
    assert again["command"] == "dp-experts " + " ".join(args)
    assert again["capabilities"] == data["capabilities"]
    assert main(["bench", "no-such-learner", "--quick", "--out", str(out)]) == 2
    assert main(["bench", "--all", "hedge"]) == 2
    assert main(["bench", "noisy-clipped-hedge", "--set", "epsilon=2", "--out", str(out)]) == 2
    assert "epsilon is set by the protocol" in capsys.readouterr().err
    assert main(["bench", "hedge", "--set", "eta", "--out", str(out)]) == 2  # not key=value
    monkeypatch.undo()  # the real protocol loader: an unknown version is refused
    assert main(["bench", "hedge", "--protocol", "bench-v0", "--out", str(out)]) == 2
    assert math.isfinite(data["leaderboard"]["rows"][0]["overall"])
