"""The registry of the papers' claims that ``dp-experts reproduce`` checks.

The claims are data, one module per paper in :mod:`dp_experts_env.evaluation.papers`; this
module finds every such module (no list to edit) and orders them by their ``REPORT_ORDER``.
How the papers' rates become measurable claims: docs/reproduce.md.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from dp_experts_env.evaluation import papers
from dp_experts_env.evaluation.claims import Claim

__all__ = ["CLAIMS", "claim_names", "get_claims", "paper_modules"]

#: Modules of the papers package that hold no paper's claims.
_NOT_A_PAPER = frozenset({"common"})


def paper_modules() -> list[ModuleType]:
    """Every paper's module of :mod:`dp_experts_env.evaluation.papers`, in report order."""
    found = [
        importlib.import_module(f"{papers.__name__}.{info.name}")
        for info in pkgutil.iter_modules(papers.__path__)
        if info.name not in _NOT_A_PAPER
    ]
    return sorted(found, key=lambda m: (m.REPORT_ORDER, m.__name__))


def _registry(quick_collapse: bool = False) -> list[Claim]:
    return [claim for module in paper_modules() for claim in module.claims(quick_collapse)]


CLAIMS: tuple[Claim, ...] = tuple(_registry())


def claim_names() -> list[str]:
    """Every registered claim's name, in report order."""
    return [c.name for c in CLAIMS]


def get_claims(names: list[str] | None = None, *, quick: bool = False) -> list[Claim]:
    """The named claims (all when ``names`` is empty), in report order.

    Raises:
        ValueError: for a name that is not registered, listing the registered ones.
    """
    registry = _registry(quick_collapse=quick)
    if not names:
        return registry
    known = {c.name for c in registry}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown claim(s) {unknown}; registered: {sorted(known)}")
    return [c for c in registry if c.name in names]
