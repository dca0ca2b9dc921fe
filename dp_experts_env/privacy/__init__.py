"""Privacy: noise backends, mechanisms, accounting and the statistics of audits.

Imports nothing from envs, agents or evaluation; the audit statistics (scipy.stats) load on
first use of one of their names.
"""

from typing import Any

from dp_experts_env.privacy import exact_accountants  # noqa: F401  (lazy learners)
from dp_experts_env.privacy.accounting import (
    advanced_composition,
    advanced_composition_heterogeneous,
    basic_composition,
    compose,
    has_dp_accounting,
    parallel_composition,
    per_step_epsilon,
    pld_laplace_composition,
)
from dp_experts_env.privacy.guarantee import Guarantee, Release
from dp_experts_env.privacy.mechanisms import (
    AboveThreshold,
    TreeCounter,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    laplace_mechanism,
    report_noisy_min,
    tree_levels,
)
from dp_experts_env.privacy.noise import (
    BACKENDS,
    FastBackend,
    GridBackend,
    NoiseBackend,
    RecordingBackend,
    ScaledBackend,
    get_backend,
)

_AUDIT_NAMES = (
    "AuditResult",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "detectable_epsilon",
    "epsilon_lower_bound",
)


def __getattr__(name: str) -> Any:
    """Load the audit statistics on first use (they import scipy.stats)."""
    if name in _AUDIT_NAMES:
        from dp_experts_env.privacy import audit

        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BACKENDS",
    "AboveThreshold",
    "AuditResult",
    "FastBackend",
    "GridBackend",
    "Guarantee",
    "NoiseBackend",
    "RecordingBackend",
    "Release",
    "ScaledBackend",
    "TreeCounter",
    "tree_levels",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "basic_composition",
    "compose",
    "has_dp_accounting",
    "parallel_composition",
    "per_step_epsilon",
    "pld_laplace_composition",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "detectable_epsilon",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "get_backend",
    "laplace_mechanism",
    "report_noisy_min",
]
