"""The learner audit's former import path: everything lives in :mod:`dp_experts_env.audit`.

Kept so that ``from dp_experts_env.evaluation.audit import audit_learner`` (and every other
public name of the audit package) keeps working.
"""

from dp_experts_env.audit import *  # noqa: F403
from dp_experts_env.audit import __all__  # noqa: F401
