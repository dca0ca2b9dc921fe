"""Change-point schedules: where the K shifts of a piecewise-stationary game fall.

Convention (erratum E-ARS-13): change points ``1 < tau_1 < ... < tau_K <= T`` are 1-based rounds;
segment ``k`` (0-based) is ``[tau_k, tau_{k+1})`` with ``tau_0 = 1``, ``tau_{K+1} = T + 1``, and
round ``tau_k`` is flagged as a *shift*. Modes:

* ``"even"``: ``tau_k = floor(k T / (K + 1)) + 1``.
* ``"uniform"``: K distinct rounds uniform in ``{2, ..., T}``.
* ``"min_gap"``: uniform over the schedules whose segments last at least ``min_length``.
* ``"anti_doubling"``: the K largest rounds ``2^m + 1 <= T`` (after lazy learners' updates).
* an explicit list of rounds (passed as the mode).

Random modes draw each run's schedule from the structure stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "CHANGE_POINT_MODES",
    "ChangePointSchedule",
    "SegmentClock",
    "dyadic_capacity",
    "segment_at",
    "segment_lengths",
    "uniform_subsets",
]

CHANGE_POINT_MODES = ("even", "uniform", "min_gap", "anti_doubling", "explicit")

# Candidate rounds keyed at a time by uniform_subsets: O(B (K + chunk)) memory whatever T.
_SUBSET_CHUNK = 1 << 15


def dyadic_capacity(horizon: int) -> int:
    """Number of rounds of the form ``2^m + 1`` (m >= 1) in ``{2, ..., horizon}``."""
    if horizon < 3:
        return 0
    return int(horizon - 1).bit_length() - 1


def segment_at(change_points: np.ndarray, t: int | np.ndarray) -> np.ndarray:
    """Segment index (0-based) of round ``t`` for every run.

    Args:
        change_points: (B, K) sorted 1-based change rounds.
        t: a round (1-based), or a (B,) array of rounds.

    Returns:
        (B,) int64: the number of change points ``<= t``.
    """
    cps = np.asarray(change_points)
    t_arr = np.asarray(t)
    if t_arr.ndim:
        t_arr = t_arr[:, None]
    return np.sum(cps <= t_arr, axis=-1).astype(np.int64)


def segment_lengths(change_points: np.ndarray, horizon: int) -> np.ndarray:
    """(B, K+1) number of rounds in each segment."""
    cps = np.asarray(change_points, dtype=np.int64)
    runs = cps.shape[0]
    edges = np.concatenate(
        [np.ones((runs, 1), np.int64), cps, np.full((runs, 1), horizon + 1, np.int64)], axis=1
    )
    return np.diff(edges, axis=1)


def uniform_subsets(rng: BatchRNG, n: int, k: int) -> np.ndarray:
    """A uniform k-subset of ``{1, ..., n}`` per run, sorted (B, k): the k least of n keys."""
    runs = rng.num_runs
    if k == 0:
        return np.zeros((runs, 0), np.int64)
    if k == n:
        return np.broadcast_to(np.arange(1, n + 1, dtype=np.int64), (runs, n)).copy()
    chunk = max(k, _SUBSET_CHUNK)
    best_keys = np.empty((runs, 0))
    best_idx = np.empty((runs, 0), np.int64)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        keys = np.concatenate([best_keys, rng.random((size,))], axis=1)
        cand = np.arange(start + 1, start + size + 1, dtype=np.int64)
        idx = np.concatenate([best_idx, np.broadcast_to(cand, (runs, size))], axis=1)
        if keys.shape[1] > k:
            keep = np.argpartition(keys, k - 1, axis=1)[:, :k]
            keys = np.take_along_axis(keys, keep, axis=1)
            idx = np.take_along_axis(idx, keep, axis=1)
        best_keys, best_idx = keys, idx
    return np.sort(best_idx, axis=1)


class ChangePointSchedule:
    """A validated change-point specification; :meth:`draw` makes the (B, K) rounds per run.

    Args:
        horizon: T.
        n_shifts: K; None: ``min(default_shifts, capacity)`` (capacity T - 1, or the rounds
            ``2^m + 1 <= T`` for ``anti_doubling``), or an explicit list's length.
        change_points: a mode name or an increasing sequence of rounds in ``{2, ..., T}``.
        min_length: least segment length of ``"min_gap"`` (default ``max(1, T // (4 (K + 1)))``;
            ``(K + 1) * min_length <= T``).
        default_shifts: K when ``n_shifts`` is None.
    """

    def __init__(
        self,
        horizon: int,
        n_shifts: int | None = None,
        change_points: str | Sequence[int] | np.ndarray = "even",
        *,
        min_length: int | None = None,
        default_shifts: int = 4,
    ) -> None:
        self.horizon = check_int("horizon", horizon, minimum=1)
        if n_shifts is not None:
            n_shifts = check_int("n_shifts", n_shifts, minimum=0)
        self._fixed: np.ndarray | None = None
        if isinstance(change_points, str):
            if change_points == "explicit":
                raise ValueError(
                    "change_points='explicit' needs the rounds themselves: pass "
                    "change_points=[t1, t2, ...] (increasing rounds in 2..T)"
                )
            self.mode = check_choice("change_points", change_points, CHANGE_POINT_MODES[:-1])
        elif isinstance(change_points, (Sequence, np.ndarray)):
            self.mode = "explicit"
            self._fixed = self._check_explicit(change_points)
            if n_shifts is not None and n_shifts != len(self._fixed):
                raise ValueError(
                    f"n_shifts={n_shifts} disagrees with the {len(self._fixed)} explicit "
                    "change_points given; give one of them or make them agree"
                )
            n_shifts = len(self._fixed)
        else:
            raise TypeError(
                f"change_points must be one of {CHANGE_POINT_MODES[:-1]} or a list of rounds, got "
                f"{type(change_points).__name__}"
            )

        capacity = dyadic_capacity(self.horizon) if self.mode == "anti_doubling" else horizon - 1
        if n_shifts is None:
            n_shifts = min(check_int("default_shifts", default_shifts, minimum=0), capacity)
        if n_shifts > capacity:
            what = (
                f"rounds of the form 2^m + 1 <= T (there are {capacity} for T={horizon})"
                if self.mode == "anti_doubling"
                else f"T - 1 = {capacity} (change points are distinct rounds in 2..T)"
            )
            raise ValueError(f"n_shifts must be <= {what}, got {n_shifts}")
        self.n_shifts = n_shifts

        if min_length is not None and self.mode != "min_gap":
            raise ValueError(
                f"min_length applies only to change_points='min_gap', not {self.mode!r}"
            )
        self.min_length = 1
        if self.mode == "min_gap":
            default = max(1, self.horizon // (4 * (n_shifts + 1)))
            self.min_length = (
                default if min_length is None else check_int("min_length", min_length, minimum=1)
            )
            if (n_shifts + 1) * self.min_length > self.horizon:
                raise ValueError(
                    f"min_length must be <= T / (n_shifts + 1) = {self.horizon}/{n_shifts + 1} so "
                    f"that {n_shifts + 1} segments fit; got {self.min_length}"
                )
        if self.mode == "even":
            k = np.arange(1, n_shifts + 1, dtype=np.int64)
            self._fixed = (k * self.horizon) // (n_shifts + 1) + 1
        elif self.mode == "anti_doubling":
            m = np.arange(capacity - n_shifts + 1, capacity + 1, dtype=np.int64)
            self._fixed = (np.int64(1) << m) + 1

    def _check_explicit(self, values: Sequence[int] | np.ndarray) -> np.ndarray:
        try:
            arr = np.asarray(values)
        except ValueError as err:
            raise ValueError("change_points must be a flat list of integer rounds") from err
        if arr.ndim != 1:
            raise ValueError(
                f"change_points must be a flat list of rounds, got an array of shape {arr.shape}"
            )
        rounds = [
            check_int(f"change_points[{i}]", v, minimum=2, maximum=self.horizon)
            for i, v in enumerate(list(values))
        ]
        for i in range(1, len(rounds)):
            if rounds[i] <= rounds[i - 1]:
                raise ValueError(
                    "change_points must be strictly increasing rounds in 2..T; got "
                    f"{rounds[i - 1]} then {rounds[i]} at positions {i - 1}, {i}"
                )
        return np.asarray(rounds, dtype=np.int64)

    def draw(self, rng: BatchRNG) -> np.ndarray:
        """(B, K) sorted 1-based change rounds, one row per run of ``rng``."""
        runs = rng.num_runs
        if self._fixed is not None:
            return np.broadcast_to(self._fixed, (runs, self.n_shifts)).copy()
        k, g = self.n_shifts, self.min_length
        # Stars and bars: slack rounds beyond the minimum lengths, spread over K+1 segments.
        n = self.horizon - (k + 1) * g + k
        picks = uniform_subsets(rng, n, k)
        return picks + np.arange(1, k + 1, dtype=np.int64) * (g - 1) + 1

    def describe(self) -> dict[str, Any]:
        """Plain description (for logs and docs)."""
        out: dict[str, Any] = {"mode": self.mode, "n_shifts": self.n_shifts}
        if self.mode == "min_gap":
            out["min_length"] = self.min_length
        if self._fixed is not None:
            out["rounds"] = self._fixed.tolist()
        return out


class SegmentClock:
    """Tracks each run's segment as rounds advance one at a time: O(B) per round.

    Args:
        change_points: (B, K) sorted change rounds.
        horizon: T.
    """

    def __init__(self, change_points: np.ndarray, horizon: int) -> None:
        cps = np.asarray(change_points, dtype=np.int64)
        runs = cps.shape[0]
        # Sentinel column T + 1: "no further change" for runs in their last segment.
        self._cps = np.concatenate([cps, np.full((runs, 1), horizon + 1, np.int64)], axis=1)
        self._rows = np.arange(runs)
        self.segment = np.zeros(runs, np.int64)
        self._next = self._cps[:, 0].copy()
        # The earliest pending change over all runs: rounds before it need no comparison.
        self._soonest = int(self._next.min())
        #: True when the last :meth:`advance` started a new segment in some run.
        self.shifted = False

    def advance(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Enter round ``t`` (called for t = 1, 2, ... in order).

        Returns:
            (segment, shift): fresh (B,) arrays; ``shift`` where round ``t`` starts a segment.
        """
        if t < self._soonest:
            self.shifted = False
            return self.segment.copy(), np.zeros(self.segment.shape, bool)
        shift = self._next == t
        self.shifted = bool(shift.any())
        if self.shifted:
            self.segment = self.segment + shift
            self._next = self._cps[self._rows, self.segment]
            self._soonest = int(self._next.min())
        return self.segment.copy(), shift

    def advance_block(self, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Enter rounds ``t .. t + k - 1`` at once: what ``k`` calls of :meth:`advance` give.

        Returns:
            (segment, shift): fresh (k, B) arrays, row i for round ``t + i``.
        """
        runs = self._rows.shape[0]
        if t + k - 1 < self._soonest:
            # No run changes segment inside the block (the single path's fast case too).
            self.shifted = False
            segment = np.broadcast_to(self.segment, (k, runs)).copy()
            return segment, np.zeros((k, runs), bool)
        cps = self._cps
        rounds = np.arange(t, t + k, dtype=np.int64)
        if runs * k * cps.shape[1] <= 1 << 22:
            segment = (cps[:, None, :] <= rounds[None, :, None]).sum(axis=2).T  # (k, B)
        else:
            segment = np.stack([np.searchsorted(row, rounds, side="right") for row in cps], 1)
        segment = segment.astype(np.int64, copy=False)
        shift = np.empty((k, runs), dtype=bool)
        shift[0] = segment[0] != self.segment
        shift[1:] = segment[1:] != segment[:-1]
        self.segment = segment[-1].copy()
        self._next = self._cps[self._rows, self.segment]
        self._soonest = int(self._next.min())
        self.shifted = bool(shift[-1].any())
        return segment, shift
