"""Which block entry point users' runs may call on a learner: the guard against inherited kernels.

A block method (``play_block``, ``play_bandit_block``) is written for the class that defines it:
its kernel recomputes that class's hooks (``_learn``, ``_choose``, an index, ...). A subclass that
overrides one of them changes ``act`` but not the inherited kernel, so playing the kernel would
play another learner than the one whose ``act`` was written and audited. :func:`block_entry`
returns the block method only when the agent's class resolves every function, property and class
constant of the defining class (and of the classes between the two) exactly as the defining class
does, and adds no property (docs/privacy.md, "Path equivalence: the code users run"); otherwise
None, and the episode loop, the path check and the audit play ``act``.

Exceptions, each unable to change play:

* the names of :data:`PLAY_NEUTRAL`;
* overrides a class declares in its own ``_block_path_covers`` (a ``ClassVar[frozenset[str]]``
  in the class body, never inherited): the inherited block method calls these hooks itself (a
  template method such as the OCO learners' ``_block``) or the class checked that it accounts
  for them. A subclass's further override of such a hook is not covered by its parent's list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BLOCK_METHODS", "COVERS", "PLAY_NEUTRAL", "block_entry", "block_overrides"]

#: The block entry points of the episode loop's protocols.
BLOCK_METHODS = ("play_block", "play_bandit_block")
#: The class attribute (read from a class's own ``__dict__``) naming the overrides it declares
#: its inherited block method accounts for.
COVERS = "_block_path_covers"
#: Overrides that keep the inherited block path, and why (none changes what one path plays alone):
#: ``__init__`` builds the state both paths then read (a block method is only ever called on a
#: built object; but an ``__init__`` that edits one stored value after the parent derived others
#: from it can part the paths -- noisy-clipped-hedge's kernel reads ``_run_scale``, its ``act``
#: ``noise_sensitivity`` -- which the ``paths`` check catches); ``__repr__`` and
#: ``__str__`` print; ``privacy`` states the claim and ``declaration`` the mechanisms for the
#: audit -- read by reports and the audit, never by ``act`` or a kernel. Class constants read at
#: construction only (validation and defaults, stored on the object both paths read: ``laws``,
#: ``tunings``, ``noise_backends``, ``default_delta``) or by claims, the audit and messages
#: (``name``, ``claim_source``, ``audit_hints``, :data:`COVERS`); ``_abc_impl`` is ``abc``'s.
PLAY_NEUTRAL = frozenset(
    {"__init__", "__repr__", "__str__", "privacy", "declaration"}
    | {"laws", "tunings", "noise_backends", "default_delta"}
    | {"name", "claim_source", "audit_hints", COVERS, "_abc_impl"}
)


def _resolve(cls: type, name: str) -> tuple[type | None, Any]:
    """The class of ``cls``'s MRO that supplies ``name``, and the raw value (no descriptor call)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass, klass.__dict__[name]
    return None, None


def _resolve_after(cls: type, klass: type, name: str) -> tuple[type | None, Any]:
    """:func:`_resolve` over the classes after ``klass`` in ``cls``'s MRO (what it overrides)."""
    mro = cls.__mro__
    for later in mro[mro.index(klass) + 1 :]:
        if name in later.__dict__:
            return later, later.__dict__[name]
    return None, None


def _is_data_descriptor(value: Any) -> bool:
    """A property or slot-like descriptor: it wins over the object's own ``__dict__``."""
    return hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")


def _behaves(value: Any) -> bool:
    """True for what can run code when looked up or called: functions, properties, descriptors."""
    return callable(value) or hasattr(type(value), "__get__")


def block_overrides(agent: Any, name: str) -> tuple[str, ...]:
    """The overrides that keep ``agent``'s block method ``name`` from being played, sorted.

    Args:
        agent: a learner, or a learner class (then instance attributes are not looked at).
        name: the block method, one of :data:`BLOCK_METHODS`.

    Returns:
        ``"attr (Class)"`` for each function, property or constant (dunders aside) the
        defining class's MRO has (or a class between it and ``Class`` adds) that the agent
        resolves to another object, and each new property (it may shadow an instance attribute)
        (supplied by ``Class``, or ``instance`` for one set on the object), leaving out
        :data:`PLAY_NEUTRAL` and each supplier's declared ``_block_path_covers``; empty when the
        agent has no such method or plays it as is.

    Raises:
        ValueError: ``name`` is not a block method.
    """
    if name not in BLOCK_METHODS:
        raise ValueError(f"name must be one of {BLOCK_METHODS}, got {name!r}")
    cls = agent if isinstance(agent, type) else type(agent)
    owner, method = _resolve(cls, name)
    if owner is None or not callable(method):
        return ()
    found = []
    # A name the agent resolves unlike the owner is supplied by a class outside the owner's MRO
    # (C3 keeps the owner's MRO in order inside the agent's): only those classes are read.
    inside = set(owner.__mro__)
    for klass in cls.__mro__:
        if klass in inside:
            continue
        covered = klass.__dict__.get(COVERS, frozenset())
        for attr, ours in klass.__dict__.items():
            if attr in PLAY_NEUTRAL or attr in covered or _resolve(cls, attr)[0] is not klass:
                continue
            supplier, theirs = _resolve(owner, attr)
            dunder = attr.startswith("__") and attr.endswith("__")
            if supplier is None and _is_data_descriptor(ours) and not dunder:
                # A new property can shadow an instance attribute the kernel reads once per block
                # and act once per round (a step size ``eta`` made a schedule of ``t``).
                found.append(f"{attr} ({klass.__qualname__})")
                continue
            if supplier is None:
                # A hook a class between the owner and ``klass`` added: the owner's block method
                # may reach it through that class's covered overrides (a template's kernel).
                supplier, theirs = _resolve_after(cls, klass, attr)
            # A class constant too (a kernel may read one that act does not): all but dunders.
            if supplier is not None and (_behaves(theirs) or _behaves(ours) or not dunder):
                found.append(f"{attr} ({klass.__qualname__})")
    if not isinstance(agent, type):
        for attr, value in getattr(agent, "__dict__", {}).items():
            if attr not in PLAY_NEUTRAL and callable(value) and _resolve(cls, attr)[0]:
                found.append(f"{attr} (instance)")
    return tuple(sorted(found))


def block_entry(agent: Any, name: str) -> Callable[..., Any] | None:
    """``agent``'s block method ``name`` when playing it plays ``agent``'s ``act``, else None.

    None when the agent has no callable ``name`` or when :func:`block_overrides` finds an
    override the defining class's block method may not account for: the caller then plays
    ``act`` round by round, as for a learner without a block path. A class that defines its own
    block method is its own owner (its overrides of its parents' hooks are its kernel's to
    handle, which the ``paths`` check holds to ``act``).

    Args:
        agent: a learner (the bound method is returned) or a learner class (the function).
        name: ``"play_block"`` or ``"play_bandit_block"``.
    """
    entry = getattr(agent, name, None)
    if not callable(entry) or block_overrides(agent, name):
        return None
    return entry
