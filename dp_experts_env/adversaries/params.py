"""Family parameters as data: every loss-model family declares its knobs in a frozen dataclass.

A family's knobs (its keywords besides the sizes) are the fields of a :class:`FamilyParams`
subclass, the only place their names and defaults are written; the env factory routes keywords by
them, the family's constructor validates the values (docs/environments.md, "Parameters as data").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = [
    "FamilyParams",
    "BanditParams",
    "ShiftParams",
    "GapBaseParams",
    "LevelParams",
    "BaseLossParams",
    "ChangePoints",
]

_P = TypeVar("_P", bound="FamilyParams")

#: A change-point schedule: a mode name or an explicit increasing list of rounds.
ChangePoints = str | Sequence[int] | np.ndarray


@dataclass(frozen=True)
class FamilyParams:
    """Base of every family's parameters (no knobs of its own; full-information sizes)."""

    SIZES: ClassVar[tuple[str, ...]] = ("n_experts", "horizon")
    FILLED: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def knob_names(cls, given: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """The keywords the family takes besides its sizes (``given``: the call's keywords)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def filled_sizes(cls) -> tuple[str, ...]:
        """The sizes an env fills with its kind's defaults when the user gives none."""
        return cls.SIZES if cls.FILLED is None else cls.FILLED

    @classmethod
    def unknown_keywords(cls, given: Mapping[str, Any]) -> list[str]:
        """The keywords of ``given`` that are neither knobs nor sizes of the family, in order."""
        names = set(cls.knob_names(given)) | set(cls.SIZES)
        return [key for key in given if key not in names]

    @classmethod
    def accepted(cls, given: Mapping[str, Any] | None = None) -> list[str]:
        """Every keyword the family takes (sizes and knobs), sorted, for messages."""
        return sorted(set(cls.knob_names(given)) | set(cls.SIZES))

    @classmethod
    def from_keywords(cls, given: Mapping[str, Any]) -> FamilyParams:
        """The parameters with the given knobs and the declared defaults for the others."""
        own = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in given.items() if k in own})

    @classmethod
    def resolve(cls: type[_P], params: Any = None, knobs: Mapping[str, Any] | None = None) -> _P:
        """A family constructor's parameters: ``params`` itself, or built from its keywords.

        Args:
            params: an instance of ``cls`` (or of a subclass), or None.
            knobs: the constructor's keyword knobs (only when ``params`` is None).

        Raises:
            TypeError: ``params`` is not a ``cls``, both are given, or a keyword is not a knob
                (the message names it and lists the knobs).
        """
        knobs = dict(knobs or {})
        if params is not None:
            if not isinstance(params, cls):
                raise TypeError(f"params must be a {cls.__name__}, got {type(params).__name__}")
            if knobs:
                raise TypeError(
                    f"give params or the keywords {sorted(knobs)}, not both (use "
                    "dataclasses.replace(params, ...) to change a knob)"
                )
            return params
        own = [f.name for f in fields(cls)]
        for key in knobs:
            if key not in own:
                raise TypeError(
                    f"{key!r} is not a parameter of {cls.__name__}; it accepts {sorted(own)} "
                    f"besides the sizes {list(cls.SIZES)}"
                )
        return cls(**knobs)

    def knobs(self) -> dict[str, Any]:
        """``{knob: value}``: the keywords to pass to the family's constructor."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class BanditParams(FamilyParams):
    """Base of the bandit families' parameters: they also take K."""

    SIZES: ClassVar[tuple[str, ...]] = ("n_experts", "horizon", "n_arms")


@dataclass(frozen=True)
class ShiftParams(FamilyParams):
    """The change-point schedule of a piecewise-stationary family.

    Attributes:
        n_shifts: K, the number of change points (None: the family's default).
        change_points: ``"even"``, ``"uniform"``, ``"min_gap"``, ``"anti_doubling"`` or an
            explicit increasing list of rounds in 2..T.
        min_length: the least segment length of ``"min_gap"`` (None: the schedule's default).
    """

    n_shifts: int | None = None
    change_points: ChangePoints = "even"
    min_length: int | None = None


@dataclass(frozen=True)
class GapBaseParams(FamilyParams):
    """A planted best expert at ``base - gap``, the others at ``base``.

    Attributes:
        gap: Delta in (0, base], or ``"hard"`` (``min(base, sqrt(ln N / L_k))``).
        base: the non-best experts' mean (or location), in (0, 1].
    """

    gap: float | str = 0.1
    base: float = 0.5


@dataclass(frozen=True)
class LevelParams(FamilyParams):
    """Deterministic 0/1-style losses: the best expert's and the others' loss levels."""

    best_loss: float = 0.0
    other_loss: float = 1.0


@dataclass(frozen=True)
class BaseLossParams(FamilyParams):
    """The base datum an adaptive policy reacts to.

    Attributes:
        base: ``"bernoulli"``, ``"zeros"``, ``"uniform"`` or a ``BaseLosses`` object.
        base_mean: the Bernoulli base's mean (scalar or per-expert; None: 1/2).
    """

    base: Any = "bernoulli"
    base_mean: Any = None
