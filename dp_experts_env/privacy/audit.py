"""The audit statistics' former import path: re-exports :mod:`dp_experts_env.audit`'s."""

from dp_experts_env.audit.bounds import *  # noqa: F403
from dp_experts_env.audit.events import *  # noqa: F403
from dp_experts_env.audit.selection import *  # noqa: F403

__all__ = [  # noqa: F405 - the names of the three modules above
    "INCONCLUSIVE_FACTOR",
    "AuditResult",
    "EventFamily",
    "Selection",
    "audit_mechanism",
    "audit_samples",
    "check_audit_args",
    "clopper_pearson",
    "detectable_epsilon",
    "epsilon_lower_bound",
    "evaluate_event",
    "families_for",
    "release_families",
    "runs_needed",
    "select_and_test",
    "select_event",
    "sequence_families",
]
