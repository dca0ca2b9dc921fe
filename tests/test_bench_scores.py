"""Known answers of the card's scores (dp_experts_env/bench/scores.py, docs/bench.md "Scores").

Controls: the no-learning control scores 0 and the best non-private reference 1 (exactly, as
means); a planted learner that copies a reference scores what that reference scores (exactly
for the deterministic OGD, within 3 standard errors for the randomised Hedge), and a planted
copy of the control what the control scores (within 3 standard errors); adding other learners
to a task's grid (the harmless change the reference set relies on) leaves every score bit for
bit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_bench_protocol import tiny_protocol

from agents.full_info import Hedge
from agents.oco_baselines import OGD
from dp_experts_env.bench.card import build_card
from dp_experts_env.bench.runner import Entrant, TaskRows, play_tasks
from dp_experts_env.bench.scores import capability_scores, run_scores, task_scale, task_scores


def _rows(values: dict[str, list[float]], metric: str = "static_regret") -> TaskRows:
    from dp_experts_env.bench.protocol import load_protocol

    task = load_protocol().tasks[2]  # anti-lazy: static_regret
    records = [
        {"agent": a, "epsilon": math.inf, "seed": i, metric: v}
        for a, vs in values.items()
        for i, v in enumerate(vs)
    ]
    return TaskRows(task, pd.DataFrame(records), "uniform", ("hedge", "fixed-share"))


def test_hand_computed_scores() -> None:
    """C = 10, B = 6 (fixed-share): a run at 8 scores 0.5, at 4 scores 1.5, at 12 scores -0.5."""
    rows = _rows(
        {
            "uniform": [9.0, 11.0],
            "hedge": [7.0, 9.0],
            "fixed-share": [5.0, 7.0],
            "me": [8.0, 4.0, 12.0],
        }
    )
    scale = task_scale(rows)
    assert (scale["control_mean"], scale["best_mean"], scale["best_reference"]) == (
        10.0,
        6.0,
        "fixed-share",
    )
    scores = task_scores(rows, "me", (math.inf,), scale)["inf"]
    np.testing.assert_allclose(scores["_runs"], [0.5, 1.5, -0.5])
    assert scores["mean"] == pytest.approx(0.5)
    assert scores["mean_low"] <= 0.5 <= scores["mean_high"]
    assert task_scores(rows, "uniform", (math.inf,), scale)["inf"]["mean"] == 0.0
    assert task_scores(rows, "fixed-share", (math.inf,), scale)["inf"]["mean"] == 1.0


def test_a_task_without_a_scale_is_not_scored() -> None:
    """Mutant scale: the best reference no better than the control (or within min_gap)."""
    worse = _rows({"uniform": [5.0, 5.0], "hedge": [6.0, 6.0], "fixed-share": [7.0, 5.0]})
    assert "no reference learner beats the control" in task_scale(worse)["reason"]
    assert task_scores(worse, "hedge", (math.inf,), task_scale(worse)) == {}
    close = _rows({"uniform": [10.0, 10.0], "hedge": [9.0, 9.0], "fixed-share": [9.5, 9.5]})
    assert task_scale(close, min_gap=0.0)["reason"] == ""
    assert "20%" in task_scale(close, min_gap=0.2)["reason"]


def test_capability_aggregate_is_stratified_over_tasks() -> None:
    a = {"1": {"_runs": np.array([0.0, 1.0])}, "inf": {"_runs": np.array([1.0, 1.0])}}
    b = {"1": {"_runs": np.array([2.0, 2.0, 2.0, 2.0])}}
    out = capability_scores({"a": a, "b": b, "c": {}}, {"cap": ["a", "b", "c"], "none": ["c"]})
    assert set(out["cap"]) == {"1"}  # inf is missing on task b: no aggregate there
    assert out["cap"]["1"]["mean"] == pytest.approx(1.5)  # pooled runs: (0 + 1 + 8) / 6
    assert out["cap"]["1"]["tasks"] == 2
    assert out["cap"]["1"]["mean_low"] <= 1.5 <= out["cap"]["1"]["mean_high"]
    assert out["none"] == {}


@pytest.fixture
def planted():
    """Register copies of OGD, Hedge and uniform under new names; removed afterwards."""
    from agents import registry
    from agents.full_info import Uniform

    saved = dict(registry._REGISTRY)

    class CopyOGD(OGD):
        """A planted copy of OGD (bench tests)."""

    class CopyHedge(Hedge):
        """A planted copy of Hedge (bench tests)."""

    class CopyUniform(Uniform):
        """A planted copy of the uniform control (bench tests)."""

    registry.register("bench-copy-ogd", private=False, summary="copy of ogd")(CopyOGD)
    registry.register("bench-copy-hedge", private=False, summary="copy of hedge")(CopyHedge)
    registry.register("bench-copy-uniform", private=False, summary="copy")(CopyUniform)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def _card(played, protocol, name):
    return build_card(
        protocol,
        Entrant(name, {}),
        played,
        quick=True,
        command="test",
        scoring="test",
        fingerprint="test",
    )


def _means(card) -> dict[str, float]:
    return {t["name"]: t["scores"]["inf"]["mean"] for t in card["tasks"] if t["scores"]}


@pytest.mark.slow
def test_known_answers_on_played_tasks(tmp_path, planted) -> None:
    """Control 0, best reference 1, planted copies score their original's score."""
    protocol = tiny_protocol(("shift", "anti-lazy", "oco-stochastic"), horizon=400, seeds=8)
    names = [
        "uniform",
        "hedge",
        "fixed-share",
        "ogd",
        "ftrl-oco",
        "lazy-ftrl-oco",
        "bench-copy-ogd",
        "bench-copy-hedge",
        "bench-copy-uniform",
    ]
    played = play_tasks(protocol, [Entrant(n, {}) for n in names], tmp_path, backend="serial")
    cards = {n: _card(played, protocol, n) for n in names}
    for task in ("shift", "anti-lazy"):
        assert abs(_means(cards["uniform"])[task]) < 1e-12
        best = cards["uniform"]["tasks"][
            [t["name"] for t in cards["uniform"]["tasks"]].index(task)
        ]["scale"]["best_reference"]
        assert _means(cards[best])[task] == pytest.approx(1.0, abs=1e-12)
        # The randomised copies play other random streams on the same losses: the tolerance is
        # 3 standard errors of the difference of the two mean scores (runs independent).
        scale = task_scale(played[task])
        for copy, original in (("bench-copy-hedge", "hedge"), ("bench-copy-uniform", "uniform")):
            a = run_scores(played[task], copy, math.inf, scale)
            b = run_scores(played[task], original, math.inf, scale)
            se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
            assert abs(a.mean() - b.mean()) <= 3 * se, (task, copy, a.mean(), b.mean(), se)
            assert a.mean() == _means(cards[copy])[task]
    oco = _means(cards["ogd"])["oco-stochastic"]
    assert _means(cards["bench-copy-ogd"])["oco-stochastic"] == oco  # deterministic: exact
    centre = [t for t in cards["ogd"]["tasks"] if t["name"] == "oco-stochastic"][0]["scale"]
    assert centre["control"] == "centre"


@pytest.mark.slow
def test_other_learners_in_the_grid_change_no_score(tmp_path) -> None:
    """Harmless change: a card read from a grid with more learners equals the card alone."""
    protocol = tiny_protocol(("shift", "bandit"))
    alone = play_tasks(
        protocol, [Entrant("noisy-clipped-hedge", {})], tmp_path / "a", backend="serial"
    )
    crowd = [Entrant(n, {}) for n in ("noisy-clipped-hedge", "limited-updates", "ldp-exp4")]
    crowded = play_tasks(protocol, crowd, tmp_path / "b", backend="serial")
    a = _card(alone, protocol, "noisy-clipped-hedge")
    b = _card(crowded, protocol, "noisy-clipped-hedge")
    assert a["tasks"] == b["tasks"] and a["capabilities"] == b["capabilities"]
    assert "bandit" not in alone  # nobody of that kind: the task is not run
