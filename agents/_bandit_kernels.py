"""Block play for EXP4 / EXP3 (the bandit block protocol): K rounds of ``act`` in one kernel.

Round i's observation depends on round i - 1's action, so the whole block runs in
:func:`exp4_rounds`, which reads ``losses[i, rows[r], a]`` only at the played arm. Exactness
(tests/test_ldp_exp4_block.py): the block's uniforms are one read (release, then choice, per
round); sums follow numpy's order (pairwise normalisers, ``einsum``'s in-order sum over experts);
the softmax's ``exp`` is numpy's own loop called by pointer (:mod:`agents._numpy_loops`). Without
that loop or the JIT, learners play through ``act`` (:func:`act_loop`, the reference).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents._bandit_block import play_rounds
from agents._kernels import PLAY_UNIFORMS, block_uniforms, numpy_sum
from agents._numpy_loops import exp_into, register, ufunc_loop
from dp_experts_env import samplers
from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = [
    "BlockState",
    "act_loop",
    "block_inputs",
    "block_rates",
    "exp4_rounds",
    "kernel_ready",
    "play_exp3_core",
    "play_exp4_core",
    "run_exp4_block",
]

def kernel_ready() -> bool:
    """True when the compiled block kernel runs (JIT on, numpy's exp loop available)."""
    return jit_enabled() and ufunc_loop(np.exp, (8, 8)) is not None


@helper(inline=False)
def _row_sum(row: np.ndarray, n: int) -> float:
    """``row[:n].sum()`` as numpy sums it (a called function: the kernel compiles faster)."""
    return numpy_sum(row, 0, n)


@kernel
def exp4_rounds(  # noqa: ANN201, PLR0913
    cum, neg_rate, first_advice, block_advice, identity, normalise, losses, rows, loss0,
    learn_first, u_choice, noise, noisy, clip, keep, add, mix, last_advice, q_at_arm, last_q,
    z, e, loop,
):  # noqa: ANN001
    """EXP4's K rounds (:class:`agents.bandit_core.Exp4Core` under ``act``): (K, B) actions.

    Args:
        cum: (B, N) cumulative estimated expert losses (updated in place).
        neg_rate: (K,) minus each round's learning rate.
        first_advice: (B, N, A) round 0's advice (every round's if ``block_advice`` is empty).
        block_advice: (K, B, N, A) the rounds' advice (row 0 unused), or (0, ...).
        identity: every round's advice is the identity: ``Q = P``.
        normalise: divide ``Q`` by its sum (EXP4) or not (EXP3).
        losses: (K, S, A) the block's losses; read at the played arm only.
        rows: (B,) stream row of each run.
        loss0: (B,) the observed (clipped) loss of the round before the block.
        learn_first: round 0 learns (the agent played before the block).
        u_choice: (K, B) each round's categorical uniform.
        noise: (K, B) each round's Laplace noise on the observed loss.
        noisy: add ``noise``.
        clip: clip the block's losses into [0, 1].
        keep: the weight of ``Q`` in the mixing ``keep Q + add``.
        add: the uniform part of the mixing.
        mix: apply the mixing.
        last_advice: (B, N) every expert's advice at the last played arm (updated in place).
        q_at_arm: (B,) the law's mass at the last played arm (updated in place).
        last_q: (B, A) the last round's law (written).
        z: (B, N) scratch.
        e: (B, N) scratch.
        loop: numpy's exp loop (:func:`agents._numpy_loops.ufunc_loop`).
    """
    rounds, runs = u_choice.shape
    n = cum.shape[1]
    arms = last_q.shape[1]
    shared = block_advice.shape[0] == 0
    actions = np.empty((rounds, runs), dtype=np.int64)
    p = np.empty(n)
    q = np.empty(arms)
    cdf = np.empty(arms)
    for k in range(rounds):
        if k > 0 or learn_first:
            for b in range(runs):
                if k == 0:
                    y = loss0[b]
                else:
                    y = losses[k - 1, rows[b], actions[k - 1, b]]
                    if clip:  # np.clip(y, 0, 1): max first, then min
                        y = y if y > 0.0 else 0.0
                        y = y if y < 1.0 else 1.0
                if noisy:
                    y = y + noise[k, b]
                ratio = y / q_at_arm[b]
                for j in range(n):
                    cum[b, j] = cum[b, j] + last_advice[b, j] * ratio
        rate = neg_rate[k]
        for b in range(runs):
            top = -np.inf
            for j in range(n):
                value = rate * cum[b, j]
                z[b, j] = value
                if value > top:
                    top = value
            for j in range(n):
                z[b, j] = z[b, j] - top
        exp_into(z, e, z.size, loop)
        for b in range(runs):
            total = _row_sum(e[b], n)
            for j in range(n):
                p[j] = e[b, j] / total
            if identity:
                for a in range(arms):
                    q[a] = p[a]
            else:
                adv = first_advice[b] if k == 0 or shared else block_advice[k, b]
                for a in range(arms):
                    q[a] = 0.0
                for j in range(n):
                    weight = p[j]
                    for a in range(arms):
                        q[a] = q[a] + weight * adv[j, a]
            if normalise:
                total = _row_sum(q, arms)
                for a in range(arms):
                    q[a] = q[a] / total
            if mix:
                for a in range(arms):
                    q[a] = keep * q[a] + add
            running = 0.0
            for a in range(arms):
                running = running + q[a] if a else q[a]
                cdf[a] = running
            scaled = u_choice[k, b] * cdf[arms - 1]
            chosen = 0
            for a in range(arms):
                if cdf[a] <= scaled:
                    chosen += 1
            if chosen > arms - 1:
                chosen = arms - 1
            actions[k, b] = chosen
            q_at_arm[b] = q[chosen]
            for a in range(arms):
                last_q[b, a] = q[a]
            if identity:
                for j in range(n):
                    last_advice[b, j] = 1.0 if j == chosen else 0.0
            else:
                adv = first_advice[b] if k == 0 or shared else block_advice[k, b]
                for j in range(n):
                    last_advice[b, j] = adv[j, chosen]
    return actions


def act_loop(
    agent: Any,
    first: Mapping[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
) -> np.ndarray:
    """K calls of ``agent.act`` on the block's per-round observations (the reference path)."""
    actions = np.empty((len(losses), agent.num_envs), dtype=np.int64)
    play_rounds(agent, first, advice, losses, rows, actions, 0, len(losses))
    return actions


def block_inputs(
    agent: Any,
    first: Mapping[str, np.ndarray],
    advice: np.ndarray | None,
    rounds: int,
    *,
    uses_advice: bool = True,
) -> tuple[Any, np.ndarray, np.ndarray, bool]:
    """Parse and check the block's first observation as ``act`` would.

    Args:
        agent: the learner.
        first: the observation of the block's first round.
        advice: (K, B, N, A) the rounds' advice, or None (every round's is ``first``'s).
        rounds: K.
        uses_advice: False for a learner over the arms (the kernel's identity case).

    Returns:
        (parsed first observation, round-0 advice, block advice, identity flag) for the kernel.

    Raises:
        ValueError: the block runs past the horizon, or ``act`` would refuse ``first``.
    """
    if agent.t + rounds > agent.horizon:
        raise ValueError(
            f"agent {agent.name!r} has {agent.horizon - agent.t} rounds left of its "
            f"horizon={agent.horizon}; a block of {rounds} rounds is outside its privacy claim "
            "and tuning; call reset() to start a new episode"
        )
    batch, _ = agent._parse_obs(first)
    agent._check_round(batch)
    n, arms = agent.n_experts, agent.n_arms
    empty = np.empty((0, 1, 1, 1))
    if not uses_advice or (advice is None and n == arms and _is_identity(agent, batch.advice)):
        return batch, np.empty((1, 1, 1)), empty, True
    first_advice = np.ascontiguousarray(batch.advice, dtype=np.float64)
    if advice is None:
        return batch, first_advice, empty, False
    block = np.ascontiguousarray(advice, dtype=np.float64)
    if block.shape != (rounds, agent.num_envs, n, arms):
        raise ValueError(
            f"advice must have shape ({rounds}, {agent.num_envs}, {n}, {arms}), got "
            f"{block.shape}"
        )
    return batch, first_advice, block, False


def _is_identity(agent: Any, advice: np.ndarray) -> bool:
    """True when every run's advice is the identity (remembered for a read-only shared view)."""
    shared = advice.strides[0] == 0 and not advice.flags.writeable
    key = (advice.__array_interface__["data"][0], advice.shape, advice.strides)
    known = getattr(agent, "_identity_advice", None)
    if shared and known is not None and known[1] == key:
        return True
    values = advice[:1] if advice.strides[0] == 0 else advice
    found = bool(np.array_equal(values, np.broadcast_to(np.eye(advice.shape[1]), values.shape)))
    if found and shared:
        agent._identity_advice = (advice, key)  # held, so the address keeps naming this memory
    return found


@dataclass
class BlockState:
    """What the kernel carries from round to round (updated in place).

    Attributes:
        cum: (B, m) cumulative estimated losses (the core's own array).
        last_advice: (B, m) every weight's advice at the last played arm.
        q_at_arm: (B,) the law's mass at the last played arm.
        gamma: the core's uniform mixing.
    """

    cum: np.ndarray
    last_advice: np.ndarray
    q_at_arm: np.ndarray
    gamma: float


def run_exp4_block(
    agent: Any,
    first: Mapping[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
    *,
    state: BlockState,
    loss0_of: Any,
    scale: float,
    clip: bool,
    normalise: bool,
    rates: np.ndarray,
    uses_advice: bool = True,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Play a block of an exponential-weights bandit learner (EXP4, EXP3) in one call.

    Args:
        agent: the learner.
        first: the observation of the block's first round (the protocol's).
        advice: (K, B, N, A) the rounds' advice, or None (every round's is ``first``'s).
        losses: (K, S, A) the block's losses.
        rows: (B,) the loss stream of each run.
        state: the carried state (updated in place).
        loss0_of: ``parsed first observation -> (B,)`` loss as ``_learn`` uses it before noise
            (running ``_learn``'s checks).
        scale: Laplace scale of each observed loss's release (0: no noise drawn).
        clip: clip the block's observed losses into [0, 1].
        normalise: EXP4's normalisation of the mixture.
        rates: (K,) each round's learning rate.
        uses_advice: False for a learner over the arms (EXP3).
        compiled: run the compiled kernel (False: its Python form, for tests).

    Returns:
        (K, B) int64 actions and the last round's (B, A) law; the agent's clock is advanced,
        the caller updates the core.
    """
    k = len(losses)
    batch, first_advice, block_advice, identity = block_inputs(
        agent, first, advice, k, uses_advice=uses_advice
    )
    learn_first = agent.t > 0
    runs = agent.num_envs
    loss0 = np.asarray(loss0_of(batch), dtype=np.float64) if learn_first else np.zeros(runs)
    noisy = scale > 0.0
    draws = samplers.LAPLACE_UNIFORMS if noisy else 0  # the observed loss's release
    # [release, choice] per round; an episode's round 1 releases nothing (0.5: zero noise).
    u = block_uniforms(agent.rng, k, draws + PLAY_UNIFORMS, draws * (not learn_first), pad=0.5)
    u_choice = np.ascontiguousarray(u[:, :, draws])
    if noisy:
        noise = np.ascontiguousarray(samplers.laplace(u[:, :, 0], scale))
    else:
        noise = np.zeros((k, runs))
    arms = agent.n_arms
    mix = state.gamma > 0.0
    keep, add = (1.0 - state.gamma, state.gamma / arms) if mix else (1.0, 0.0)
    last_q = np.empty((runs, arms))
    z = np.empty_like(state.cum)
    e = np.empty_like(state.cum)
    run = exp4_rounds if compiled else exp4_rounds.py_func  # type: ignore[attr-defined]
    loop = ufunc_loop(np.exp, (8, 8)) if compiled else np.zeros(3, dtype=np.int64)
    if compiled:
        register()
    actions = run(
        state.cum, np.ascontiguousarray(-np.asarray(rates, dtype=np.float64)), first_advice,
        block_advice, identity, normalise, np.ascontiguousarray(losses, dtype=np.float64),
        np.ascontiguousarray(rows, dtype=np.int64), loss0, learn_first, u_choice, noise, noisy,
        clip, keep, add, mix, state.last_advice, state.q_at_arm, last_q, z, e, loop,
    )
    agent.t += k
    agent.last_actions = actions[-1].copy()
    return actions, last_q


def block_rates(core: Any, rounds: int, learn_first: bool) -> np.ndarray:
    """(K,) the rate ``core.rate()`` gives at each round's choice (every run's clock is equal)."""
    n = int(core.n_updates[0]) + np.arange(rounds, dtype=np.int64) + (1 + int(learn_first))
    if callable(core.eta):
        return np.array(np.broadcast_to(np.asarray(core.eta(n), dtype=float), (rounds,)))
    return np.full(rounds, float(core.eta))


def play_exp4_core(
    agent: Any,
    first: Mapping[str, np.ndarray],
    advice: np.ndarray | None,
    losses: np.ndarray,
    rows: np.ndarray,
    *,
    loss0_of: Any,
    scale: float,
    clip: bool,
) -> np.ndarray:
    """A block of a learner driven by an :class:`~agents.bandit_core.Exp4Core` (``agent.core``).

    Arguments as :func:`run_exp4_block`. Returns the (K, B) int64 actions; the core is left as K
    rounds of ``sample``/``update`` leave it.
    """
    core = agent.core
    k = len(losses)
    learn_first = agent.t > 0
    state = BlockState(
        core.cum_estimate,
        np.array(core.last_advice_at_arm, dtype=np.float64),
        np.array(core.last_q_at_arm, dtype=np.float64),
        float(core.gamma),
    )
    actions, last_q = run_exp4_block(
        agent, first, advice, losses, rows, state=state, loss0_of=loss0_of, scale=scale,
        clip=clip, normalise=True, rates=block_rates(core, k, learn_first),
    )
    core.n_updates += k - (not learn_first)
    core.last_advice_at_arm = state.last_advice
    core.last_q_at_arm = state.q_at_arm
    core.last_q = last_q
    return actions


def play_exp3_core(
    agent: Any,
    first: Mapping[str, np.ndarray],
    losses: np.ndarray,
    rows: np.ndarray,
    *,
    loss0_of: Any,
) -> np.ndarray:
    """A block of a learner over the arms driven by an :class:`~agents.bandit_core.Exp3Core`.

    EXP3 is the kernel's identity case without normalisation. Arguments and result as
    :func:`play_exp4_core` (no advice).
    """
    core = agent.core
    k = len(losses)
    learn_first = agent.t > 0
    runs, arms = core.cum_estimate.shape
    last_advice = np.zeros((runs, arms))
    q_at_arm = np.ones(runs)
    if learn_first:
        chosen = np.asarray(agent.core_choices, dtype=np.int64)
        last_advice[np.arange(runs), chosen] = 1.0
        q_at_arm = np.array(core.distribution()[np.arange(runs), chosen])
    state = BlockState(core.cum_estimate, last_advice, q_at_arm, float(core.gamma))
    actions, last_q = run_exp4_block(
        agent, first, None, losses, rows, state=state, loss0_of=loss0_of, scale=0.0,
        clip=False, normalise=False, rates=block_rates(core, k, learn_first), uses_advice=False,
    )
    core.n_updates += k - (not learn_first)
    core._cache = last_q
    agent.core_choices = actions[-1].copy()
    return actions

