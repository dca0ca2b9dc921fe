"""Privacy: noise backends, mechanisms, accounting and audits.

Imports nothing from envs or agents (the audit imports agents lazily, inside the function).
"""

from dp_experts_env.privacy import exact_accountants  # noqa: F401  (briefs 001/002)
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
from dp_experts_env.privacy.audit import (
    AuditResult,
    audit_agent,
    audit_mechanism,
    audit_samples,
    clopper_pearson,
    epsilon_lower_bound,
)
from dp_experts_env.privacy.guarantee import Guarantee, Release
from dp_experts_env.privacy.mechanisms import (
    AboveThreshold,
    TreeCounter,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    laplace_mechanism,
    report_noisy_min,
)
from dp_experts_env.privacy.noise import (
    BACKENDS,
    FastBackend,
    GridBackend,
    NoiseBackend,
    get_backend,
)

__all__ = [
    "BACKENDS",
    "AboveThreshold",
    "AuditResult",
    "FastBackend",
    "GridBackend",
    "Guarantee",
    "NoiseBackend",
    "Release",
    "TreeCounter",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "basic_composition",
    "compose",
    "has_dp_accounting",
    "parallel_composition",
    "per_step_epsilon",
    "pld_laplace_composition",
    "audit_agent",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "get_backend",
    "laplace_mechanism",
    "report_noisy_min",
]
