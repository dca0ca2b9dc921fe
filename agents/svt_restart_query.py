"""svt-restart's per-round query and snapshot pushes, compiled (the numpy path's floats).

Each computes the numpy path's floats in its order (``+ - *``, min and max only), so both paths give
the same actions.
"""

from __future__ import annotations

import numpy as np

from dp_experts_env._jit import helper, kernel

__all__ = [
    "bernstein_query",
    "bernstein_query_kernel",
    "push_snapshots",
    "push_snapshots_kernel",
    "window_bound",
]


@helper
def window_bound(
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    count: int,
    v: float,
    d: float,
    with_d: bool,
) -> float:
    """One element's boundary ``min_{k < count} (offsets[k] + slopes[k] v [+ dslopes[k] d])``.

    Shared with svt-restart's block kernel (:mod:`agents._svt_kernels`): the same floats.
    """
    b = offsets[0] + slopes[0] * v
    if with_d:
        b = b + dslopes[0] * d
    for k in range(1, count):
        term = offsets[k] + slopes[k] * v
        if with_d:
            term = term + dslopes[k] * d
        if term < b:
            b = term
    return b


@helper
def bernstein_query(
    r: int,
    cum: np.ndarray,
    cum_sq: np.ndarray,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    empty: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    with_d: bool,
    c: float,
    scale: float,
    learner: np.ndarray,
) -> float:
    """Run r's dyadic Bernstein/betting query (:meth:`SVTRestart._bernstein_query_dyadic`).

    Every non-empty (expert, column) element is evaluated: a bound that skips elements below the
    running maximum cost more per element than the few operations it saves (most columns use one
    or two lambdas), so neither the per-round kernel nor the block kernel prunes.
    """
    n, cols = snap_experts.shape[1], snap_experts.shape[2]
    best = -np.inf
    for q in range(cols):
        learner[q] = cum[r, n] - snap_learner[r, q]
    for j in range(n):
        cj, sj = cum[r, j], cum_sq[r, j]
        for q in range(cols):
            if empty[r, q]:
                continue
            expert = cj - snap_experts[r, j, q]
            d = learner[q] - expert
            v = sj - snap_sq[r, j, q]
            if v < 0.0:
                v = 0.0
            b = window_bound(offsets, slopes, dslopes, counts[q], v, d, with_d)
            query = d - scale * (b + c)
            if query > best:
                best = query
    return best


@kernel
def bernstein_query_kernel(  # pragma: no cover - compiled; its Python form runs in the tests
    cum: np.ndarray,
    cum_sq: np.ndarray,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    empty: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    with_d: bool,
    const: np.ndarray,
    scale: float,
    out: np.ndarray,
) -> None:
    """:meth:`SVTRestart._bernstein_query` (dyadic grid) in one pass: the same floats.

    ``out[r]`` is the largest ``d - scale (b + const[r])`` over run r's non-empty columns and the
    experts (-inf when all are empty), ``b`` as in :func:`window_bound`.
    """
    learner = np.empty(snap_experts.shape[2])
    for r in range(snap_experts.shape[0]):
        out[r] = bernstein_query(
            r, cum, cum_sq, snap_experts, snap_learner, snap_sq, empty, counts, offsets, slopes,
            dslopes, with_d, const[r], scale, learner,
        )  # fmt: skip


@helper
def push_snapshots(
    r: int,
    tau: int,
    t: int,
    pow2: np.ndarray,
    store_index: np.ndarray,
    cum: np.ndarray,
    cum_sq: np.ndarray,
    with_sq: bool,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    col_time: np.ndarray,
    col_empty: np.ndarray,
    snap_time: np.ndarray,
    snap_count: np.ndarray,
) -> None:
    """``SVTRestart._push_snapshots`` for run r; ``snap_sq`` is written only ``with_sq``."""
    n = snap_experts.shape[1]
    levels, slots = store_index.shape
    for lev in range(levels):
        if tau % pow2[lev] != 0:
            continue
        slot = snap_count[r, lev] % slots
        col = store_index[lev, slot]
        if col >= 0:
            for j in range(n):
                snap_experts[r, j, col] = cum[j]
            snap_learner[r, col] = cum[n]
            if with_sq:
                for j in range(n):
                    snap_sq[r, j, col] = cum_sq[j]
            col_time[r, col] = t
            col_empty[r, col] = False
        snap_time[r, lev, slot] = t
        snap_count[r, lev] += 1


@kernel
def push_snapshots_kernel(  # pragma: no cover - compiled; its Python form runs in the tests
    tau: np.ndarray,
    mask: np.ndarray,
    t: int,
    pow2: np.ndarray,
    store_index: np.ndarray,
    cum: np.ndarray,
    cum_sq: np.ndarray,
    with_sq: bool,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    col_time: np.ndarray,
    col_empty: np.ndarray,
    snap_time: np.ndarray,
    snap_count: np.ndarray,
) -> None:
    """:meth:`SVTRestart._push_snapshots` run by run (copies only: the same values)."""
    for r in range(snap_experts.shape[0]):
        if mask[r]:
            push_snapshots(
                r, tau[r], t, pow2, store_index, cum[r], cum_sq[r], with_sq, snap_experts,
                snap_learner, snap_sq, col_time, col_empty, snap_time, snap_count,
            )  # fmt: skip
