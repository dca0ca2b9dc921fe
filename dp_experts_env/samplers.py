"""One sampler per law: every variate of the suite is one of these functions of uniforms.

Each law maps a fixed number of uniforms per variate (``*_UNIFORMS``) to variates. Every path
calls it as ``samplers.<law>(...)`` at call time, so a change or a patch here changes every path
(docs/architecture.md, "One sampler per law").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "DISCRETE_LAPLACE_UNIFORMS",
    "GUMBEL_UNIFORMS",
    "LAPLACE_TAPS",
    "LAPLACE_UNIFORMS",
    "NORMAL_UNIFORMS",
    "OPEN_HIGH",
    "OPEN_LOW",
    "discrete_laplace",
    "exponential",
    "geometric",
    "gumbel",
    "laplace",
    "laplace_law",
    "laplace_tap",
    "normal",
    "open_interval",
    "tap_laplace",
]

#: The open interval log-based laws clip uniforms to (0, 1 - 2**-53 inside after the shift).
OPEN_LOW = 2.0**-54
OPEN_HIGH = 1.0 - 2.0**-54

#: Uniforms per variate of each law (what a block path reads per draw).
LAPLACE_UNIFORMS = 1
GUMBEL_UNIFORMS = 1
#: Box-Muller: all the first uniforms of a call, then all the second ones.
NORMAL_UNIFORMS = 2
#: Two geometrics of three uniforms each (:func:`geometric`).
DISCRETE_LAPLACE_UNIFORMS = 6

# Memoryless split point of the geometric sampler, in e-folds (see geometric).
_TAIL_CUT = 20.0

#: Open Laplace taps (:func:`laplace_tap`); empty outside an audit.
LAPLACE_TAPS: list[list[tuple[np.ndarray, np.ndarray]]] = []


@contextlib.contextmanager
def laplace_tap() -> Iterator[list[tuple[np.ndarray, np.ndarray]]]:
    """Record every Laplace variate drawn inside the block: a list of (values, scales) pairs."""
    drawn: list[tuple[np.ndarray, np.ndarray]] = []
    LAPLACE_TAPS.append(drawn)
    try:
        yield drawn
    finally:
        LAPLACE_TAPS.remove(drawn)


def tap_laplace(scale: Any, values: np.ndarray) -> None:
    """Hand Laplace ``values`` (and their ``scale``) to the open taps."""
    values = np.array(values, dtype=np.float64)
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), values.shape).copy()
    for tap in LAPLACE_TAPS:
        tap.append((values, scales))


def _fresh(u: Any) -> np.ndarray:
    """``max(u, OPEN_LOW)`` as a new float64 array (0-d for a scalar), safe to edit in place."""
    out = np.maximum(u, OPEN_LOW)
    return out if type(out) is np.ndarray else np.array(out, dtype=np.float64)


def open_interval(u: Any) -> np.ndarray:
    """Uniforms clipped into the open interval (0, 1) (a new array; ``np.clip``'s values)."""
    out = _fresh(u)
    return np.minimum(out, OPEN_HIGH, out=out)


def _scalar(out: np.ndarray) -> Any:
    return out[()] if out.ndim == 0 else out


def laplace(u: Any, scale: Any) -> Any:
    """Laplace(0, ``scale``) variates from uniforms ``u`` (one each), reported to open taps.

    ``scale`` broadcasts against ``u`` (a float, or a (B, 1) column of per-run scales).
    """
    drawn = laplace_law(u, scale)
    if LAPLACE_TAPS:  # the audit's path-equivalence check is listening
        tap_laplace(scale, drawn)
    return drawn


def laplace_law(u: Any, scale: Any) -> Any:
    """The Laplace law by inverse CDF: ``-scale * sign(v) * log1p(-2 |v|)``, ``v = clip(u) - 0.5``.

    Evaluated left to right. Simulation-grade floats (their low bits leak the input: the
    ``grid`` backend's :func:`discrete_laplace` exists for that).
    """
    v = open_interval(u)
    v -= 0.5
    signed = np.multiply(-np.asarray(scale), np.sign(v))
    np.abs(v, out=v)
    v *= -2.0
    np.log1p(v, out=v)
    if isinstance(signed, np.ndarray) and signed.shape == v.shape:
        drawn = np.multiply(signed, v, out=signed)
    else:
        drawn = signed * v
    return _scalar(np.asarray(drawn))


def exponential(u: Any) -> Any:
    """Standard exponential variates ``-log(u)`` (one uniform each)."""
    v = open_interval(u)
    np.log(v, out=v)
    return _scalar(np.negative(v, out=v))


def gumbel(u: Any) -> Any:
    """Standard Gumbel variates ``-log(-log(u))`` (one uniform each)."""
    v = open_interval(u)
    np.log(v, out=v)
    np.negative(v, out=v)
    np.log(v, out=v)
    return _scalar(np.negative(v, out=v))


def normal(u1: Any, u2: Any) -> Any:
    """Standard normal variates by Box-Muller: ``sqrt(-2 log u1) cos(2 pi u2)``, u1 clipped."""
    return np.sqrt(-2.0 * np.log(open_interval(u1))) * np.cos(2.0 * np.pi * np.asarray(u2))


def geometric(t: Any, u: np.ndarray) -> np.ndarray:
    """Geometric variates on {0, 1, ...} with ``P(G >= m) = exp(-m / t)``.

    ``u`` holds three open uniforms per variate on its last axis.

    Drawn as ``G = k M + R``, ``k = ceil(t)``, with a memoryless split of ``M`` at ``_TAIL_CUT``
    e-folds, so float resolution distorts the law only past ~e^-40 (docs/privacy.md).
    """
    k = np.maximum(1.0, np.ceil(t))
    with np.errstate(divide="ignore", invalid="ignore"):
        span = -np.expm1(-k / t)  # 1 - q^k, q = exp(-1/t); 1 when t == 0
        s = t / k  # M = floor(s * Exp(1))
    r = np.minimum(np.floor(-t * np.log1p(-u[..., 0] * span)), k - 1.0)
    c = np.maximum(1.0, np.ceil(_TAIL_CUT * s))
    m1 = np.floor(-np.log(u[..., 1]) * s)
    m2 = np.floor(-np.log(u[..., 2]) * s)
    return k * np.where(m1 < c, m1, c + m2) + r


def discrete_laplace(u: Any, t: Any) -> np.ndarray:
    """Two-sided geometric integers (as floats), ``P(X = k)`` proportional to ``exp(-|k| / t)``.

    The difference of two :func:`geometric` variates; ``u`` holds six uniforms per variate on
    its last axis. ``t`` is the scale in lattice steps (finite, >= 0).
    """
    v = open_interval(u)
    return geometric(t, v[..., :3]) - geometric(t, v[..., 3:])
