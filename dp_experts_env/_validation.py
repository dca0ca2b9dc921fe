"""Argument checks shared by every module.

Each check names the offending parameter and the allowed values, raising ``TypeError`` for a
value of the wrong kind and ``ValueError`` for a value of the right kind out of range. They are
used at construction time only, never inside ``step``/``act`` hot paths.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "check_int",
    "check_float",
    "check_probability",
    "check_epsilon",
    "check_delta",
    "check_choice",
    "check_loss_array",
]


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an ``int`` after checking its type and range.

    Booleans are rejected: ``True`` is not a number of experts.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` (or ``inf`` when allowed) within the given range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r})")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if minimum is not None:
        bad = value < minimum if min_inclusive else value <= minimum
        if bad:
            op = ">=" if min_inclusive else ">"
            raise ValueError(f"{name} must be {op} {minimum}, got {value}")
    if maximum is not None:
        bad = value > maximum if max_inclusive else value >= maximum
        if bad:
            op = "<=" if max_inclusive else "<"
            raise ValueError(f"{name} must be {op} {maximum}, got {value}")
    return value


def check_probability(name: str, value: Any) -> float:
    """Check a number in the closed interval [0, 1]."""
    return check_float(name, value, minimum=0.0, maximum=1.0)


def check_epsilon(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Check a privacy parameter epsilon > 0 (``inf`` means no privacy, when allowed)."""
    return check_float(name, value, minimum=0.0, min_inclusive=False, allow_inf=allow_inf)


def check_delta(name: str, value: Any) -> float:
    """Check a privacy parameter delta in [0, 1)."""
    return check_float(name, value, minimum=0.0, maximum=1.0, max_inclusive=False)


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of the named options."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}; got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_loss_array(
    name: str,
    value: Any,
    *,
    ndim: int,
    shape: tuple[int | None, ...] | None = None,
    low: float = 0.0,
    high: float = 1.0,
) -> np.ndarray:
    """Return a float64 copy of ``value`` after checking dimension, shape, finiteness and range.

    Values outside ``[low, high]`` are rejected, never clipped: a silently clipped loss would
    change the game the user asked for.
    """
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if shape is not None:
        for axis, (got, want) in enumerate(zip(arr.shape, shape, strict=True)):
            if want is not None and got != want:
                raise ValueError(
                    f"{name} must have shape {shape} (None = any), got {arr.shape} (axis {axis})"
                )
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must be finite; found {arr[tuple(bad)]} at index {tuple(bad)}")
    if arr.min() < low or arr.max() > high:
        idx = np.unravel_index(np.argmax((arr < low) | (arr > high)), arr.shape)
        raise ValueError(
            f"{name} values must lie in [{low}, {high}]; found {arr[idx]} at index "
            f"{tuple(int(i) for i in idx)} (values are never clipped silently)"
        )
    return arr
