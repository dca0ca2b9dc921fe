"""The privacy audit: search for evidence against a learner's claim, then test it once.

Statistics (privacy layer: bounds, events, selection, oco_statistics) and drivers (evaluation
layer: scenarios, play, checks, report, search, learner, oco); docs/privacy.md, "The audit
package". Every public name is available here, loaded on first use.
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
