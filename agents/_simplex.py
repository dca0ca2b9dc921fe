"""Batched helpers on the probability simplex: row-wise on (B, m) arrays, rows independent."""

from __future__ import annotations

import numpy as np

__all__ = ["softmax", "log_softmax", "log_mix_uniform", "uniform_among"]


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax with max-subtraction (no overflow for any finite logits)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log of the softmax, computed by log-sum-exp."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_mix_uniform(log_probs: np.ndarray, alpha: float) -> np.ndarray:
    """Log of ``(1 - alpha) * p + alpha / m`` given ``log p`` (rows of length m), in log space."""
    if alpha <= 0.0:
        return log_probs
    m = log_probs.shape[-1]
    if alpha >= 1.0:
        return np.full_like(log_probs, -np.log(m))
    return np.logaddexp(np.log1p(-alpha) + log_probs, np.log(alpha / m))


def uniform_among(mask: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Pick, per row, the index of a uniformly chosen True entry of ``mask``.

    Args:
        mask: (B, m) booleans, at least one True per row.
        u: (B,) uniforms in [0, 1): one per row, so the draw count never depends on the data.

    Returns:
        (B,) int64 indices: the ``floor(u * count)``-th True entry of each row.
    """
    counts = mask.sum(axis=-1)
    k = np.minimum(np.floor(u * counts).astype(np.int64), counts - 1)
    rank = np.cumsum(mask, axis=-1)  # rank[j] = number of True entries at or before j
    return np.argmax(mask & (rank == (k + 1)[:, None]), axis=-1).astype(np.int64)
