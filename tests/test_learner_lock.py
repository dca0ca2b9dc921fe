"""Behaviour lock: every learner plays exactly the actions it played at revision 1e7bc86
(private learners at epsilon 1 and at epsilon = inf).

The reference (tests/data/learner_hashes.json) was written by ``tests/_learner_lock.py`` on that
revision; refactors that must not change behaviour (parameters as data, citations, speed-ups
claimed bit for bit) are checked against it. A change that alters a learner's random stream or
law on purpose regenerates the file and says why in its commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _learner_lock import SKIP, action_hash

import agents

REFERENCE = json.loads((Path(__file__).parent / "data" / "learner_hashes.json").read_text())
NAMES = sorted(a["name"] for a in agents.available() if a["name"] not in SKIP)
PRIVATE = sorted(a["name"] for a in agents.available() if a["private"] and a["name"] not in SKIP)


def test_the_reference_covers_every_learner():
    assert sorted(REFERENCE) == sorted(NAMES + [f"{name}@inf" for name in PRIVATE])


@pytest.mark.parametrize("name", NAMES)
def test_actions_are_unchanged(name):
    assert action_hash(name) == REFERENCE[name]


@pytest.mark.parametrize("name", PRIVATE)
def test_noiseless_limit_is_unchanged(name):
    """At epsilon = inf (the learner's non-private limit) the actions are unchanged too."""
    assert action_hash(name, float("inf")) == REFERENCE[f"{name}@inf"]


def test_the_lock_sees_a_changed_action(monkeypatch):
    """The hash depends on the actions: a learner that plays one action differently fails."""
    cls = agents.spec("hedge").cls
    original = cls.act

    def shifted(self, obs):
        action = original(self, obs)
        return (action + 1) % self.n_experts

    monkeypatch.setattr(cls, "act", shifted)
    assert action_hash("hedge") != REFERENCE["hedge"]
