"""Reports of expensive, deterministic checks that tests in several modules read alike.

``check_agent(name, checks=[...])`` on a built-in learner with its default sizes and seeds is a
function of the learner's registered class, the checks asked for and the path the learners play
(compiled or numpy): its report is computed once per session for each of these and shared.
Tests that read a shared report only read it (a report is never changed). A test whose point is a
fresh computation calls ``check_agent`` itself. A cache hit consults the path only to build its
key (one ``jit_enabled`` call), not the play the report came from, so the numpy-path pass's watch
(tests/_path_split.py) would not see that play: only slow tests (never in that pass) read these
reports.
"""

from __future__ import annotations

from typing import Any

import agents
from dp_experts_env._jit import jit_enabled
from dp_experts_env.testing import check_agent

_REPORTS: dict[tuple, Any] = {}


def checked(name: str, checks: tuple[str, ...]) -> Any:
    """``check_agent(name, checks=list(checks))`` at its defaults, once per session and key."""
    key = (name, agents.spec(name).cls, tuple(checks), jit_enabled())
    if key not in _REPORTS:
        _REPORTS[key] = check_agent(name, checks=list(checks))
    return _REPORTS[key]
