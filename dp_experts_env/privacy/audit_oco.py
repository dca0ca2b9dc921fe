"""The OCO audit statistics' former import path: :mod:`dp_experts_env.audit.oco_statistics`."""

from dp_experts_env.audit.bounds import detectable_epsilon
from dp_experts_env.audit.oco_statistics import *  # noqa: F403

__all__ = [  # noqa: F405
    "OCOAuditResult",
    "audit_oco_paths",
    "check_gradient_pair",
    "detectable_epsilon",
    "encode_points",
]
