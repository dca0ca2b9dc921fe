"""svt-restart's block play: the rounds between selections in one compiled call, bit for bit.

For the default dyadic Bernstein/betting query, and for the all-windows grid with the n-only slack
(svt-restart:paper's detector, :mod:`agents._svt_all_windows`), on plain ``fast`` noise with the JIT
(else :func:`agents._kernels.hook_loop`). :func:`svt_rounds` runs learning, the detector and
restarts with ``act``'s operations in order (no transcendentals); the detector's fixed two Laplace
draws per round are read at once and made by numpy; a selection round stops the kernel and goes
through ``_choose``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents._kernels import check_block, hook_loop, plain_fast_backend
from agents._svt_all_windows import run_query
from agents.base import clip_unit
from agents.svt_restart_query import bernstein_query, push_snapshots
from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled, kernel
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.mechanisms import AboveThreshold

__all__ = ["block_supported", "play_rounds", "svt_rounds"]

#: the hooks :func:`svt_rounds` replaces: an agent overriding one plays through its hooks
_KERNEL_HOOKS = (
    "_learn",
    "_choose",
    "_restart",
    "_reset_windows",
    "_push_snapshots",
    "_bernstein_query",
    "_bernstein_query_dyadic",
)


def block_supported(agent: Any) -> bool:
    """True when :func:`play_rounds` reproduces ``act`` for this agent (else: hook_loop).

    The dyadic grid with a Bernstein/betting query, or the all-windows grid with the n-only
    slack (:mod:`agents._svt_all_windows`; svt-restart:paper).
    """
    detector = getattr(agent, "detector", None)
    cls = type(agent)
    return (
        jit_enabled()
        and all(_own_hook(getattr(cls, hook, None), hook) for hook in _KERNEL_HOOKS)
        and (agent.window_grid == "dyadic") == agent._bernstein  # dyadic Bernstein, or "all"
        and plain_fast_backend(agent.noise)
        and type(detector) is AboveThreshold
        and type(agent.rng) is BatchRNG
        and detector.rng is agent.rng
        and detector.max_tops == 1
        and plain_fast_backend(detector.backend)
    )


def _own_hook(method: Any, name: str) -> bool:
    """True for SVTRestart's own ``name`` (not a subclass's override or a patch)."""
    return (
        getattr(method, "__module__", None) == "agents.svt_restart"
        and getattr(method, "__qualname__", None) == f"SVTRestart.{name}"
    )


def _detector_noise(agent: Any, k: int, skip: int) -> tuple[np.ndarray, np.ndarray]:
    """(K, B) query noise and fresh noisy thresholds of the learning rounds (i >= ``skip``)."""
    det = agent.detector
    b = agent.num_envs
    query = np.zeros((k, b))
    fresh = np.zeros((k, b))
    rounds = k - skip
    if rounds <= 0:
        return query, fresh
    per_round = 2 * samplers.LAPLACE_UNIFORMS  # the query's variate, then the threshold's
    u = agent.rng.random((per_round * rounds,)).reshape(b, rounds, per_round)
    # The detector's own scales (per run: a (B, 1) column against the (B, K) uniforms).
    q_scale, t_scale = (np.asarray(s)[..., None] for s in (det.query_scale, det.sigma))
    query[skip:] = samplers.laplace(u[:, :, 0], q_scale).T
    fresh[skip:] = (det._threshold[:, None] + samplers.laplace(u[:, :, 1], t_scale)).T
    return query, fresh


def _dyadic_arrays(agent: Any) -> dict[str, Any]:
    """The dyadic query's state and constants, and empty all-windows arrays."""
    return {
        "cum_sq": agent._cum_sq,
        "snap_experts": agent._snap_experts,
        "snap_learner": agent._snap_learner,
        "snap_sq": agent._snap_experts if agent._snap_sq is None else agent._snap_sq,
        "col_empty": agent._col_empty,
        "col_time": agent._col_time,
        "snap_time": agent._snap_time,
        "snap_count": agent._snap_count,
        "pow2": agent._pow2,
        "store_index": agent._store_index,
        "counts": agent._col_counts,
        "offsets": agent._lambda_offsets,
        "slopes": agent._lambda_slopes,
        "dslopes": agent._lambda_dslopes,
        "const": agent._const_runs,
        "query_out": agent._query_out,
        "learner": np.zeros(agent._stored),
        # the all-windows grid's arrays, unused (the same array types: one compiled signature)
        "prefix": np.zeros((1, 1, 1)),
        "table": np.zeros((1, 1)),
        "starts": np.zeros(1, dtype=np.int64),
    }


