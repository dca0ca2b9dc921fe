"""The family table: which loss models each environment kind offers, by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dp_experts_env import plugins as _plugins
from dp_experts_env._validation import check_choice
from dp_experts_env.adversaries.base import Adversary
from dp_experts_env.adversaries.params import FamilyParams
from dp_experts_env.kinds import ENV_KINDS

__all__ = [
    "ENV_KINDS",
    "register_family",
    "make_adversary",
    "families",
    "family_factory",
    "family_params",
    "load_family_plugins",
]

# The kinds come from the kind table (dp_experts_env.kinds); each has its own family registry.
_FAMILIES: dict[str, dict[str, Callable[..., Adversary]]] = {kind: {} for kind in ENV_KINDS}
_PARAMS: dict[str, dict[str, type[FamilyParams]]] = {kind: {} for kind in ENV_KINDS}
_LOADED_ENTRY_POINTS: set[tuple[str, str]] = set()
_SCANNED = False


def load_family_plugins(*, rescan: bool = False) -> list[tuple[str, str]]:
    """Register the outside loss families: ``DP_EXPERTS_PLUGINS`` modules, then entry points.

    An entry point ``"kind.family" = "module:Object"`` not already registered by its module is
    registered with its ``Params`` attribute as declaration. Entry points are scanned once per
    process (``rescan=True`` scans again); :func:`families` and the lookups call this.

    Returns:
        ``(kind, family)`` pairs registered by this call.
    """
    global _SCANNED
    before = {(k, f) for k in _FAMILIES for f in _FAMILIES[k]}
    _plugins.import_plugin_modules()
    if rescan or not _SCANNED:
        _SCANNED = True
        for ep, obj in _plugins.iter_new(_plugins.FAMILY_GROUP, _LOADED_ENTRY_POINTS):
            kind, sep, name = ep.name.partition(".")
            if not sep or kind not in _FAMILIES or not name:
                raise ValueError(
                    f"entry point {ep.name!r} of group {_plugins.FAMILY_GROUP!r} must be named "
                    f"'kind.family' with kind one of {list(ENV_KINDS)}"
                )
            if _FAMILIES[kind].get(name) is obj:
                continue  # its module registered it on import
            register_family(kind, name)(obj)
    return sorted({(k, f) for k in _FAMILIES for f in _FAMILIES[k]} - before)


def register_family(
    kind: str, name: str, params: type[FamilyParams] | None = None
) -> Callable[[Callable[..., Adversary]], Any]:
    """Decorator registering an adversary class (or factory) as family ``name`` of ``kind``.

    Args:
        kind: a kind of :data:`ENV_KINDS`.
        name: the family name (unique within the kind).
        params: the family's :class:`FamilyParams` declaration (default: the factory's
            ``Params`` attribute; one of the two is required).
    """
    check_choice("kind", kind, ENV_KINDS)

    def decorator(factory: Callable[..., Adversary]) -> Callable[..., Adversary]:
        if name in _FAMILIES[kind]:
            raise ValueError(f"family {name!r} is already registered for kind {kind!r}")
        declared = params if params is not None else getattr(factory, "Params", None)
        if not (isinstance(declared, type) and issubclass(declared, FamilyParams)):
            raise TypeError(
                f"family {name!r} of kind {kind!r} must declare its parameters: pass params= "
                "(a frozen dataclass deriving from FamilyParams) or give the factory a Params "
                f"attribute; got {declared!r}"
            )
        _FAMILIES[kind][name] = factory
        _PARAMS[kind][name] = declared
        return factory

    return decorator


def families(kind: str, *, plugins: bool = True) -> list[str]:
    """Names of the families offered by an environment kind.

    Args:
        kind: a kind of :data:`ENV_KINDS`.
        plugins: load the outside families first; False lists what is registered now (while
            the package itself is being imported).
    """
    check_choice("kind", kind, ENV_KINDS)
    if plugins:
        load_family_plugins()
    return sorted(_FAMILIES[kind])


def family_factory(kind: str, family: str) -> Callable[..., Adversary]:
    """The class or factory registered under (kind, family)."""
    check_choice("kind", kind, ENV_KINDS)
    if family not in _FAMILIES[kind]:
        load_family_plugins()  # an outside family registers on first use
    if family not in _FAMILIES[kind]:
        raise ValueError(
            f"family must be one of {families(kind)} for kind {kind!r}, got {family!r}"
        )
    return _FAMILIES[kind][family]


def family_params(kind: str, family: str) -> type[FamilyParams]:
    """The parameter declaration (a frozen dataclass) of family ``family`` of ``kind``."""
    family_factory(kind, family)  # the same checks and messages
    return _PARAMS[kind][family]


def make_adversary(kind: str, family: str, **params: Any) -> Adversary:
    """Build family ``family`` of ``kind`` with its keyword parameters."""
    return family_factory(kind, family)(**params)
