"""Privacy audit of continuous-action (OCO) learners: events on the released points.

The statistics are those of :mod:`dp_experts_env.privacy.audit` (selection on one half of the
runs, Clopper-Pearson on the other). What changes is the output: a learner on
``DPExperts-OCO-v0`` releases a sequence of points ``x_t`` of a body in R^d, so each run's
sequence is reduced -- a post-processing, which cannot raise the true epsilon -- in two ways, each
audited at confidence ``1 - alpha/2`` (a union bound keeps the pair at ``1 - alpha``):

* **sequence events**: one small integer per round from the round the differing gradient is
  read on, ``2 * moved + side`` with ``side = 1{<v, x_t> > c}`` (a half-space through the
  centre; ``v`` defaults to the difference of the two neighbouring gradients, ``c`` to 0) and
  ``moved = 1{x_t != x_{t-1}}`` (the lazy learners' switch flags, which their claims cover),
  audited with the per-round, block and switch-count events of ``audit_agent``;
* **likelihood-ratio events** (learners with a ``path_log_likelihood(points, gradients)``
  method, e.g. ``p-comw``): the log-ratio of the path's density under the two gradient
  sequences, thresholded. By Neyman-Pearson these are the most powerful events when the
  density is the learner's true one; a wrong density only costs power, never validity.

The result also states the audit's power: ``detectable_epsilon`` is the smallest true epsilon
that one of the two final events (seen ``count`` times on its favoured side in this many runs)
would have flagged as a violation of the claim -- so a pass reads "no violation found (could detect
eps > X)"; ``inf`` means neither event could reveal any violation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float
from dp_experts_env.privacy.audit import (
    AuditResult,
    _check_common,
    _select_and_test,
    epsilon_lower_bound,
)

__all__ = ["OCOAuditResult", "audit_oco_agent", "detectable_epsilon", "encode_points"]


@dataclass(frozen=True)
class OCOAuditResult(AuditResult):
    """An :class:`~dp_experts_env.privacy.audit.AuditResult` with the audit's power.

    Attributes:
        detectable_epsilon: smallest true epsilon one of the final events would have flagged
            (``inf``: none); see :func:`detectable_epsilon`.
        statistic: ``"likelihood ratio"`` or ``"sequence"``: which reduction gave the result.
    """

    detectable_epsilon: float = math.inf
    statistic: str = "sequence"

    def summary(self) -> str:
        """One line: the verdict with its power, the event and its counts."""
        if self.passed:
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


def _detectable_epsilon(
    count_hi: int, n: int, *, alpha: float, claimed_epsilon: float, delta: float = 0.0
) -> float:
    """Power of a test: the smallest true epsilon its event would have shown above the claim.

    The event was seen ``count_hi`` times in ``n`` runs on its favoured side. Had the other side
    seen it ``n (p - delta) e^{-eps}`` times (``p = count_hi / n``: a mechanism exactly eps-DP on
    this event), the lower bound would exceed ``claimed_epsilon`` for every eps above the
    returned value; ``inf`` when no count on the other side (not even 0) would.
    """
    if not math.isfinite(claimed_epsilon):
        return math.inf

    def bound(k_lo: float) -> float:
        return float(epsilon_lower_bound(count_hi, k_lo, n, alpha=alpha, delta=delta))

    p_hi = count_hi / n - delta
    if p_hi <= 0.0 or bound(0.0) <= claimed_epsilon:
        return math.inf
    lo, hi = 0.0, float(count_hi)  # bound(lo) > claim; bound(count_hi) is about 0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bound(mid) > claimed_epsilon else (lo, mid)
    return math.inf if lo <= 0.0 else max(math.log(p_hi * n / lo), claimed_epsilon)


try:  # the main audit's definition of power, when it has one (same semantics as above)
    from dp_experts_env.privacy.audit import detectable_epsilon  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the audit module's version
    detectable_epsilon = _detectable_epsilon


def encode_points(points: np.ndarray, direction: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """(n, T, d) points -> (n, T) ints ``2 * moved + 1{<direction, x_t> > threshold}``."""
    pts = np.asarray(points, dtype=np.float64)
    side = (pts @ np.asarray(direction, dtype=np.float64) > threshold).astype(np.int16)
    moved = np.zeros(side.shape, dtype=np.int16)
    moved[:, 1:] = np.any(pts[:, 1:] != pts[:, :-1], axis=-1)
    return 2 * moved + side


def _build(agent: Any, n: int, seed: int, horizon: int, dim: int, params: dict) -> Any:
    if isinstance(agent, str):
        import agents  # lazy: privacy must not import agents at module level

        return agents.make(agent, dim=dim, horizon=horizon, num_envs=n, seed=seed, **params)
    if params:
        raise TypeError("agent parameters are only accepted with a registered agent name")
    if not callable(agent):
        raise TypeError(f"agent must be a name or a factory f(num_envs, seed), got {agent!r}")
    return agent(n, seed)


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


def audit_oco_agent(
    agent: str | Callable[[int, int], Any],
    gradients: Any,
    neighbor_gradients: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    direction: Any = None,
    threshold: float = 0.0,
    likelihood: bool = True,
    **agent_params: Any,
) -> OCOAuditResult:
    """Audit an OCO learner's claim on two gradient sequences differing in one round.

    Args:
        agent: a registered OCO learner (built with ``dim``, ``horizon``, ``num_envs``, ``seed``
            and ``agent_params``) or a factory ``f(num_envs, seed)``.
        gradients: (T, d) gradients fed as observations (round t's agent sees row t - 1).
        neighbor_gradients: the same with exactly one row changed.
        n_runs: runs per side (>= 200); sides use agent seeds ``2 k n`` and ``(2k + 1) n``.
        alpha: error probability of the lower bound (split between the two reductions).
        seed: first agent seed (sides and audit seeds never share runs).
        direction: the half-space normal (default: the difference of the two differing rows).
        threshold: the half-space offset.
        likelihood: also audit likelihood-ratio events when the learner has
            ``path_log_likelihood`` (default True).
        **agent_params: passed to ``agents.make`` with a registered name (e.g. ``epsilon=1.0``).

    Returns:
        An :class:`OCOAuditResult` (the union bound makes the pair valid at ``1 - alpha``): the
        event of the reduction with the larger lower bound, and as power the smaller
        ``detectable_epsilon`` of the two reductions' final events.
    """
    n, alpha, seed = _check_common(n_runs, alpha, seed)
    x = np.asarray(gradients, dtype=np.float64)
    xp = np.asarray(neighbor_gradients, dtype=np.float64)
    if x.ndim != 2 or x.shape != xp.shape or not (np.isfinite(x).all() and np.isfinite(xp).all()):
        raise ValueError(
            f"gradients and neighbor_gradients must be finite (T, d) arrays of the same shape, "
            f"got {x.shape} and {xp.shape}"
        )
    rows = np.flatnonzero(np.any(x != xp, axis=1))
    if len(rows) != 1:
        raise ValueError(f"the gradient sequences must differ in exactly one row, not {len(rows)}")
    row = int(rows[0])
    horizon, dim = x.shape
    v = x[row] - xp[row] if direction is None else np.asarray(direction, dtype=np.float64)
    if v.shape != (dim,):
        raise ValueError(f"direction must have shape ({dim},), got {v.shape}")
    c = check_float("threshold", threshold)
    sequences, paths, claim, first = [], [], None, None
    for data, start in ((x, 2 * seed * n), (xp, (2 * seed + 1) * n)):
        ag = _build(agent, n, start, horizon, dim, dict(agent_params))
        obs = np.zeros((n, dim))
        points = np.empty((n, horizon, dim))
        for t in range(horizon):
            points[:, t] = np.asarray(ag.act(obs)).reshape(n, dim)
            obs = np.broadcast_to(data[t], (n, dim)).copy()
        sequences.append(encode_points(points, v, c))
        paths.append(points)
        claim = claim or ag.privacy
        first = first or ag
    eps, dlt = float(claim.epsilon), float(claim.delta)
    density = getattr(first, "path_log_likelihood", None) if likelihood else None
    if density is not None and getattr(first, "leader_only", False):
        density = None  # a deterministic path has no density
    split = 2.0 if density is not None else 1.0
    # The point of the round reading the changed gradient (index row + 1) is the first one that
    # can depend on it; index row is kept because the coin of that round reads it.
    a, b = sequences[0][:, row:], sequences[1][:, row:]
    seq = _select_and_test(
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
            llr = [np.nan_to_num(density(p, x) - density(p, xp)) for p in paths]
        lr = _select_and_test(
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