def _all_arrays(agent: Any) -> dict[str, Any]:
    """The all-windows grid's state, and empty dyadic arrays of the same types."""
    b, n = agent.num_envs, agent.n_experts
    floats = np.zeros(0)
    return {
        "cum_sq": np.zeros((b, n)),  # the n-only slack reads no second moment: not updated
        "snap_experts": np.zeros((b, n, 0)),
        "snap_learner": np.zeros((b, 0)),
        "snap_sq": np.zeros((b, n, 0)),
        "col_empty": np.zeros((b, 0), dtype=bool),
        "col_time": np.zeros((b, 0), dtype=np.int64),
        "snap_time": np.zeros((b, 0, 0), dtype=np.int64),
        "snap_count": np.zeros((b, 0), dtype=np.int64),
        "pow2": np.zeros(0, dtype=np.int64),
        "store_index": np.full((1, 1), -1, dtype=np.int64),
        "counts": np.zeros(0, dtype=np.int64),
        "offsets": floats,
        "slopes": floats,
        "dslopes": floats,
        "const": np.zeros(b),
        "query_out": agent._all_windows.out,  # the query's buffers, written as act writes them
        "learner": floats,
        "prefix": agent._prefix,
        # before round 1 no table yet (act makes it at round 1): the kernel asks for it
        "table": _slack_rows(agent, agent.t) if agent.t >= 1 else np.zeros((1, 1)),
        "starts": agent._all_windows.starts,
    }


def _slack_rows(agent: Any, t: int) -> np.ndarray:
    """The slack table as ``_learn`` has it at round ``t`` (grown as it grows it), (R, size)."""
    table = agent._slack_table(t)
    return table.reshape(1, -1) if table.ndim == 1 else table


def play_rounds(agent: Any, obs: Any) -> np.ndarray:
    """K rounds of ``agent.act`` (an :class:`~agents.svt_restart.SVTRestart`): (K, B) actions."""
    if not block_supported(agent):
        return hook_loop(agent, obs)
    losses = np.ascontiguousarray(clip_unit(check_block(agent, obs)))
    k, b = losses.shape[0], agent.num_envs
    actions = np.empty((k, b), dtype=np.int64)
    if k == 0:
        return actions
    t0 = agent.t
    skip = 1 if t0 == 0 else 0
    qnoise, fresh = _detector_noise(agent, k, skip)
    det = agent.detector
    last = (
        np.zeros(b, dtype=np.int64)
        if agent.last_actions is None
        else np.array(agent.last_actions, dtype=np.int64)
    )
    clock = np.array([agent._next_min], dtype=np.int64)
    status = np.zeros(1, dtype=np.int64)  # 1: the slack table must grow before the round
    max_restarts = -1 if agent.max_restarts is None else int(agent.max_restarts)
    scratch = np.zeros((2, agent.n_experts + 1))
    grid = _dyadic_arrays(agent) if agent.window_grid == "dyadic" else _all_arrays(agent)
    prefix, starts = grid["prefix"], grid["starts"]
    table = [grid["table"]]

    def run(start: int) -> int:
        return int(
            svt_rounds(
                start,
                t0,
                losses,
                actions,
                last,
                qnoise,
                fresh,
                clock,
                agent._cum,
                grid["cum_sq"],
                agent._window,
                agent._expert,
                agent.epoch_start,
                agent._next_event,
                agent.restarts,
                agent._active,
                max_restarts,
                agent.mode == "paper",
                agent._betting,
                agent._exact_detector,
                grid["snap_experts"],
                grid["snap_learner"],
                grid["snap_sq"],
                grid["col_empty"],
                grid["col_time"],
                grid["snap_time"],
                grid["snap_count"],
                grid["pow2"],
                grid["store_index"],
                grid["counts"],
                grid["offsets"],
                grid["slopes"],
                grid["dslopes"],
                grid["const"],
                agent._scale if agent.window_grid == "dyadic" else 1.0,
                det._noisy_threshold,
                det.halted,
                det.n_tops,
                grid["query_out"],
                scratch,
                grid["learner"],
                agent.window_grid == "all",
                prefix,
                table[0],
                starts,
                status,
            )
        )

    i = run(0)
    while i < k:  # round i has learned; its choice draws from the selection streams
        if status[0]:  # round i has not learned: _learn would grow the slack table first
            status[0] = 0
            table[0] = _slack_rows(agent, t0 + i)
            i = run(i)
            continue
        agent.t = t0 + i
        agent._next_min = int(clock[0])
        chosen = np.asarray(agent._choose(losses[i]), dtype=np.int64)
        clock[0] = agent._next_min
        actions[i] = chosen
        last[:] = chosen
        i = run(i + 1)
    agent._next_min = int(clock[0])
    agent.t = t0 + k
    agent.last_actions = actions[-1].copy()
    return actions


