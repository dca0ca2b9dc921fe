"""The OCO audit's former import path: it lives in :mod:`dp_experts_env.audit.oco`."""

from dp_experts_env.audit.oco import *  # noqa: F403
from dp_experts_env.audit.oco import __all__  # noqa: F401
