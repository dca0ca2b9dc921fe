"""Shared pieces of the bandit block protocol (``play_bandit_block``) for batch-frozen learners.

The episode hands a bandit learner the data of K rounds at once (docs: the module docstring of
:mod:`dp_experts_env.evaluation.episode`). A learner whose choice is frozen inside a batch of tau
rounds (the batched conversions of :mod:`agents.private_bandit`, the batched EXP4 of
:mod:`agents.private_exp4`) plays such a block as *segments*: the first round of a segment (where
the learner may release, update and draw a new choice) goes through its own ``act``, exactly as
the per-round loop would call it; the segment's other rounds change nothing but the learner's
accumulators and draw only per-round uniforms, so they are played with whole-array numpy
operations that repeat, element for element, the per-round arithmetic (same ufuncs on
contiguous arrays, sums accumulated in round order, uniforms taken from the learner's stream in
the order the per-round path takes them).

Helpers here know nothing of any learner: the observation a round would get, the per-round
fallback, and the segment starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents._kernels import hook_round
from agents.base import BanditObs

__all__ = [
    "round_obs",
    "play_rounds",
    "lean_act",
    "segment_starts",
    "played_losses",
]


def round_obs(
    first: dict[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
    actions: np.ndarray,
    i: int,
) -> dict[str, np.ndarray]:
    """The observation the per-round loop hands the agent at round ``i`` of the block.

    ``actions[:i]`` must hold the rounds already played.
    """
    if i == 0:
        return first
    last = actions[i - 1]
    return {
        "advice": first["advice"] if advice is None else advice[i],
        "last_action": last.copy(),
        "last_loss": losses[i - 1][rows, last][:, None],
    }


def play_rounds(
    agent: Any,
    first: dict[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
    actions: np.ndarray,
    start: int,
    stop: int,
    lean: bool = False,
) -> None:
    """Rounds ``start..stop-1`` of the block through ``agent.act`` (the per-round path).

    ``lean``: rounds after the block's first skip ``act``'s parsing and checks of the
    observation (made by the env, in a block whose length the caller checked against the
    horizon) and run its steps directly (:func:`lean_act`); the block's first round, whose
    observation comes from outside, always goes through ``act``.
    """
    for i in range(start, stop):
        if lean and i:
            last = actions[i - 1]
            if advice is None:
                adv = np.asarray(first["advice"], dtype=np.float64)
            else:
                adv = advice[i]
            adv = adv.reshape(agent.num_envs, agent.n_experts, agent.n_arms)
            actions[i] = lean_act(agent, BanditObs(adv, last.copy(), losses[i - 1][rows, last]))
        else:
            actions[i] = agent.act(round_obs(first, advice, losses, rows, actions, i))


#: :meth:`Agent.act` on a parsed batch observation, without its checks: the hooks' round.
lean_act = hook_round


def segment_starts(t0: int, k: int, tau: int, last_update: int) -> list[int]:
    """Block rounds (0-based) where a segment starts.

    Round 0, and each round i > 0 whose clock ``t0 + i`` (rounds played before it) is a
    multiple of ``tau`` and at most ``last_update`` (where a batch ends, the learner releases
    and may draw a new choice).
    """
    first = -(-(t0 + 1) // tau) * tau  # the first multiple of tau above t0
    starts = [0]
    starts.extend(t - t0 for t in range(first, min(t0 + k - 1, last_update) + 1, tau))
    return starts


def played_losses(
    losses: np.ndarray, rows: np.ndarray, actions: np.ndarray, lo: int, hi: int
) -> np.ndarray:
    """(hi - lo, b) ``losses[i, rows[r], actions[i, r]]`` for block rounds ``lo..hi-1``.

    Read after the actions are chosen, only at the played arms (the protocol's rule).
    """
    steps = np.arange(lo, hi)[:, None]
    return losses[steps, rows[None, :], actions[lo:hi]]
