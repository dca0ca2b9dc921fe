"""The privacy audit: search for evidence against a learner's claim, then test it once.

One package, two layers. The statistics work on recorded outputs only and sit in the privacy
layer (they import no learner): :mod:`~dp_experts_env.audit.bounds` (Clopper-Pearson bounds,
power, :class:`AuditResult`), :mod:`~dp_experts_env.audit.events` (the event families),
:mod:`~dp_experts_env.audit.selection` (select on selection runs, count on test runs; audits of
mechanisms and samples) and :mod:`~dp_experts_env.audit.oco_statistics` (events on released
points). The drivers play learners and sit in the evaluation layer:
:mod:`~dp_experts_env.audit.scenarios` (neighbouring pairs, derived from a learner's
declaration), :mod:`~dp_experts_env.audit.play` (one side of a scenario, through ``act`` or the
block entry point), :mod:`~dp_experts_env.audit.checks` (noise freshness and provenance, part,
tree and query checks), :mod:`~dp_experts_env.audit.report`,
:mod:`~dp_experts_env.audit.search` (:func:`search`, the one search loop of every audit, and the
path check) and :mod:`~dp_experts_env.audit.learner`, whose :func:`audit_learner` audits every
private learner, discrete or continuous (OCO learners' scenarios and views:
:mod:`~dp_experts_env.audit.oco`). ``dp-experts audit`` and
``dp_experts_env.testing.check_agent`` call :func:`audit_learner`.

Every public name of those modules is available here, loaded on first use (the statistics
import ``scipy.stats``). The former modules ``dp_experts_env.privacy.audit``,
``privacy.audit_oco``, ``evaluation.audit`` and ``evaluation.audit_oco`` re-export them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: Public name -> the module of this package that defines it.
_WHERE = {
    # bounds
    "AuditResult": "bounds",
    "clopper_pearson": "bounds",
    "detectable_epsilon": "bounds",
    "epsilon_lower_bound": "bounds",
    "INCONCLUSIVE_FACTOR": "bounds",
    "runs_needed": "bounds",
    # events
    "EventFamily": "events",
    "families_for": "events",
    "release_families": "events",
    "sequence_families": "events",
    # selection
    "audit_mechanism": "selection",
    "audit_samples": "selection",
    "check_audit_args": "selection",
    "evaluate_event": "selection",
    "select_and_test": "selection",
    "select_event": "selection",
    "Selection": "selection",
    # oco_statistics
    "audit_oco_paths": "oco_statistics",
    "check_gradient_pair": "oco_statistics",
    "encode_points": "oco_statistics",
    "OCOAuditResult": "oco_statistics",
    # play
    "build_learner": "play",
    "check_advice": "play",
    "MAX_RELEASES": "play",
    "noise_params": "play",
    "Outputs": "play",
    "play_game": "play",
    "play_scenario": "play",
    "relative_actions": "play",
    "ScenarioRefused": "play",
    # scenarios
    "audit_hints": "scenarios",
    "complement_pair": "scenarios",
    "declaration_of": "scenarios",
    "declared_kinds": "scenarios",
    "declares_releases": "scenarios",
    "default_scenarios": "scenarios",
    "derived_scenarios": "scenarios",
    "differing_row": "scenarios",
    "flip_pair": "scenarios",
    "generic_scenarios": "scenarios",
    "learner_feedback": "scenarios",
    "make_scenario": "scenarios",
    "rival_pair": "scenarios",
    "GAUSSIAN_AUDIT_DELTA": "scenarios",
    "gaussian_tree": "scenarios",
    "Scenario": "scenarios",
    "swap_pair": "scenarios",
    # checks
    "BACKEND_KINDS": "checks",
    "claim_share": "checks",
    "noise_freshness": "checks",
    "noise_provenance": "checks",
    "PART_CHUNK": "checks",
    "part_level_test": "checks",
    "part_test_plan": "checks",
    "provenance_game": "checks",
    "query_sensitivity_check": "checks",
    "tree_counter_test": "checks",
    "TreeCheck": "checks",
    # report
    "AuditReport": "report",
    "Candidate": "report",
    "UNDECLARED": "report",
    # search
    "audit_agent": "learner",
    "audit_learner": "learner",
    "DEFAULT_RUNS": "learner",
    "first_difference": "search",
    "path_check": "search",
    "search": "search",
    "TEST_SEED_OFFSET": "search",
    # oco
    "audit_oco_agent": "oco",
    "audit_oco_learner": "oco",
    "DEFAULT_OCO_RUNS": "oco",
    "default_oco_scenarios": "oco",
    "DEFAULT_OCO_SELECTION_RUNS": "oco",
    "derived_oco_scenarios": "oco",
    "fed_pair": "oco",
    "first_round_pair": "oco",
    "oco_declaration_of": "oco",
    "OCOScenario": "oco",
    "sign_pair": "oco",
}

__all__ = sorted(_WHERE, key=str.lower)


def __getattr__(name: str) -> Any:
    """Load the module holding ``name`` on first use."""
    if name in _WHERE:
        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
