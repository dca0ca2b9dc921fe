"""The one search loop of every audit, and the path check it runs.

Test runs are seeded from :data:`TEST_SEED_OFFSET` on, disjoint from every selection run.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float, check_int
from dp_experts_env.audit.bounds import AuditResult
from dp_experts_env.audit.play import Outputs, ScenarioRefused
from dp_experts_env.audit.report import AuditReport, Candidate
from dp_experts_env.audit.selection import Selection, evaluate_event

__all__ = [
    "TEST_SEED_OFFSET",
    "SearchArgs",
    "first_difference",
    "path_check",
    "search_args",
    "search_scenarios",
]

TEST_SEED_OFFSET = 500_000_000_000  # test runs' seeds start here (selection runs below it)


@dataclasses.dataclass(frozen=True)
class SearchArgs:
    """A learner audit's validated arguments (:func:`search_args`), shared by both searches."""

    runs: int | None
    selection_runs: int
    alpha: float
    seed: int
    budget: float
    multiplier: float
    user: dict[str, Any]

    @property
    def base(self) -> int:
        """The first selection run's seed; test runs start :data:`TEST_SEED_OFFSET` above."""
        return self.seed * 2 * TEST_SEED_OFFSET

    def test_runs(self, scenario: Any, default: int) -> int:
        """Test runs per side: the caller's, else the scenario's, else ``default``."""
        return self.runs or scenario.runs or default

    def with_params(self, scenarios: Sequence[Any], pairs: int | None) -> tuple[list[Any], int]:
        """The scenarios with the caller's parameters winning, cut to ``pairs``; and how many."""
        merged = [dataclasses.replace(s, params={**s.params, **self.user}) for s in scenarios]
        cut = merged if pairs is None else merged[: check_int("pairs", pairs, minimum=1)]
        return cut, len(merged)

    def count(self, selection: Selection | None, a: Any, b: Any, claim: Any, n: int,
              **share: float) -> AuditResult:  # fmt: skip
        """The chosen event counted on ``n`` test runs per side against ``claim``."""
        return evaluate_event(selection, a, b, alpha=self.alpha, n_runs=n, **share,
                              claimed_epsilon=float(claim.epsilon),
                              claimed_delta=float(claim.delta))  # fmt: skip

    def report(self, agent: str, found: tuple, *, claim: Any, n_test: int, total: int,
               declared: Any, began: float, **checks: Any) -> AuditReport:  # fmt: skip
        """The :class:`AuditReport` of a search ``found`` (:func:`search_scenarios`'s answer)."""
        candidates, skipped, best = found
        return AuditReport(
            agent=agent, multiplier=self.multiplier, chosen=best, candidates=candidates,
            claim=claim, selection_runs=self.selection_runs, test_runs=n_test,
            scenarios_total=total, skipped=skipped, time_budget=self.budget,
            seconds=time.perf_counter() - began,
            declaration=declared.describe() if declared is not None else "", **checks,
        )  # fmt: skip


def search_args(*, epsilon: float, params: Mapping[str, Any] | None, multiplier: float,
                runs: int | None, selection_runs: int, alpha: float, seed: int,
                time_budget: float) -> SearchArgs:  # fmt: skip
    """Validate a learner audit's arguments (ValueError / TypeError naming the bad one)."""
    fixed = None if runs is None else check_int("runs", runs, minimum=200)
    n_sel = check_int("selection_runs", selection_runs, minimum=200)
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=0.5, min_inclusive=False)
    seed = check_int("seed", seed, minimum=0)
    budget = check_float("time_budget", time_budget, minimum=0.0)
    mult = check_float("multiplier", multiplier, minimum=0.0)
    user = {**(params or {})}
    user.setdefault("epsilon", epsilon)
    return SearchArgs(fixed, n_sel, alpha, seed, budget, mult, user)


def search_scenarios(
    agent: str,
    scenarios: Sequence[Any],
    score: Callable[[int, Any], tuple[list[Candidate], Any]],
    *,
    budget: float,
    began: float,
) -> tuple[list[Candidate], list[str], Candidate]:
    """The search loop of every audit: score scenarios in order within a time budget.

    ``score(i, scenario)`` returns the scenario's candidates (one per view) and the learner's
    claim; refused scenarios (:class:`~dp_experts_env.audit.play.ScenarioRefused`) are skipped and
    named. The search stops after ``budget`` seconds (and at least one candidate).

    Returns:
        ``(candidates, skipped, best)``; ``best`` reaches farthest past its claim.

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


def first_difference(
    act: Sequence[Outputs | np.ndarray], block: Sequence[Outputs | np.ndarray]
) -> str:
    """Where the block path's test runs differ from act's (same seeds); "" when nowhere.

    Each side is :class:`~dp_experts_env.audit.play.Outputs` or an (n, T, d) array of OCO points.
    """
    for side, (a, b) in enumerate(zip(act, block, strict=True)):
        a, b = getattr(a, "actions", a), getattr(b, "actions", b)
        differ = a != b
        if differ.ndim == 3:
            differ = differ.any(axis=-1)
        if differ.any():
            run, t = np.argwhere(differ)[0]
            return (
                f"the audit's test runs: side {side}, run {run}: the block path plays "
                f"{b[run, t].tolist()} at round {t + 1}, act {a[run, t].tolist()}"
            )
    return ""
