"""Behaviour fingerprints key the leaderboard's rows (dp_experts_env/bench/fingerprint.py).

The planted cases: a learner whose behaviour is edited in place (its default learning rate
doubled, monkeypatched) changes its own fingerprint and no other; a harmless edit (a class
docstring, a method rewritten to return the same value) changes none. The scoring fingerprint
likewise: a changed formula is caught, a re-worded docstring passes.
"""

from __future__ import annotations

import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench import scores
from dp_experts_env.bench.fingerprint import (
    FINGERPRINT_HORIZON,
    fingerprint_tasks,
    fingerprints,
    scoring_fingerprint,
)
from dp_experts_env.bench.runner import Entrant

LEARNERS = ["uniform", "hedge", "noisy-clipped-hedge", "limited-updates", "exp3", "ogd"]
EDITED = "noisy-clipped-hedge"


@pytest.fixture(scope="module")
def protocol():
    return tiny_protocol(("shift", "bandit", "oco-stochastic"))


@pytest.fixture(scope="module")
def before(protocol):
    return fingerprints(protocol, [Entrant(n, {}) for n in LEARNERS])


def _edited_class():
    import agents

    return agents.spec(EDITED).cls


def test_fingerprints_are_reproducible_and_independent_of_company(protocol, before) -> None:
    assert len(set(before.values())) == len(LEARNERS)
    assert all(len(v) == 16 for v in before.values())
    alone = fingerprints(protocol, [Entrant(EDITED, {})])
    assert alone[EDITED] == before[EDITED]  # played with others or alone: the same rows
    assert fingerprints(protocol, [Entrant(n, {}) for n in LEARNERS]) == before
    with_params = fingerprints(protocol, [Entrant("hedge", {"eta": 0.5})])
    assert with_params["hedge[eta=0.5]"] != before["hedge"]


def test_an_edited_learner_stales_only_its_own_fingerprint(protocol, before, monkeypatch) -> None:
    cls = _edited_class()
    original = cls._default_eta
    monkeypatch.setattr(cls, "_default_eta", lambda self, scale: 2.0 * original(self, scale))
    after = fingerprints(protocol, [Entrant(n, {}) for n in LEARNERS])
    assert [n for n in LEARNERS if after[n] != before[n]] == [EDITED]


def test_a_docstring_or_refactor_edit_stales_nothing(protocol, before, monkeypatch) -> None:
    cls = _edited_class()
    original = cls._default_eta
    monkeypatch.setattr(cls, "__doc__", "Re-worded.")

    def refactored(self, scale):
        """Same value, other code."""
        value = original(self, scale)
        return value

    monkeypatch.setattr(cls, "_default_eta", refactored)
    assert fingerprints(protocol, [Entrant(n, {}) for n in LEARNERS]) == before


def test_fingerprint_tasks_keep_every_task_but_the_horizon(protocol) -> None:
    tasks = fingerprint_tasks(protocol)
    assert [t.name for t in tasks] == [t.name for t in protocol.tasks]
    for small, task in zip(tasks, protocol.tasks, strict=True):
        assert small.sizes == {**task.sizes, "horizon": FINGERPRINT_HORIZON}
        assert (small.env, small.family) == (task.env, task.family)


def test_duplicate_labels_are_refused(protocol) -> None:
    with pytest.raises(ValueError, match="unique labels"):
        fingerprints(protocol, [Entrant("hedge", {}), Entrant("hedge", {})])


def test_the_scoring_fingerprint_catches_a_changed_formula_only(monkeypatch) -> None:
    first = scoring_fingerprint()
    assert scoring_fingerprint() == first
    monkeypatch.setattr(scores.task_scale, "__doc__", "Re-worded.")
    assert scoring_fingerprint() == first
    monkeypatch.setattr(scores, "N_BOOT", 500)  # other bootstrap intervals
    assert scoring_fingerprint() != first
    monkeypatch.setattr(scores, "N_BOOT", 2000)
    original = scores.run_scores

    def shifted(rows, label, epsilon, scale):
        return original(rows, label, epsilon, scale) + 0.01

    monkeypatch.setattr(scores, "run_scores", shifted)
    changed = scoring_fingerprint()
    assert changed != first


def test_a_change_on_the_block_path_only_is_seen(protocol, before, monkeypatch) -> None:
    """Hedge's ``play_block`` (played on the compiled path only) edited: its fingerprint moves
    (the paths disagree), the others' do not."""
    from dp_experts_env._jit import jit_enabled

    if not jit_enabled():  # numba missing, or DP_EXPERTS_NO_JIT=1 (CI's numpy-path pass)
        pytest.skip("the compiled path is off: only the numpy path is played")
    import agents

    cls = agents.spec("hedge").cls
    original = cls.play_block

    def shifted(self, obs):
        return (original(self, obs) + 1) % obs.shape[-1]

    monkeypatch.setattr(cls, "play_block", shifted)
    after = fingerprints(protocol, [Entrant(n, {}) for n in LEARNERS])
    assert [n for n in LEARNERS if after[n] != before[n]] == ["hedge"]
