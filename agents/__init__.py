"""The learners: ``agents.make(name, env=..., **params)`` and ``agents.available()``."""

import importlib as _importlib
import pkgutil as _pkgutil

# Every public module of this package is imported, and a learner module registers itself on
# import (``@register``): a new learner is one new module, with no list to edit (as Gymnasium's
# registry needs no import list). Modules whose name starts with "_" are helpers (kernels,
# caches) and load on use.
for _module in sorted(m.name for m in _pkgutil.iter_modules(__path__)):
    if not _module.startswith("_"):
        _importlib.import_module(f"{__name__}.{_module}")
del _module

from agents.base import Agent, BanditObs, PrivacyClaim, no_privacy  # noqa: E402
from agents.registry import (  # noqa: E402
    AgentSpec,
    available,
    load_plugins,
    make,
    register,
    source,
    spec,
)

__all__ = [
    "Agent",
    "AgentSpec",
    "BanditObs",
    "PrivacyClaim",
    "available",
    "load_plugins",
    "make",
    "no_privacy",
    "register",
    "source",
    "spec",
]
