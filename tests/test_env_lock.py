"""Behaviour lock: every (env id, family) still plays as before the restructuring.

The reference arrays (``data/env_reference.xz``) and the exact hashes (``data/env_hashes.json``)
are written by ``_env_lock.py``, which says what is recorded and how and when to regenerate
them. Integers, flags and strings must be equal; floats agree to a relative tolerance of 1e-9
(``_lock_arrays.py``), since numpy's SIMD kernels for log and cos differ in the last bit between
CPUs. On the machine that recorded the reference the episodes are bit for bit equal; where only
the bytes differ the case passes and is named in the run's summary (``BYTE_REPORT``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _env_lock import REFERENCE, Recorder, cases, load_reference, record_case
from _lock_arrays import BYTE_REPORT, compare, load, save
from _lock_share import PathShare
from conftest import JIT_PATHS, use_jit_path

from dp_experts_env._jit import jit_enabled

REF_ARRAYS, REF_HASHES = load_reference()
CASES = list(cases())


#: Each case's episode, played once per path and run, or once per run where playing it took no
#: path decision (then the numpy half would run the compiled half's code: it reads its recording;
#: none of the cases takes one today). Controls: ``test_a_recording_is_shared_only_...``.
_SHARE = PathShare(record_case)


def _recorded(env_id: str, family: str, path: str) -> Recorder:
    """The case's episode on ``path`` (the caller has switched to it)."""
    return _SHARE((env_id, family), path)


def test_every_locked_case_still_exists() -> None:
    # A family or env id that disappears would otherwise just drop out of the lock.
    current = {f"{env_id}/{family}" for env_id, family in CASES}
    assert sorted(set(REF_ARRAYS) - current) == []
    assert sorted(set(REF_HASHES) - current) == []


@pytest.mark.parametrize("path", JIT_PATHS)
@pytest.mark.parametrize(("env_id", "family"), CASES, ids=[f"{i}/{f}" for i, f in CASES])
def test_episodes_unchanged(env_id: str, family: str, path: str, monkeypatch) -> None:
    """Every case on the compiled and on the numpy path (CI runs both: issue 25, item 3)."""
    use_jit_path(path, monkeypatch)
    key = f"{env_id}/{family}"
    if key not in REF_ARRAYS:
        pytest.skip(
            f"env lock: {key} has no reference in {REFERENCE.name} (added after the lock was "
            f"taken): record it with `PYTHONPATH=. python tests/_env_lock.py --update {key}`"
        )
    rec = _recorded(env_id, family, path)
    problems = compare(rec.arrays(), REF_ARRAYS[key])
    if not problems and key in REF_HASHES and rec.digest.hexdigest() != REF_HASHES[key]:
        BYTE_REPORT.add(f"{key} ({path})")  # informational: across CPUs only the tolerance holds
    shown = problems[:12] + ([f"... and {len(problems) - 12} more"] if len(problems) > 12 else [])
    assert not problems, (
        f"env lock: {key} ({path} path) differs from {REFERENCE.name} in {len(problems)} "
        "arrays:\n  "
        + "\n  ".join(shown)
        + "\nIf the change is deliberate (stated in the commit and the docs), re-record with "
        f"`PYTHONPATH=. python tests/_env_lock.py --update {key}`; a difference that only "
        "appears on another machine is a portability bug, not a reason to re-record."
    )


def test_a_recording_is_shared_only_where_it_took_no_path_decision(monkeypatch) -> None:
    """The locks' share (``_lock_share.PathShare``): a play that asks which path to take is
    played again on the other path and gives that path's answer (the mutant: sharing it anyway
    would answer True on the numpy path); a play that asks nothing is played once and read by
    both paths (the harmless case); each path reads its own recording again."""
    calls: list[str] = []

    def consulting(name: str) -> bool:
        calls.append(name)
        return jit_enabled()

    def pathless(name: str) -> list[str]:
        calls.append(name)
        return [name]

    for play, plays in ((consulting, 2), (pathless, 1)):
        share, calls[:] = PathShare(play), []
        use_jit_path("compiled", monkeypatch)
        compiled = share(("case",), "compiled")
        use_jit_path("numpy", monkeypatch)
        numpy = share(("case",), "numpy")
        assert share(("case",), "numpy") is numpy and share(("case",), "compiled") is compiled
        assert calls == ["case"] * plays, play.__name__
        if play is consulting:
            assert (compiled, numpy) == (True, False)
        else:
            assert numpy is compiled
    assert share(("other",), "numpy") == ["other"] and calls == ["case", "other"]


def test_the_comparison_holds_integers_exactly_and_floats_to_the_tolerance() -> None:
    ref = {"round": np.arange(5), "regret": np.array([0.0, 1e-13, 2.5, 40.0, -7.0])}
    assert compare(dict(ref), ref) == []
    ulp = {**ref, "regret": ref["regret"] * (1 + 4e-16) + 1e-15}  # last-bit differences pass
    assert compare(ulp, ref) == []
    moved = {**ref, "regret": ref["regret"] * np.array([1, 1, 1, 1 + 1e-8, 1])}
    (problem,) = compare(moved, ref)
    assert problem.startswith("regret: 1 of 5 values differ") and "(3,)" in problem
    (problem,) = compare({**ref, "round": ref["round"] + (ref["round"] == 3)}, ref)
    assert problem.startswith("round: 1 of 5 values differ (must be equal); first at (3,)")
    assert compare({"round": ref["round"]}, ref) == ["regret: missing (the reference has it)"]
    (problem,) = compare({**ref, "round": ref["round"].astype(float)}, ref)
    assert "dtype" in problem


def test_stored_references_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {
        "a|single/x": rng.normal(size=(50, 3)) * 1e3,
        "a|neighbour/x": rng.normal(size=(50, 3)),
        "a|flags": rng.random(7) < 0.5,
        "a|name": np.array(["box"]),
        "a|special": np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300]),
    }
    path = tmp_path / "ref.xz"
    save(path, arrays, lambda k: "a|single/x" if k == "a|neighbour/x" else None)
    back = load(path)
    assert compare(arrays, back) == []
    for key, value in arrays.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape
    rel = np.abs(back["a|single/x"] / arrays["a|single/x"] - 1)
    assert rel.max() <= 2.0**-41  # floats are stored rounded to 40 mantissa bits
