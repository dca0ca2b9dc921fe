"""The learners' declared worst-case regret bounds, read by the learned-adversary checks.

A learner declares ``regret_bound(self, n_switches=0) -> float | None``: a proven bound on its
expected regret against comparators with at most ``n_switches`` switches, at its own N, T and
parameters, against adaptive adversaries (None: none). Plug-ins join by defining the method.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["declared_bound", "bound_of"]


def bound_of(agent: Any, n_switches: int = 0) -> float | None:
    """The bound a built learner declares for the S-switch regret (None: none declared)."""
    method = getattr(agent, "regret_bound", None)
    if not callable(method):
        return None
    value = method(n_switches)
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{type(agent).__name__}.regret_bound returned {value}; need >= 0")
    return value


def declared_bound(config: Any) -> float | None:
    """The bound of the learner an :class:`~dp_experts_env.attack.run.AttackConfig` attacks."""
    return bound_of(config.learner_instance(), config.n_switches)
