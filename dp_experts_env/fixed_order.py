"""Inner products summed in one fixed order, the same on every machine.

``a @ b`` and ``np.dot`` go through BLAS, and OpenBLAS picks its kernel for the CPU at run time
(``OPENBLAS_CORETYPE`` overrides the choice): a Haswell and a SkylakeX kernel sum the products of
one dot product in different orders, so the result can differ in its last bit between machines
(measured with numpy 2.4 and OpenBLAS 0.3.31: a 2-element dot product already differs). Every
value that feeds results, ``info`` or a sampling decision uses :func:`dot` instead: each product
is one correctly rounded multiplication and the sum runs left to right over the last axis, an
order no library or CPU changes.

:func:`accumulate` adds K rows to a running total in round order (``cumsum`` along the rounds),
the floats K in-place additions give.

Not covered here, and not reductions: numpy's transcendental functions (``log``, ``exp``,
``cos``) have CPU-specific SIMD kernels that may differ in the last bit; tests compare such
values across machines with a tolerance (``tests/_lock_arrays.py``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["accumulate", "dot"]


def accumulate(total: np.ndarray, increments: np.ndarray) -> np.ndarray:
    """``total += increments[k]`` for k = 0..K-1 in order; returns the K partial totals.

    ``cumsum`` along the rounds adds the rows one after the other, so with the running total
    folded into the first row every partial sum is the float K in-place additions give.
    """
    buffer = np.array(increments, dtype=np.float64)
    buffer[0] += total
    np.cumsum(buffer, axis=0, out=buffer)
    total[...] = buffer[-1]
    return buffer


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sum_i a[..., i] * b[..., i]`` summed left to right (leading axes broadcast).

    Equal to ``(a * b).sum(-1)`` up to the order of the additions, without materialising the
    broadcast product (``dot(v[:, None, :], signs)`` of (B, d) and (M, d) arrays is (B, M)).

    Args:
        a: array of shape (..., d).
        b: array of shape (..., d), broadcastable against ``a``.

    Returns:
        float64 array of the broadcast leading shape (a 0-d array for two vectors).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a.shape[-1]
    if b.shape[-1] != d:
        raise ValueError(f"dot: last axes differ ({a.shape} and {b.shape})")
    if d == 0:
        return np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    out = a[..., 0] * b[..., 0]
    out = np.array(out, dtype=np.float64)  # a fresh, writable array even for 0-d inputs
    for i in range(1, d):
        out += a[..., i] * b[..., i]
    return out
