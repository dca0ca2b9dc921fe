"""The learners: ``agents.make(name, env=..., **params)`` and ``agents.available()``."""

import importlib as _importlib
import pkgutil as _pkgutil

# Every public module is imported and registers its learners (``@register``): a new learner is one
# new module, no list to edit. "_" modules are helpers (kernels, caches), loaded on use.
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
