"""The one search loop of every audit, and the path check it runs.

:func:`search_scenarios` scores candidate scenarios in order within a time budget and returns the
candidate whose predicted bound reaches farthest past its claim; the learner audits of
:mod:`dp_experts_env.audit.learner` (discrete actions) and :mod:`dp_experts_env.audit.oco`
(continuous actions) supply the scenarios and the scoring, then count the chosen event once on
test runs seeded from :data:`TEST_SEED_OFFSET` on (disjoint from every selection run).
:func:`path_check` is ``check_agent``'s path-equivalence check (block entry point against
``act``), which every audit of a learner with a block entry point runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dp_experts_env.audit.play import Outputs, ScenarioRefused
from dp_experts_env.audit.report import Candidate

__all__ = ["TEST_SEED_OFFSET", "first_difference", "path_check", "search_scenarios"]

TEST_SEED_OFFSET = 500_000_000_000  # test runs' seeds start here (selection runs below it)
#: test runs per side when neither the caller nor the chosen scenario says otherwise


def search_scenarios(
    agent: str,
    scenarios: Sequence[Any],
    score: Callable[[int, Any], tuple[list[Candidate], Any]],
    *,
    budget: float,
    began: float,
) -> tuple[list[Candidate], list[str], Candidate]:
    """The search loop of every audit: score scenarios in order within a time budget.

    ``score(i, scenario)`` plays the ``i``-th scenario on selection runs and returns its
    candidates (one per view) and the learner's claim there; a scenario the learner refuses
    (:class:`~dp_experts_env.audit.play.ScenarioRefused`) is skipped and named. The search stops
    when ``budget`` seconds since ``began`` are spent (after at least one candidate).

    Returns:
        ``(candidates, skipped, best)``: every candidate scored, the refusals, and the candidate
        whose predicted bound reaches farthest past its claim (the one the test counts).

    Raises:
        ValueError: a claim of epsilon = inf (nothing to audit), or no scenario could be played.
    """
    candidates: list[Candidate] = []
    skipped: list[str] = []
    for i, scenario in enumerate(scenarios):
        if candidates and time.perf_counter() - began > budget:
            break
        try:
            found, claim = score(i, scenario)
        except ScenarioRefused as err:  # e.g. a user parameter the scenario's settings refuse
            skipped.append(str(err))
            continue
        if not math.isfinite(claim.epsilon):
            raise ValueError(
                f"{agent} claims no privacy in scenario {scenario.label!r} (epsilon = inf); "
                "there is nothing to audit"
            )
        candidates += found
    if not candidates:
        raise ValueError(f"no scenario could be played with {agent}: " + "; ".join(skipped[:3]))
    return candidates, skipped, max(candidates, key=lambda c: c.margin)


def path_check(agent: str, params: Mapping[str, Any]) -> tuple[str, str]:
    """The path-equivalence check of ``check_agent`` (at ``params``): (what ran, what differs)."""
    from dp_experts_env.evaluation.paths import describe_settings, path_reports

    found = path_reports(agent, dict(params))
    differ = [f"{label}: {r.describe()}" for label, r in found if not r.equal]
    return describe_settings(found), "; ".join(differ)


def first_difference(act: Sequence[Outputs], block: Sequence[Outputs]) -> str:
    """Where the block path's test runs differ from act's (same seeds); "" when nowhere."""
    for side, (a, b) in enumerate(zip(act, block, strict=True)):
        differ = a.actions != b.actions
        if differ.any():
            run, t = np.argwhere(differ)[0]
            return (
                f"the audit's test runs: side {side}, run {run}: the block path plays "
                f"{b.actions[run, t]} at round {t + 1}, act {a.actions[run, t]}"
            )
    return ""
