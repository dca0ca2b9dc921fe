"""Block play for full-information learners: K rounds of ``act`` in one call, bit for bit.

An oblivious game's losses can be drawn before the learner acts (:mod:`dp_experts_env.envs.core`,
block steps), so a learner may choose K actions in one call: ``agent.play_block(obs)`` with
``obs`` the (K, B, N) observations K calls of ``act`` would receive returns the (K, B) actions
they would return, leaves the agent in the state they would leave, and consumes the same random
numbers in the same order. Nothing here changes a learner's law or stream; the learner lock and
``tests/test_play_block.py`` (every learner with ``play_block`` against K calls of ``act``, on
the compiled and the numpy paths) hold it to that.

How the K rounds run without the interpreter:

* sums over rounds (cumulative losses) are sequential accumulations (``cumsum`` along the
  rounds, the K in-place additions in order);
* everything the per-round path computes from those sums alone (softmax, leaders, inverse-CDF
  draws) is the same numpy operation on a (K, B, N) array instead of K (B, N) ones: elementwise
  operations and last-axis reductions give each row the same floats;
* the uniforms of K rounds are one read of the run's stream (:func:`round_uniforms`);
* what is truly recursive in the actions (the shrinking dartboard's stay-or-move) runs in a
  compiled kernel (:func:`dartboard_choices`) fed with numpy's transcendental values, since
  numba's ``exp``/``log`` differ from numpy's in the last bit (:mod:`dp_experts_env._jit`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dp_experts_env._jit import kernel
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "accumulate",
    "categorical_rows",
    "check_block",
    "dartboard_choices",
    "finish_block",
    "round_uniforms",
    "softmax_rows",
    "uniform_among_rows",
]


def check_block(agent: Any, obs: Any) -> np.ndarray:
    """The (K, B, N) block as float64, checked as K calls of ``act`` would check it.

    Raises:
        ValueError: wrong shape, a round past the horizon, or a loss outside [0, 1] (named by
            its round, as ``act`` names it).
    """
    arr = np.asarray(obs, dtype=np.float64)
    b, n = agent.num_envs, agent.n_experts
    if arr.ndim != 3 or arr.shape[1:] != (b, n):
        raise ValueError(f"obs must have shape (K, {b}, {n}) (K rounds), got {arr.shape}")
    k = arr.shape[0]
    if agent.t + k > agent.horizon:
        raise ValueError(
            f"agent {agent.name!r} has {agent.horizon - agent.t} rounds left of its "
            f"horizon={agent.horizon}; a block of {k} rounds is outside its privacy claim and "
            "tuning; call reset() to start a new episode"
        )
    flat = arr.reshape(k, -1)
    ok = (np.minimum.reduce(flat, axis=1) >= 0.0) & (np.maximum.reduce(flat, axis=1) <= 1.0)
    if not ok.all():
        i = int(np.argmin(ok))
        bad = np.argwhere(~((arr[i] >= 0.0) & (arr[i] <= 1.0)))[0]
        t = agent.t + i
        raise ValueError(
            f"obs for round {t + 1} (feedback of round {t}): losses must be finite and lie in "
            f"[0, 1]; found {arr[i][tuple(bad)]} at run {bad[0]}, expert {bad[1]}"
        )
    return arr


def finish_block(agent: Any, actions: np.ndarray) -> np.ndarray:
    """Advance the agent's clock past the block and return its (K, B) int64 actions."""
    actions = np.asarray(actions, dtype=np.int64)
    if len(actions):
        agent.t += len(actions)
        agent.last_actions = actions[-1].copy()
    return actions


def accumulate(start: np.ndarray, obs: np.ndarray, learn_first: bool) -> np.ndarray:
    """(K, B, N) sums after each round's learning step: ``start`` plus the rounds learned so far.

    Row k equals ``start`` after the in-place additions ``+= obs[0]``, ..., ``+= obs[k]`` (the
    first one skipped when ``learn_first`` is False: ``act`` learns nothing in round 1).
    """
    sums = np.array(obs, dtype=np.float64)
    if not learn_first:
        sums[0] = 0.0  # x + 0.0 is x for the sums kept here (never -0.0)
    sums[0] += start
    return np.cumsum(sums, axis=0, out=sums)


def round_uniforms(rng: BatchRNG, rounds: int, per_round: int) -> np.ndarray:
    """(K, B, per_round) uniforms: what K rounds drawing ``per_round`` each would read."""
    u = rng.random((rounds * per_round,))
    return u.reshape(rng.num_runs, rounds, per_round).transpose(1, 0, 2)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """:func:`agents._simplex.softmax` on the last axis of a (..., N) array (the same floats)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def categorical_rows(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:meth:`BatchRNG.categorical` on (K, B, N) laws with its (K, B) uniforms given."""
    cdf = np.cumsum(probs, axis=-1)
    scaled = u[..., None] * cdf[..., -1:]
    idx = np.sum(cdf <= scaled, axis=-1)
    return np.minimum(idx, probs.shape[-1] - 1).astype(np.int64)


def uniform_among_rows(mask: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`agents._simplex.uniform_among` on (K, B, N) masks and (K, B) uniforms."""
    counts = mask.sum(axis=-1)
    k = np.minimum(np.floor(u * counts).astype(np.int64), counts - 1)
    rank = np.cumsum(mask, axis=-1)
    return np.argmax(mask & (rank == (k + 1)[..., None]), axis=-1).astype(np.int64)


@kernel
def dartboard_choices(stay_factor, u_stay, fresh, last, switches, stay_probability, first):  # noqa: ANN001, ANN201
    """The shrinking dartboard's K rounds: keep the last expert or take the fresh draw.

    Args:
        stay_factor: (K, B, N) ``exp(-eta l)`` of every round's losses (numpy's exp).
        u_stay: (K, B) the stay coins' uniforms (row 0 unused when ``first``).
        fresh: (K, B) the fresh draws from Hedge's law.
        last: (B,) the previous actions (updated in place).
        switches: (B,) switch counters (updated in place).
        stay_probability: (B,) the agent's stay probabilities (updated in place).
        first: True when row 0 is round 1 (no stay coin, no learning).

    Returns:
        (K, B) actions.
    """
    rounds, runs = fresh.shape
    actions = np.empty((rounds, runs), dtype=np.int64)
    for k in range(rounds):
        for b in range(runs):
            if k == 0 and first:
                action = fresh[0, b]
            else:
                # Learning from round k's feedback: the stay probability of the expert played.
                p = stay_factor[k, b, last[b]]
                stay_probability[b] = p
                action = last[b] if u_stay[k, b] < p else fresh[k, b]
                if action != last[b]:
                    switches[b] += 1
            actions[k, b] = action
            last[b] = action
    return actions
