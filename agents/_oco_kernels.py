"""Block play for the OCO learners: K rounds of ``act`` in one call, bit for bit.

The contract of :mod:`agents._kernels` for (K, B, d) gradients and points. Sums, functions of
them and every ``einsum`` stay numpy; the recursions are compiled (:func:`ogd_box_rounds`,
:func:`pcomw_rounds`, whose decisions numpy confirms: docs/algorithms.md, "The OCO learners in
blocks").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dp_experts_env._jit import kernel

__all__ = [
    "check_oco_block",
    "oco_hook_loop",
    "ogd_box_rounds",
    "pcomw_path",
    "pcomw_rounds",
]


def check_oco_block(agent: Any, obs: Any) -> np.ndarray:
    """The (K, B, d) gradients as float64, checked as K calls of ``act`` would check them.

    Raises:
        ValueError: wrong shape, a round past the horizon, or a gradient that is not finite or
            longer than ``grad_bound`` (named by its round, as ``act`` names it).
        TypeError: a dict (the OCO env's observations are arrays).
    """
    if isinstance(obs, dict):
        raise TypeError(f"agent {agent.name!r} needs gradient observations, got a dict")
    arr = np.asarray(obs, dtype=np.float64)
    b, d = agent.num_envs, agent.dim
    if arr.ndim != 3 or arr.shape[1:] != (b, d):
        raise ValueError(f"obs must have shape (K, {b}, {d}) (K rounds), got {arr.shape}")
    k = arr.shape[0]
    if agent.t + k > agent.horizon:
        raise ValueError(
            f"agent {agent.name!r} has {agent.horizon - agent.t} rounds left of its "
            f"horizon={agent.horizon}; a block of {k} rounds is outside its tuning; call reset() "
            "to start a new episode"
        )
    norms = np.sqrt(np.einsum("kbi,kbi->kb", arr, arr))
    ok = norms <= agent.grad_bound * (1 + 1e-9)
    if not ok.all():
        i = int(np.argmin(ok.all(axis=1)))
        raise ValueError(
            f"obs for round {agent.t + i + 1}: gradients must be finite with norm <= grad_bound="
            f"{agent.grad_bound:g}; got norm {float(np.nanmax(norms[i])):.6g}"
        )
    return np.ascontiguousarray(arr)


def oco_hook_loop(agent: Any, grads: np.ndarray) -> np.ndarray:
    """K rounds through the agent's own ``_learn`` and ``_choose`` (the block checked once)."""
    points = np.empty(grads.shape)
    for i, g in enumerate(grads):
        if agent.t > 0:
            agent._learn(g)
        chosen = np.asarray(agent._choose(g), dtype=np.float64)
        agent.t += 1
        points[i] = chosen
    return points


@kernel
def ogd_box_rounds(g, point, step, radius, learn_first, out):  # noqa: ANN001, ANN201
    """K rounds of OGD on the box: ``x <- clip(x - step g, -R, R)``, as numpy computes it.

    Args:
        g: (K, B, d) the rounds' gradients (row 0 not learned unless ``learn_first``).
        point: (B, d) the current points (updated in place).
        step: the step size.
        radius: R.
        learn_first: False when row 0 is round 1 (nothing to learn yet).
        out: (K, B, d) the points played (written).
    """
    k, runs, dim = g.shape
    for i in range(k):
        for b in range(runs):
            for j in range(dim):
                if i > 0 or learn_first:
                    v = point[b, j] - step * g[i, b, j]
                    if v < -radius:
                        v = -radius
                    elif v > radius:
                        v = radius
                    point[b, j] = v
                out[i, b, j] = point[b, j]


@kernel
def pcomw_rounds(g, dz, coins, fresh, start, beta, log_phi, p, budget, first, forced, state):  # noqa: ANN001, ANN201, PLR0913
    """P-COMW's stay-or-move chain over K rounds, with a sequential dot (checked by numpy).

    Args:
        g: (K, B, d) gradients learned before each round's choice (row 0 unused when ``first``).
        dz: (K, B) ``ln Z_{t+1} - ln Z_t`` of each learned round.
        coins: (K, B, 2) the forced coin's and the stay coin's uniforms.
        fresh: (K, B, d) each round's fresh Gibbs draw (used where the point moves).
        start: (B, d) the point before the block.
        beta: the inverse temperature.
        log_phi: ``ln Phi``, the stay coin's clip.
        p: the forced coin's probability.
        budget: the resample budget B.
        first: True when row 0 is round 1 (it plays ``fresh[0]``, no coin).
        forced: (K, B) int8: -1 decide, 0 or 1 take this attempt (numpy's decision).
        state: (2, B) int64 resamples and switches (updated in place).

    Returns:
        ((K, B) int64 index of the fresh row each round's point is, -1 for ``start``;
        (K, B) bool attempts, False where no coin was read).
    """
    k, runs, dim = g.shape
    src = np.empty((k, runs), dtype=np.int64)
    attempts = np.zeros((k, runs), dtype=np.bool_)
    for b in range(runs):
        cur = -1
        for i in range(k):
            if i == 0 and first:
                cur = 0
                src[i, b] = cur
                continue
            if forced[i, b] >= 0:
                attempt = forced[i, b] == 1
            else:
                dot = 0.0
                for j in range(dim):
                    x = start[b, j] if cur < 0 else fresh[cur, b, j]
                    dot += g[i, b, j] * x
                log_stay = -beta * dot - dz[i, b] - log_phi
                log_stay = min(max(log_stay, -2.0 * log_phi), 0.0)
                attempt = coins[i, b, 0] < p or coins[i, b, 1] >= np.exp(log_stay)
            attempts[i, b] = attempt
            if attempt and state[0, b] < budget:
                cur = i
                state[0, b] += 1
                state[1, b] += 1
            src[i, b] = cur
    return src, attempts


def pcomw_path(
    g: np.ndarray,
    dz: np.ndarray,
    coins: np.ndarray,
    fresh: np.ndarray,
    start: np.ndarray,
    params: tuple[float, float, float, float],
    first: bool,
    state: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact chain: :func:`pcomw_rounds`, replayed until numpy's arithmetic confirms it.

    ``params`` is ``(beta, log_phi, p, budget)``; ``state`` (2, B) int64 resamples and
    switches, updated.

    Returns:
        (the (K, B, d) points played, the (K, B) ``log r`` of each round).
    """
    beta, log_phi, p, budget = params
    k, runs, _ = g.shape
    forced = np.full((k, runs), -1, dtype=np.int8)
    cols = np.arange(runs)
    coin_rows = np.ones((k, runs), dtype=bool)
    if first:
        coin_rows[0] = False
    while True:
        trial = state.copy()
        src, attempts = pcomw_rounds(
            g, dz, coins, fresh, start, beta, log_phi, p, budget, first, forced, trial
        )
        points = np.where((src >= 0)[..., None], fresh[np.maximum(src, 0), cols], start)
        held = np.concatenate([start[None], points[:-1]])  # the point each round's coin sees
        log_r = -beta * np.einsum("kbi,kbi->kb", g, held) - dz
        log_stay = np.clip(log_r - log_phi, -2.0 * log_phi, 0.0)
        want = (coins[..., 0] < p) | (coins[..., 1] >= np.exp(log_stay))
        wrong = (want != attempts) & coin_rows
        if not wrong.any():
            state[...] = trial
            return points, log_r
        for b in np.flatnonzero(wrong.any(axis=0)):
            i = int(np.argmax(wrong[:, b]))
            forced[i, b] = int(want[i, b])
