"""Claim sweeps' rows played once per test run, shared by the slow ``reproduce`` runs of two files.

``tests/test_cheats_zoo.py`` runs each cheat through the claims it targets and
``tests/test_reproduce.py`` each claim with its no-learning control in the learner's role. A
claim's references (the sweeps outside the learner's role) and its control (``uniform`` in the
role) are the same sweeps in both, played with the same arguments: the first test to need one
plays it, the others read a copy. A sweep's rows depend on the claim (its name: folders, a custom
sweep's key), the sweep (learner, keywords, env, points, seeds, folder), the run's arguments
(quick, backend, jobs, address, noise, base seed), the learner class the name resolves to (a
plug-in reloaded in each test is another class) and the compiled or numpy path: all of them are
the key (:func:`rows_key`), so a cheat never reads another learner's rows.

Only the tests that ask for the fixture :func:`shared_sweep_rows` read the store; the tests whose
point is a fresh computation (resume, stale rows, a re-run claim) do not use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import agents
from dp_experts_env import _jit
from dp_experts_env.evaluation import reproduce

#: key -> the rows ``reproduce.sweep_rows`` returned for it (never handed out: copies are).
SHARED: dict[str, pd.DataFrame] = {}
#: every class a key names, kept alive: a collected class's id could be reused by a new one.
_KEYED_CLASSES: dict[int, type] = {}


def rows_key(claim: Any, sweep: Any, run: dict[str, Any]) -> str:
    """Everything a sweep's rows depend on (module docstring), as one string."""
    cls = agents.spec(sweep.agent).cls
    _KEYED_CLASSES.setdefault(id(cls), cls)
    learner = (f"{cls.__module__}.{cls.__qualname__}", id(cls))
    return repr((claim.name, sweep, sorted(run.items()), learner, _jit.jit_enabled()))


@pytest.fixture
def shared_sweep_rows() -> Iterator[dict[str, pd.DataFrame]]:
    """``reproduce.sweep_rows`` reading and filling :data:`SHARED` for this test."""
    played = reproduce.sweep_rows

    def cached(claim: Any, sweep: Any, out: Any, **run: Any) -> pd.DataFrame:
        key = rows_key(claim, sweep, run)
        if key not in SHARED:
            SHARED[key] = played(claim, sweep, out, **run)
        return SHARED[key].copy()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reproduce, "sweep_rows", cached)
        yield SHARED
