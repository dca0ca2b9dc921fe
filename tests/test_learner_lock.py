"""Behaviour lock: every learner plays the actions it played at revision 1e7bc86 (private
learners at epsilon 1 and at epsilon = inf).

The reference actions (tests/data/learner_reference.xz) and their exact hashes
(tests/data/learner_hashes.json) are written by ``tests/_learner_lock.py``, which also says how
and when to regenerate them. Integer actions must be equal; float actions (the continuous-action
learners) agree to a relative tolerance of 1e-9 (tests/_lock_arrays.py), since numpy's SIMD
kernels for log, exp and cos differ in the last bit between CPUs. On the machine that recorded
the reference the actions are bit for bit equal; where only the bytes differ the learner passes
and is named in the run's summary (``BYTE_REPORT``).
"""

from __future__ import annotations

import numpy as np
import pytest
from _learner_lock import REFERENCE, actions, actions_hash, entries, load_reference
from _lock_arrays import BYTE_REPORT, compare
from _lock_share import PathShare
from conftest import JIT_PATHS, use_jit_path

import agents

REF_ARRAYS, REF_HASHES = load_reference()
ENTRIES = entries()
HOW_TO_UPDATE = (
    "If the change is deliberate (a new random stream or law, stated in the commit), re-record "
    "with `PYTHONPATH=. python tests/_learner_lock.py --update {name}`; a difference that only "
    "appears on another machine is a portability bug, not a reason to re-record."
)


#: Each entry's actions, played once per path and run, or once per run where playing them took
#: no path decision (most entries: the lock plays through ``act``); the numpy half then reads the
#: compiled half's recording (controls: test_env_lock.py, ``test_a_recording_is_shared_...``).
_SHARE = PathShare(actions)


def _played(entry: str, path: str) -> np.ndarray:
    """The entry's actions on ``path`` (the caller has switched to it)."""
    return _SHARE((entry,), path)


def test_every_locked_learner_still_exists():
    # A learner that disappears (or stops being private) would otherwise drop out of the lock.
    assert sorted(set(REF_ARRAYS) - set(ENTRIES)) == []
    assert sorted(set(REF_HASHES) - set(ENTRIES)) == []


@pytest.mark.parametrize("path", JIT_PATHS)
@pytest.mark.parametrize("entry", ENTRIES)
def test_actions_are_unchanged(entry, path, monkeypatch):
    """Each learner at epsilon 1 (``name``) and, if private, at epsilon = inf (``name@inf``),
    on the compiled and on the numpy path (CI runs both: issue 25, item 3)."""
    use_jit_path(path, monkeypatch)
    name = entry.partition("@")[0]
    if entry not in REF_ARRAYS:
        pytest.skip(
            f"learner lock: {entry} has no reference in {REFERENCE.name} (a learner added after "
            f"the lock was taken): record it with "
            f"`PYTHONPATH=. python tests/_learner_lock.py --update {name}`"
        )
    played = _played(entry, path)
    problems = compare({"actions": played}, {"actions": REF_ARRAYS[entry]})
    if not problems and entry in REF_HASHES and actions_hash(played) != REF_HASHES[entry]:
        BYTE_REPORT.add(f"{entry} ({path})")  # informational: across CPUs only the tolerance holds
    assert not problems, (
        f"learner lock: {entry} ({path} path) plays different actions than {REFERENCE.name}:\n  "
        + "\n  ".join(problems)
        + "\n"
        + HOW_TO_UPDATE.format(name=name)
    )


def test_the_lock_sees_a_changed_action(monkeypatch):
    """A learner that plays one action differently fails the lock, naming the learner."""
    cls = agents.spec("hedge").cls
    original = cls.act

    def shifted(self, obs):
        action = original(self, obs)
        return (action + 1) % self.n_experts

    monkeypatch.setattr(cls, "act", shifted)
    problems = compare({"actions": actions("hedge")}, {"actions": REF_ARRAYS["hedge"]})
    assert len(problems) == 1 and "actions" in problems[0] and "must be equal" in problems[0]


def test_the_lock_sees_a_changed_point(monkeypatch):
    """A continuous-action learner whose points move by 1e-7 (relative) fails the lock."""
    cls = agents.spec("ftrl-oco").cls
    original = cls.act
    monkeypatch.setattr(cls, "act", lambda self, obs: original(self, obs) * (1 + 1e-7))
    problems = compare({"actions": actions("ftrl-oco")}, {"actions": REF_ARRAYS["ftrl-oco"]})
    assert len(problems) == 1 and "rtol 1e-09" in problems[0]


def test_a_byte_difference_is_reported_never_failed(monkeypatch):
    """Bytes that differ from the reference machine's (values within the tolerance) pass and
    are named in the run's summary; the bytes actually played are not named."""
    name = "hedge (numpy)"
    genuine = name in BYTE_REPORT  # this machine's own difference stays reported
    monkeypatch.setitem(REF_HASHES, "hedge", "0" * 64)
    BYTE_REPORT.discard(name)
    test_actions_are_unchanged("hedge", "numpy", monkeypatch)
    assert name in BYTE_REPORT
    BYTE_REPORT.discard(name)
    monkeypatch.setitem(REF_HASHES, "hedge", actions_hash(_played("hedge", "numpy")))
    test_actions_are_unchanged("hedge", "numpy", monkeypatch)
    assert name not in BYTE_REPORT
    if genuine:
        BYTE_REPORT.add(name)
