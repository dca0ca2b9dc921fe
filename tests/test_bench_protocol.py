"""The benchmark protocol as data (dp_experts_env/bench/protocol.py, docs/bench.md).

The pin: every shipped protocol version has its content hash written here, so a task changed
without a new version fails ``test_every_shipped_version_keeps_its_pinned_hash``.
``tiny_protocol`` (a few tasks of bench-v1 at T = 300) is shared by the other bench tests.
"""

from __future__ import annotations

import dataclasses

import pytest

from dp_experts_env.bench import load_protocol, protocol_versions
from dp_experts_env.bench.protocol import (
    Protocol,
    parse_protocol,
    protocol_text,
    task_feedback,
)
from dp_experts_env.bench.runner import applicability, task_grid

#: Content hash of every shipped version. A new version adds its line; an existing line never
#: changes (change the protocol by shipping a new version). bench-v2's changed once, before any
#: release: its learned task's label permutation (CHANGELOG.md).
PINNED = {
    "bench-v1": "16b1ec4a703f1e108032ec9ad970df84ceca949c6c806166b7f3462a69ff887f",
    "bench-v2": "3b7a3a7f73ce2d26404a51dfcfa3eee7a9b4ccf949fc6115eb191f9770ac04dc",
}


def tiny_protocol(
    names: tuple[str, ...] = ("shift", "anti-lazy", "bandit", "oco-stochastic"),
    horizon: int = 300,
    seeds: int = 4,
) -> Protocol:
    """A few bench-v1 tasks at a small horizon, epsilon in {1, inf}: for the tests.

    Naming bench-v2's ``learned-adversary`` draws the tasks from bench-v2.
    """
    base = load_protocol("bench-v2" if "learned-adversary" in names else "bench-v1")
    tasks = tuple(
        dataclasses.replace(t, sizes={**t.sizes, "horizon": horizon}, seeds=seeds)
        for t in base.tasks
        if t.name in names
    )
    return dataclasses.replace(
        base,
        version="bench-tiny",
        digest="tiny",
        epsilons=(1.0, float("inf")),
        tasks=tasks,
        quick_tasks=tasks,
    )


def test_every_shipped_version_keeps_its_pinned_hash() -> None:
    assert set(protocol_versions()) == set(PINNED), "pin the hash of every shipped version"
    for version in protocol_versions():
        assert load_protocol(version).digest == PINNED[version], (
            f"{version} changed: ship a new version instead of editing this one"
        )


def test_a_changed_task_changes_the_hash_and_a_comment_does_not() -> None:
    """Mutant: one task's horizon edited (caught). Harmless: a comment and blank lines added."""
    text = protocol_text("bench-v1")
    original = parse_protocol(text).digest
    mutant = text.replace("horizon = 10000, n_shifts = 4", "horizon = 10001, n_shifts = 4", 1)
    assert mutant != text
    assert parse_protocol(mutant).digest != original
    seeds_mutant = text.replace("seeds = 10\n", "seeds = 9\n", 1)
    assert parse_protocol(seeds_mutant).digest != original
    harmless = "# a comment\n\n" + text.replace("[[task]]", "\n# next task\n[[task]]")
    assert parse_protocol(harmless).digest == original


def test_bench_v1_lists_every_capability_with_quick_variants() -> None:
    p = load_protocol("bench-v1")
    assert p.capabilities() == [
        "tracking",
        "static-worst-case",
        "stationary",
        "adaptive",
        "bandit",
        "bandit-advice",
        "continuous",
        "real-data",
    ]
    assert p.epsilons == (0.5, 1.0, 2.0, 8.0, float("inf"))
    assert [t.name for t in p.quick_tasks] == [t.name for t in p.tasks]
    for full, quick in zip(p.tasks, p.quick_tasks, strict=True):
        assert quick.sizes["horizon"] < full.sizes["horizon"]
        assert quick.seeds < full.seeds
        assert (quick.env, quick.family, quick.metric) == (full.env, full.family, full.metric)
    assert {task_feedback(t) for t in p.tasks} == {"full", "bandit", "oco"}


def test_every_quick_task_builds_with_its_roster() -> None:
    """Each quick task's grid (control, references, one learner of its kind) validates."""
    from dp_experts_env.bench.runner import Entrant

    p = load_protocol("bench-v1")
    player = {"full": "hedge", "bandit": "exp3", "oco": "ogd"}
    for task in p.quick_tasks:
        grid = task_grid(p, task, [Entrant(player[task_feedback(task)], {})])
        grid.validate()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('metric = "dynamic_regret"', 'metric = "score"', 1), "metric"),
        (lambda t: t.replace('name = "switching"', 'name = "shift"', 1), "unique"),
        (lambda t: t.replace("min_gap = 0.2", "min_gap = 0.2\ncolour = 1", 1), "keys"),
        (lambda t: t.replace("seeds = 10\n", "seeds = 1\n", 1), "seeds"),
        (lambda t: t.replace("quick = {sizes", "quick = {horizon = 3, sizes", 1), "quick"),
        (lambda t: t.replace("epsilons = [0.5,", "epsilons = [-0.5,", 1), "epsilons"),
        (lambda t: t + "\n[[task]]\nname = 3\n", "missing"),
    ],
)
def test_bad_protocols_are_refused_by_name(edit, message) -> None:
    with pytest.raises(ValueError, match=message):
        parse_protocol(edit(protocol_text("bench-v1")))


def test_unknown_version_lists_the_shipped_ones() -> None:
    with pytest.raises(ValueError, match="bench-v1"):
        load_protocol("bench-v0")


def test_a_learner_plays_the_tasks_of_its_feedback_kind() -> None:
    p = load_protocol("bench-v1")
    kinds = {t.name: task_feedback(t) for t in p.tasks}
    for learner, plays in [
        ("noisy-clipped-hedge", {"full"}),
        ("ldp-exp4", {"bandit"}),
        ("p-comw", {"oco"}),
        ("uniform", {"full", "bandit"}),  # feedback "any": discrete actions, never OCO
    ]:
        for task in p.tasks:
            reason = applicability(learner, task)
            if kinds[task.name] in plays:
                assert reason == ""
            else:
                assert reason.startswith("n/a:") and kinds[task.name] in reason
