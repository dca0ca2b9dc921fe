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
    "EPSILON_MIN",
    "MEMORY_LIMIT",
    "check_int",
    "check_float",
    "check_probability",
    "check_epsilon",
    "check_learner_epsilon",
    "check_delta",
    "check_choice",
    "check_loss_array",
    "check_memory",
    "did_you_mean",
    "real_array",
]

#: Smallest epsilon a learner accepts (below ~1e-12 some overflow; at 1e-6 all are pure noise).
EPSILON_MIN = 1e-6

#: Bytes a single constructor may ask for before it is refused as a typo (16 GiB).
MEMORY_LIMIT = 16 * 2**30


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an ``int`` after checking its type (no booleans) and range."""
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


def check_learner_epsilon(name: str, value: Any, *, allow_inf: bool = True) -> float:
    """Check a learner's privacy level: ``EPSILON_MIN <= epsilon`` (``inf``: no noise)."""
    eps = check_epsilon(name, value, allow_inf=allow_inf)
    if eps < EPSILON_MIN:
        raise ValueError(
            f"{name} must be >= {EPSILON_MIN:g} (or inf for no noise), got {eps:g}: smaller "
            "privacy levels overflow the learners' noise scales and are pure noise anyway"
        )
    return eps


def check_memory(what: str, n_bytes: float, *, limit: int = MEMORY_LIMIT) -> None:
    """Refuse sizes whose arrays would need more than ``limit`` bytes (ValueError naming them).

    Args:
        what: the parameters responsible, as the user gave them (``"dim=1000000000 x 2 runs"``).
        n_bytes: the estimate.
        limit: the ceiling (default :data:`MEMORY_LIMIT`).
    """
    if n_bytes > limit:
        raise ValueError(
            f"{what} would need about {n_bytes / 2**30:,.1f} GiB of memory (the limit is "
            f"{limit / 2**30:g} GiB): a smaller size, please"
        )


def did_you_mean(value: Any, choices: Iterable[str]) -> str:
    """`` (did you mean 'hedge'?)`` for a near miss among ``choices``, else ``""``."""
    import difflib

    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[value.lower()]] if value.lower() in lowered else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array (returned as it is if so); TypeError for complex numbers."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value
    if _complex(value):
        raise TypeError(f"{name} must be real numbers, got complex values")
    return np.asarray(value, dtype=np.float64)


def _complex(value: Any) -> bool:
    """True for complex numbers (an array, a nested list, a scalar); False if not convertible."""
    try:
        return bool(np.iscomplexobj(value))
    except (TypeError, ValueError):  # a ragged list: the float conversion will say what is wrong
        return False


def check_delta(name: str, value: Any) -> float:
    """Check a privacy parameter delta in [0, 1)."""
    return check_float(name, value, minimum=0.0, maximum=1.0, max_inclusive=False)


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of the named options."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}; got {type(value).__name__}")
    if value not in choices:
        raise ValueError(
            f"{name} must be one of {choices}, got {value!r}{did_you_mean(value, choices)}"
        )
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
    """A float64 copy of ``value`` after checking dimension, shape, finiteness and range."""
    if _complex(value):
        # float64 conversion would drop the imaginary part with a warning only
        raise TypeError(f"{name} must be real numbers, got complex values")
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
