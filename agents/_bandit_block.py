"""Shared pieces of the bandit block protocol (``play_bandit_block``) for batch-frozen learners.

A learner whose choice is frozen inside a batch of tau rounds (:mod:`agents.private_bandit`,
:mod:`agents.private_exp4`) plays a block as *segments*: a segment's first round goes through
``act``; its other rounds only accumulate, as whole-array numpy operations that repeat the
per-round arithmetic element for element. These helpers know no learner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from agents._kernels import hook_round
from agents.base import BanditObs

__all__ = [
    "round_obs",
    "play_rounds",
    "play_quiet_stretches",
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

    ``lean``: rounds after the block's first (env-made observations, horizon checked by the
    caller) skip ``act``'s parsing and checks (:func:`lean_act`).
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


def play_quiet_stretches(
    agent: Any,
    first: dict[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
    actions: np.ndarray,
    quiet_steps: Callable[[], int],
    play_quiet: Callable[[np.ndarray, np.ndarray, np.ndarray, int, int], None],
) -> None:
    """A whole block as act's rounds and the quiet stretches between them.

    The block's first round and each round ``quiet_steps`` does not cover go through ``act``'s
    hooks, the stretches through ``play_quiet(losses, rows, actions, lo, hi)``.
    ``quiet_steps()``: the learning steps from the agent's current round on that change no run's
    state beyond what ``play_quiet`` repeats (<= 0: none).
    """
    k = len(actions)
    i = 0
    while i < k:
        quiet = min(quiet_steps(), k - i) if i else 0
        if quiet <= 0:
            play_rounds(agent, first, advice, losses, rows, actions, i, i + 1, lean=i > 0)
            i += 1
            continue
        play_quiet(losses, rows, actions, i, i + quiet)
        i += quiet


#: :meth:`Agent.act` on a parsed batch observation, without its checks: the hooks' round.
lean_act = hook_round


def segment_starts(t0: int, k: int, tau: int, last_update: int) -> list[int]:
    """Block rounds where a segment starts: 0, and each i with ``t0 + i`` a multiple of ``tau``.

    Only clocks ``t0 + i <= last_update`` count.
    """
    first = -(-(t0 + 1) // tau) * tau  # the first multiple of tau above t0
    starts = [0]
    starts.extend(t - t0 for t in range(first, min(t0 + k - 1, last_update) + 1, tau))
    return starts


def played_losses(
    losses: np.ndarray, rows: np.ndarray, actions: np.ndarray, lo: int, hi: int
) -> np.ndarray:
    """(hi - lo, b) ``losses[i, rows[r], actions[i, r]]`` for block rounds ``lo..hi-1``."""
    steps = np.arange(lo, hi)[:, None]
    return losses[steps, rows[None, :], actions[lo:hi]]
