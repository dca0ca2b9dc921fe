"""Privacy audit of continuous-action (OCO) learners: events on the released points.

The statistics are those of :mod:`dp_experts_env.privacy.audit` (selection on one half of the
runs, Clopper-Pearson on the other). What changes is the output: a learner on
``DPExperts-OCO-v0`` releases a sequence of points ``x_t`` of a body in R^d, so each run's
sequence is reduced to a small integer per round -- a post-processing, which cannot raise the
true epsilon -- and audited with the per-round, block and switch-count events of
``audit_agent``:

* the side of a half-space through the centre: ``1{<v, x_t> > c}``, with ``v`` the direction in
  which the two neighbouring gradients differ (default) and threshold ``c`` (default 0);
* whether the point moved: ``1{x_t != x_{t-1}}`` (the lazy learners' switch flags, which their
  claims cover).

Round value ``2 * moved + side`` (4 values); only rounds after the differing one are audited
(earlier points cannot depend on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float
from dp_experts_env.privacy.audit import AuditResult, _check_common, _select_and_test

__all__ = ["audit_oco_agent", "encode_points"]


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
    **agent_params: Any,
) -> AuditResult:
    """Audit an OCO learner's claim on two gradient sequences differing in one round.

    Args:
        agent: a registered OCO learner (built with ``dim``, ``horizon``, ``num_envs``, ``seed``
            and ``agent_params``) or a factory ``f(num_envs, seed)``.
        gradients: (T, d) gradients fed as observations (round t's agent sees row t - 1).
        neighbor_gradients: the same with exactly one row changed.
        n_runs: runs per side (>= 200); sides use agent seeds ``2 k n`` and ``(2k + 1) n``.
        alpha: error probability of the lower bound.
        seed: first agent seed (sides and audit seeds never share runs).
        direction: the half-space normal (default: the difference of the two differing rows).
        threshold: the half-space offset.
        **agent_params: passed to ``agents.make`` with a registered name (e.g. ``epsilon=1.0``).

    Returns:
        An :class:`~dp_experts_env.privacy.audit.AuditResult` for the learner's claim.
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
    sequences, claim = [], None
    for data, first in ((x, 2 * seed * n), (xp, (2 * seed + 1) * n)):
        ag = _build(agent, n, first, horizon, dim, dict(agent_params))
        obs = np.zeros((n, dim))
        points = np.empty((n, horizon, dim))
        for t in range(horizon):
            points[:, t] = np.asarray(ag.act(obs)).reshape(n, dim)
            obs = np.broadcast_to(data[t], (n, dim)).copy()
        sequences.append(encode_points(points, v, c))
        claim = claim or ag.privacy
    # Points at index <= row were chosen before the differing gradient was fed.
    a, b = sequences[0][:, row + 1 :], sequences[1][:, row + 1 :]
    return _select_and_test(
        a,
        b,
        kind="sequence",
        alpha=alpha,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        k=4,
        offset=row + 1,
    )
