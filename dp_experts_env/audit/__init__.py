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
:mod:`~dp_experts_env.audit.search` (``search_scenarios``, the one search loop of every audit,
and the path check) and :mod:`~dp_experts_env.audit.learner`, whose :func:`audit_learner`
audits every private learner, discrete or continuous (OCO learners' scenarios and views:
:mod:`~dp_experts_env.audit.oco`). ``dp-experts audit`` and
``dp_experts_env.testing.check_agent`` call :func:`audit_learner`.

Every public name of those modules is available here, loaded on first use (the statistics
import ``scipy.stats``). The former modules ``dp_experts_env.privacy.audit``,
``privacy.audit_oco``, ``evaluation.audit`` and ``evaluation.audit_oco`` re-export them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: The modules whose ``__all__`` names this package exports, in order (the first wins).
_MODULES = (
    "bounds",
    "events",
    "selection",
    "oco_statistics",
    "play",
    "scenarios",
    "checks",
    "report",
    "search",
    "learner",
    "oco",
)


def _where() -> dict[str, str]:
    """Public name -> the module defining it (imports every module of the package)."""
    table: dict[str, str] = {}
    for module in _MODULES:
        for name in import_module(f"{__name__}.{module}").__all__:
            table.setdefault(name, module)
    return table


def __getattr__(name: str) -> Any:
    """Load the modules on first use; ``__all__`` is every module's public names."""
    if name == "__all__":
        globals()["__all__"] = names = sorted(_where(), key=str.lower)
        return names
    where = _where() if not name.startswith("__") else {}
    if name in where:
        return getattr(import_module(f"{__name__}.{where[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_where()])
