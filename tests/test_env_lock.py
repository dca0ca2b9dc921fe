"""Behaviour lock: every (env id, family) still plays bit for bit as before the restructuring.

The reference hashes in ``data/env_hashes.json`` were computed at the revision before the
environment code was restructured (see ``_env_lock.py`` for what is hashed and how to
regenerate them after a deliberate, documented behaviour change).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _env_lock import cases, episode_hash

REFERENCE = json.loads((Path(__file__).parent / "data" / "env_hashes.json").read_text())
CASES = list(cases())


def test_every_locked_case_still_exists() -> None:
    # A family or env id that disappears would otherwise just drop out of the lock.
    current = {f"{env_id}/{family}" for env_id, family in CASES}
    assert sorted(set(REFERENCE) - current) == []


@pytest.mark.parametrize(("env_id", "family"), CASES, ids=[f"{i}/{f}" for i, f in CASES])
def test_episodes_unchanged(env_id: str, family: str) -> None:
    key = f"{env_id}/{family}"
    if key not in REFERENCE:
        pytest.skip(f"{key} was added after the lock was taken (no reference hash)")
    assert episode_hash(env_id, family) == REFERENCE[key]
