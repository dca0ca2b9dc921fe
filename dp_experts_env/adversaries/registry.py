"""The family table: which loss models each environment kind offers, by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dp_experts_env._validation import check_choice
from dp_experts_env.adversaries.base import Adversary
from dp_experts_env.kinds import ENV_KINDS

__all__ = ["ENV_KINDS", "register_family", "make_adversary", "families", "family_factory"]

# The kinds come from the kind table (dp_experts_env.kinds); each has its own family registry.
_FAMILIES: dict[str, dict[str, Callable[..., Adversary]]] = {kind: {} for kind in ENV_KINDS}


def register_family(kind: str, name: str) -> Callable[[Callable[..., Adversary]], Any]:
    """Decorator registering an adversary class (or factory) as family ``name`` of ``kind``."""
    check_choice("kind", kind, ENV_KINDS)

    def decorator(factory: Callable[..., Adversary]) -> Callable[..., Adversary]:
        if name in _FAMILIES[kind]:
            raise ValueError(f"family {name!r} is already registered for kind {kind!r}")
        _FAMILIES[kind][name] = factory
        return factory

    return decorator


def families(kind: str) -> list[str]:
    """Names of the families offered by an environment kind."""
    check_choice("kind", kind, ENV_KINDS)
    return sorted(_FAMILIES[kind])


def family_factory(kind: str, family: str) -> Callable[..., Adversary]:
    """The class or factory registered under (kind, family)."""
    check_choice("kind", kind, ENV_KINDS)
    if family not in _FAMILIES[kind]:
        raise ValueError(
            f"family must be one of {families(kind)} for kind {kind!r}, got {family!r}"
        )
    return _FAMILIES[kind][family]


def make_adversary(kind: str, family: str, **params: Any) -> Adversary:
    """Build family ``family`` of ``kind`` with its keyword parameters."""
    return family_factory(kind, family)(**params)
