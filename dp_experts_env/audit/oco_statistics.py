"""Privacy audit of continuous-action (OCO) learners: events on the released points.

Two reductions of each run's points, each audited at ``1 - alpha/2``: sequence tokens
``2 * moved + 1{<v, x_t> > c}`` and, with ``path_log_likelihood``, likelihood-ratio events.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float
from dp_experts_env.audit.bounds import AuditResult, detectable_epsilon, runs_needed
from dp_experts_env.audit.selection import check_audit_args, select_and_test
from dp_experts_env.fixed_order import dot

__all__ = [
    "OCOAuditResult",
    "audit_oco_paths",
    "check_gradient_pair",
    "encode_points",
]


@dataclass(frozen=True)
class OCOAuditResult(AuditResult):
    """An :class:`~dp_experts_env.audit.bounds.AuditResult` with the audit's power.

    Attributes:
        detectable_epsilon: smallest true epsilon one of the final events would have flagged
            (``inf``: none).
        statistic: ``"likelihood ratio"`` or ``"sequence"``: which reduction gave the result.
    """

    detectable_epsilon: float = math.inf
    statistic: str = "sequence"

    def summary(self) -> str:
        """One line: the verdict with its power, the event and its counts."""
        if self.inconclusive:
            need = runs_needed(
                max(self.counts),
                self.n_heldout,
                alpha=self.alpha,
                claimed_epsilon=self.claimed_epsilon,
                delta=self.claimed_delta,
            )
            more = f"; about {need:.3g} runs per side would" if math.isfinite(need) else ""
            verdict = (
                f"inconclusive at this run count (could not have shown even a learner spending "
                f"2x the claim{more}; no violation found); epsilon >= "
                f"{self.epsilon_lower_bound:.3f}"
            )
        elif self.passed:
            power = (
                f"could detect eps > {self.detectable_epsilon:.3g}"
                if math.isfinite(self.detectable_epsilon)
                else "this event could not reveal any violation"
            )
            verdict = f"no violation found ({power}); epsilon >= {self.epsilon_lower_bound:.3f}"
        else:
            verdict = f"VIOLATION: epsilon >= {self.epsilon_lower_bound:.3f}"
        return (
            f"{verdict} (confidence {1 - self.alpha:g}) vs claimed {self.claimed_epsilon:g}; "
            f"{self.statistic} event {self.event}; counts {self.counts[0]}/{self.n_heldout} vs "
            f"{self.counts[1]}/{self.n_heldout}"
        )


def encode_points(points: np.ndarray, direction: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """(n, T, d) points -> (n, T) ints ``2 * moved + 1{<direction, x_t> > threshold}``."""
    pts = np.asarray(points, dtype=np.float64)
    side = (dot(pts, np.asarray(direction, dtype=np.float64)) > threshold).astype(np.int16)
    moved = np.zeros(side.shape, dtype=np.int16)
    moved[:, 1:] = np.any(pts[:, 1:] != pts[:, :-1], axis=-1)
    return 2 * moved + side


def _with_power(result: AuditResult, statistic: str) -> OCOAuditResult:
    own = ("detectable_epsilon", "statistic")
    base = {f.name: getattr(result, f.name) for f in fields(result) if f.name not in own}
    power = getattr(result, "detectable_epsilon", math.inf)
    if not math.isfinite(power):
        power = detectable_epsilon(
            max(result.counts), result.n_heldout, alpha=result.alpha,
            claimed_epsilon=result.claimed_epsilon, delta=result.claimed_delta,
        )  # fmt: skip
    return OCOAuditResult(**base, detectable_epsilon=power, statistic=statistic)


def audit_oco_paths(
    paths: Any,
    neighbor_paths: Any,
    gradients: Any,
    neighbor_gradients: Any,
    *,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    density: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    alpha: float = 1e-3,
    direction: Any = None,
    threshold: float = 0.0,
) -> OCOAuditResult:
    """Audit recorded OCO paths played on two gradient sequences differing in one round.

    Args:
        paths: (n, T, d) points released on ``gradients`` (n independent runs).
        neighbor_paths: (n, T, d) points released on ``neighbor_gradients`` (independent seeds).
        gradients: (T, d) gradients the first runs observed (round t's play saw rows < t).
        neighbor_gradients: the same with exactly one row changed.
        claimed_epsilon: the claim's epsilon.
        claimed_delta: the claim's delta.
        density: optional ``density(points, gradients) -> (n,)`` path log-density (the learner's
            ``path_log_likelihood``); adds the likelihood-ratio events.
        alpha: error probability of the lower bound (split between the two reductions).
        direction: the half-space normal (default: the difference of the two differing rows).
        threshold: the half-space offset.

    Returns:
        An :class:`OCOAuditResult`: the reduction with the larger bound, the better power.
    """
    x = np.asarray(gradients, dtype=np.float64)
    xp = np.asarray(neighbor_gradients, dtype=np.float64)
    _, row, v = check_gradient_pair(x, xp, direction)
    c = check_float("threshold", threshold)
    pts = [np.asarray(paths, dtype=np.float64), np.asarray(neighbor_paths, dtype=np.float64)]
    if pts[0].ndim != 3 or pts[0].shape != pts[1].shape or pts[0].shape[1:] != x.shape:
        raise ValueError(
            f"paths and neighbor_paths must both have shape (n, T, d) = (n, {x.shape[0]}, "
            f"{x.shape[1]}), got {pts[0].shape} and {pts[1].shape}"
        )
    n = pts[0].shape[0]
    check_audit_args(n, alpha, 0)
    eps, dlt = float(claimed_epsilon), float(claimed_delta)
    split = 2.0 if density is not None else 1.0
    sequences = [encode_points(p, v, c) for p in pts]
    # Index row + 1 is the first point that can depend on the change; row's coin reads it too.
    a, b = sequences[0][:, row:], sequences[1][:, row:]
    seq = select_and_test(
        a,
        b,
        kind="sequence",
        alpha=alpha / split,
        claimed_epsilon=eps,
        claimed_delta=dlt,
        k=4,
        offset=row,
    )
    best = _with_power(seq, "sequence")
    if density is not None:
        with np.errstate(invalid="ignore"):
            llr = [np.nan_to_num(density(p, x) - density(p, xp)) for p in pts]
        lr = select_and_test(
            llr[0][:, None],
            llr[1][:, None],
            kind="real",
            alpha=alpha / split,
            claimed_epsilon=eps,
            claimed_delta=dlt,
        )
        lr = _with_power(lr, "likelihood ratio")
        event = f"{lr.event.replace('output', 'log-likelihood ratio')}"
        lr = OCOAuditResult(**{**lr.__dict__, "event": event})
        # The larger bound is the result; the power is the better of the two final events'.
        power = min(lr.detectable_epsilon, best.detectable_epsilon)
        if lr.epsilon_lower_bound > best.epsilon_lower_bound or (
            lr.epsilon_lower_bound == best.epsilon_lower_bound
            and lr.detectable_epsilon < best.detectable_epsilon
        ):
            best = lr
        best = OCOAuditResult(**{**best.__dict__, "detectable_epsilon": power})
    return OCOAuditResult(**{**best.__dict__, "alpha": alpha})


def check_gradient_pair(
    gradients: np.ndarray, neighbor_gradients: np.ndarray, direction: Any = None
) -> tuple[tuple[int, int], int, np.ndarray]:
    """Validate a neighbouring pair: ``((T, d), the differing row, the half-space normal)``."""
    x, xp = gradients, neighbor_gradients
    if x.ndim != 2 or x.shape != xp.shape or not (np.isfinite(x).all() and np.isfinite(xp).all()):
        raise ValueError(
            f"gradients and neighbor_gradients must be finite (T, d) arrays of the same shape, "
            f"got {x.shape} and {xp.shape}"
        )
    rows = np.flatnonzero(np.any(x != xp, axis=1))
    if len(rows) != 1:
        raise ValueError(f"the gradient sequences must differ in exactly one row, not {len(rows)}")
    row = int(rows[0])
    dim = x.shape[1]
    v = x[row] - xp[row] if direction is None else np.asarray(direction, dtype=np.float64)
    if v.shape != (dim,):
        raise ValueError(f"direction must have shape ({dim},), got {v.shape}")
    return (int(x.shape[0]), int(dim)), row, v
