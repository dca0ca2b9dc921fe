"""Inner products summed in one fixed order, the same on every machine.

BLAS picks its kernel per CPU, so ``a @ b`` can differ in the last bit between machines; every
value that feeds results, ``info`` or a sampling decision uses :func:`dot` instead
(docs/environments.md, "What is bit for bit, and where").
"""

from __future__ import annotations

import numpy as np

__all__ = ["accumulate", "dot"]


def accumulate(total: np.ndarray, increments: np.ndarray) -> np.ndarray:
    """``total += increments[k]`` for k = 0..K-1 in order; returns the K partial totals."""
    buffer = np.array(increments, dtype=np.float64)
    buffer[0] += total
    np.cumsum(buffer, axis=0, out=buffer)
    total[...] = buffer[-1]
    return buffer


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sum_i a[..., i] * b[..., i]`` summed left to right (leading axes broadcast).

    ``(a * b).sum(-1)`` in a fixed order, without materialising the broadcast product.

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
