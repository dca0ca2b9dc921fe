"""What an audit searched, chose and found: :class:`Candidate` and :class:`AuditReport`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dp_experts_env.audit.bounds import AuditResult
from dp_experts_env.audit.selection import Selection

__all__ = ["UNDECLARED", "AuditReport", "Candidate"]

#: The loud warning for a private learner that declares nothing.
UNDECLARED = (
    "{agent} declares no mechanisms (agent.declaration is None): the audit cannot derive its "
    "scenarios and checks from what runs and tries a longer generic search (long games, "
    "T <= 64), which misses what it does not try; declare them (docs/own_learner.md)"
)


@dataclass(frozen=True, eq=False)
class Candidate:
    """A scenario scored on selection runs: its best event per view."""

    scenario: Any  # a Scenario, or an OCOScenario
    view: str  # "actions" or "releases"
    selection: Selection | None
    seconds: float
    claimed_epsilon: float

    @property
    def score(self) -> float:
        """The bound a test was predicted to give (0 when nothing separates the sides)."""
        return self.selection.score if self.selection is not None else 0.0

    @property
    def margin(self) -> float:
        """Predicted bound minus the claim: how far the evidence is expected to reach past it."""
        return self.score - self.claimed_epsilon


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit_learner` searched, chose and found.

    Attributes:
        agent: the learner audited (name, or the factory's repr).
        multiplier: noise factor (1 for the learner as built; 0.5, 0 for mutants).
        result: the test of the chosen event on fresh runs (bound, counts, power).
        chosen: the candidate tested (scenario and view).
        candidates: every candidate scored, in search order.
        claim: the learner's claim in the chosen scenario.
        selection_runs: runs per side and scenario in the search (``test_runs``: in the test).
        scenarios_total: scenarios available (:meth:`searched` were scored).
        skipped: scenarios the learner refused to be built with (and why).
        time_budget: seconds allowed for the search (``seconds``: search and test took).
        declaration: the declared mechanisms in words ("": generic scenarios only).
        stale_noise, foreign_noise: the noise freshness and provenance findings ("": none).
        paths: what the path-equivalence check compared, per setting.
        paths_differ: where block path and ``act`` differ ("" when equal).
        query_check: the query-sensitivity finding ("" when it holds).
        tree_check: the tree counter's part-level test (None without a tree).
        block_result: the chosen event counted on the test runs through the block entry point
            (None: no block path, a keyed scenario or a release view).
    """

    agent: str
    multiplier: float
    result: AuditResult
    chosen: Candidate | None
    candidates: list[Candidate]
    claim: Any
    selection_runs: int
    test_runs: int
    scenarios_total: int
    skipped: list[str]
    time_budget: float
    seconds: float
    declaration: str = ""
    stale_noise: str = ""
    foreign_noise: str = ""
    part_check: Any = None
    paths: str = ""
    paths_differ: str = ""
    block_result: AuditResult | None = None
    tree_check: Any = None
    query_check: str = ""

    @property
    def violation(self) -> bool:
        """True when a test bound exceeds the claim, or a noise, part or path check failed."""
        part = self.part_check is not None and self.part_check.violation
        block = self.block_result is not None and not self.block_result.passed
        return (
            not self.result.passed
            or bool(self.stale_noise)
            or bool(self.foreign_noise)
            or part
            or bool(self.paths_differ)
            or block
            or (self.tree_check is not None and self.tree_check.violation)
            or bool(self.query_check)
        )

    @property
    def verdict(self) -> str:
        """The test's verdict, or the check that failed (paths, freshness, provenance)."""
        if self.paths_differ and self.result.passed:
            return (
                "VIOLATION: the block path users run differs from act, so the audit of act "
                f"says nothing about it ({self.paths_differ})"
            )
        if self.query_check and self.result.passed:
            return f"VIOLATION of the declared sparse vector: {self.query_check}"
        tree = self.tree_check
        if tree is not None and tree.violation and self.result.passed:
            return f"VIOLATION of the declared tree counter: {tree.describe()}"
        block = self.block_result
        if block is not None and not block.passed and self.result.passed:
            return f"{block.verdict} (on the block path users run)"
        if self.stale_noise and self.result.passed:
            return f"VIOLATION: fresh-noise check failed ({self.stale_noise})"
        if self.foreign_noise and self.result.passed:
            return f"VIOLATION: noise-provenance check failed ({self.foreign_noise})"
        part = self.part_check
        if part is not None and part.violation and self.result.passed:
            return (
                f"VIOLATION of a declared part: {part.describe()}; the composition that "
                "certifies the claim assumes that part's epsilon, so the claim is not certified"
            )
        if part is not None:
            return f"{self.result.verdict}; part-level test: {part.describe()}"
        return self.result.verdict

    def searched(self) -> int:
        """Scenarios scored (each over every view the learner offers)."""
        return len({id(c.scenario) for c in self.candidates})

    def summary(self) -> str:
        """A few lines for the CLI: verdict, bound, event, scenario, budget."""
        res = self.result
        lines = [
            f"{self.agent}: {self.verdict}",
            f"  claim: {self.claim.summary() if self.claim is not None else 'none'}",
            f"  test: epsilon >= {res.epsilon_lower_bound:.3f} (confidence {1 - res.alpha:g}) on "
            f"{res.n_heldout} fresh runs per side; counts {res.counts[0]} vs {res.counts[1]}",
        ]
        if self.chosen is not None:
            lines += [
                f"  event ({self.chosen.view}): {res.event}",
                f"  scenario: {self.chosen.scenario.label}",
            ]
        lines.append(
            f"  search: {self.searched()} of {self.scenarios_total} scenarios x "
            f"{self.selection_runs} selection runs per side within a {self.time_budget:g} s "
            f"budget; {self.seconds:.1f} s in all"
        )
        if self.declaration:
            lines.append(f"  scenarios derived from the declaration: {self.declaration}")
        else:
            lines.append(
                "  WARNING: no declared mechanisms, generic scenarios only (with long games): "
                + UNDECLARED.format(agent=self.agent)
            )
        if self.stale_noise:
            lines.append(f"  noise freshness: {self.stale_noise}")
        if self.foreign_noise:
            lines.append(f"  noise provenance: {self.foreign_noise}")
        if self.part_check is not None:
            lines.append(f"  part-level test: {self.part_check.describe()}")
        if self.block_result is not None:
            lines.append(
                f"  the same test on the block path: epsilon >= "
                f"{self.block_result.epsilon_lower_bound:.3f}; counts "
                f"{self.block_result.counts[0]} vs {self.block_result.counts[1]}"
            )
        if self.tree_check is not None:
            lines.append(f"  part-level test: {self.tree_check.describe()}")
        if self.query_check:
            lines.append(f"  query sensitivity: {self.query_check}")
        if self.paths:
            lines.append(f"  paths: {self.paths}")
        if self.paths_differ:
            lines.append(f"  paths differ: {self.paths_differ}")
        if self.skipped:
            lines.append(f"  skipped {len(self.skipped)} scenario(s): {self.skipped[0]}")
        if self.multiplier != 1.0:
            lines.append(f"  mutant: noise x{self.multiplier:g}, claim unchanged")
        return "\n".join(lines)