@kernel
def svt_rounds(  # pragma: no cover - compiled; its Python form runs in the tests
    start: int,
    t0: int,
    losses: np.ndarray,
    actions: np.ndarray,
    last: np.ndarray,
    qnoise: np.ndarray,
    fresh: np.ndarray,
    clock: np.ndarray,
    cum: np.ndarray,
    cum_sq: np.ndarray,
    window: np.ndarray,
    expert: np.ndarray,
    epoch_start: np.ndarray,
    next_event: np.ndarray,
    restarts: np.ndarray,
    active: np.ndarray,
    max_restarts: int,
    paper: bool,
    betting: bool,
    exact: bool,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    col_empty: np.ndarray,
    col_time: np.ndarray,
    snap_time: np.ndarray,
    snap_count: np.ndarray,
    pow2: np.ndarray,
    store_index: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    const: np.ndarray,
    scale: float,
    noisy_threshold: np.ndarray,
    halted: np.ndarray,
    n_tops: np.ndarray,
    query_out: np.ndarray,
    scratch: np.ndarray,
    learner: np.ndarray,
    all_grid: bool,
    prefix: np.ndarray,
    table: np.ndarray,
    starts: np.ndarray,
    status: np.ndarray,
) -> int:
    """Rounds ``start..`` of the block: ``_learn`` then, while no run selects, the play.

    Returns the first round index whose choice needs ``_choose`` (its learning done; the
    caller plays it and resumes at the next index), or K when the block is done. ``clock[0]``
    is ``_next_min``; ``last`` the actions of the previous round. With ``all_grid`` the query is
    the all-windows one (``prefix``, the (R, size) slack ``table``, ``starts`` scratch; the
    dyadic arrays are empty) and a round whose slack ``_learn`` would first grow returns its
    index unlearned with ``status[0] = 1``.
    """
    k, runs, n = losses.shape
    top_col = store_index[store_index.shape[0] - 1, 0]
    before = scratch[0]
    before_sq = scratch[1]
    for i in range(start, k):
        t = t0 + i  # the round just played (1-based): _learn's self.t
        if t > 0 and all_grid and t >= table.shape[1]:
            status[0] = 1
            return i
        if t > 0:
            any_top = False
            any_fired = False
            for r in range(runs):
                if paper:
                    for j in range(n + 1):
                        before[j] = cum[r, j]
                    for j in range(n):
                        before_sq[j] = cum_sq[r, j]
                played = losses[i, r, last[r]]
                for j in range(n):
                    cum[r, j] += losses[i, r, j]
                cum[r, n] += played
                for j in range(n if not all_grid else 0):
                    if betting:
                        x = losses[i, r, j] - played
                        if x < 0.0:
                            x = 0.0
                        cum_sq[r, j] += x
                    else:
                        x = played - losses[i, r, j]
                        cum_sq[r, j] += x * x
                for j in range(n):
                    window[r, j] += losses[i, r, j]
                tau = t - epoch_start[r] + 1
                if all_grid:
                    row = r if table.shape[0] > 1 else 0
                    query = run_query(cum[r], prefix[r], epoch_start[r], t, table[row], starts)
                    for j in range(n + 1):
                        prefix[r, j, t] = cum[r, j]
                else:
                    query = bernstein_query(
                        r,
                        cum,
                        cum_sq,
                        snap_experts,
                        snap_learner,
                        snap_sq,
                        col_empty,
                        counts,
                        offsets,
                        slopes,
                        dslopes,
                        betting,
                        const[r],
                        scale,
                        learner,
                    )
                query_out[r] = query
                if not np.isfinite(query):
                    query = -1e300
                if exact:
                    query = np.nextafter(query, -np.inf)
                # AboveThreshold.test (one TOP per instance), then restart(fired)
                top = (query + qnoise[i, r] >= noisy_threshold[r]) and not halted[r]
                if top:
                    n_tops[r] += 1
                    any_top = True
                fired = top and active[r]
                if not fired and not all_grid:
                    push_snapshots(
                        r,
                        tau,
                        t,
                        pow2,
                        store_index,
                        cum[r],
                        cum_sq[r],
                        True,
                        snap_experts,
                        snap_learner,
                        snap_sq,
                        col_time,
                        col_empty,
                        snap_time,
                        snap_count,
                    )
                if not fired:
                    continue
                any_fired = True
                noisy_threshold[r] = fresh[i, r]
                n_tops[r] = 0
                halted[r] = False
                # SVTRestart._restart for run r
                next_event[r] = t + 1
                restarts[r] += 1
                if max_restarts >= 0:
                    active[r] = active[r] and restarts[r] < max_restarts
                if paper:
                    epoch_start[r] = t
                    for j in range(n):
                        window[r, j] = losses[i, r, j]
                    origin, origin_sq, origin_time = before, before_sq, t - 1
                else:
                    epoch_start[r] = t + 1
                    for j in range(n):
                        window[r, j] = 0.0
                    origin, origin_sq, origin_time = cum[r], cum_sq[r], t
                if all_grid:  # no window snapshots to reset
                    continue
                # _reset_windows for run r
                for lev in range(snap_count.shape[1]):
                    snap_count[r, lev] = 1
                    snap_time[r, lev, 0] = origin_time
                for j in range(n):
                    snap_experts[r, j, top_col] = origin[j]
                    snap_sq[r, j, top_col] = origin_sq[j]
                snap_learner[r, top_col] = origin[n]
                for q in range(col_empty.shape[1]):
                    col_empty[r, q] = True
                col_empty[r, top_col] = False
                col_time[r, top_col] = origin_time
                if paper:
                    push_snapshots(
                        r,
                        1,
                        t,
                        pow2,
                        store_index,
                        cum[r],
                        cum_sq[r],
                        True,
                        snap_experts,
                        snap_learner,
                        snap_sq,
                        col_time,
                        col_empty,
                        snap_time,
                        snap_count,
                    )
            if any_top:
                for r in range(runs):
                    if n_tops[r] >= 1:
                        halted[r] = True
            # The restart's fresh threshold is kept only where a run fired (done above).
            if any_fired:
                clock[0] = t + 1
        # _choose for round t + 1: nobody starts an epoch or selects before clock[0]
        if t + 1 >= clock[0]:
            return i
        for r in range(runs):
            actions[i, r] = expert[r]
            last[r] = expert[r]
    return k
