"""The episode loop: batched agents against one native vector env.

Only observations reach the agents; ``info`` is read here, at the recorded rounds. Cells that
differ only in the learner share one episode on an oblivious env (:func:`run_cells`); on the
compiled path an oblivious env plays in blocks (``play_block`` / ``play_bandit_block`` where a
learner has them, else K ``act`` calls), every value equal to the per-round loop's
(docs/grid.md, "Seeds and common random numbers"; docs/architecture.md, "Compiled kernels and
block play").
"""

from __future__ import annotations

import bisect
import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np

import agents as agents_pkg
from dp_experts_env._jit import jit_enabled
from dp_experts_env.block_entry import block_entry
from dp_experts_env.envs.core import SharedStreamError
from dp_experts_env.evaluation.grid import Cell, epsilon_label, record_rounds

_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce

__all__ = [
    "BLOCK_ELEMENTS",
    "BLOCK_ROUNDS",
    "METRICS",
    "run_one",
    "run_cells",
    "play",
    "play_shared",
    "group_key",
    "uses_blocks",
]

#: Doubles of observations per block (all runs): K = BLOCK_ELEMENTS // (B N), at least 1 and at
#: most BLOCK_ROUNDS, so a block's arrays take a few megabytes whatever T is.
BLOCK_ELEMENTS = 1 << 20
BLOCK_ROUNDS = 8192

#: ``hook(t, horizon)``, called every 1024 rounds when set (the backends' progress report).
progress_hook: Callable[[int, int], None] | None = None

METRICS = (
    "cumulative_loss",
    "static_regret",
    "dynamic_regret",
    "per_round_best_regret",
    "static_pseudo_regret",
    "per_round_best_pseudo_regret",
)


def play(env: Any, agent: Any, env_seeds: list[int], rounds: np.ndarray) -> dict[str, np.ndarray]:
    """Play one episode of a vector env with a batched agent.

    Args:
        env: a native vector env (B = ``env.num_envs``).
        agent: an agent with ``num_envs == B``.
        env_seeds: one adversary seed per run.
        rounds: sorted rounds at which to keep the metrics.

    Returns:
        metric name -> array of shape (len(rounds), B); metrics the env does not report are left
        out (pseudo-regrets are reported only where the env knows the means).
    """
    return play_shared(env, [agent], env_seeds, rounds)


def play_shared(
    env: Any, agents: Sequence[Any], env_seeds: list[int], rounds: np.ndarray
) -> dict[str, np.ndarray]:
    """Play one episode of a vector env whose runs are split between several batched agents.

    Args:
        env: a native vector env (with ``copies`` for shared loss streams).
        agents: batched agents playing consecutive slices of runs; their ``num_envs`` add up to
            ``env.num_envs``.
        env_seeds: the seeds ``env.reset`` takes (one per stream).
        rounds: sorted rounds at which to keep the metrics.

    Returns:
        metric name -> array of shape (len(rounds), env.num_envs).

    Raises:
        ValueError: when the agents' runs do not add up to the env's.
    """
    base = env.unwrapped
    horizon = int(base.horizon)
    # A set, not a length-T mask: memory must not grow with the horizon.
    keep = {int(r) for r in rounds}
    bounds, start = [], 0
    for agent in agents:
        bounds.append((start, start + int(agent.num_envs)))
        start += int(agent.num_envs)
    if start != env.num_envs:
        raise ValueError(f"the agents play {start} runs but the env has {env.num_envs}")
    # An env without the info_rounds switch builds info every round; only kept rounds are read.
    lean = hasattr(type(base), "info_rounds")
    previous = base.info_rounds if lean else None
    if lean:
        base.info_rounds = {r for r in keep if 1 <= r <= horizon}
    try:
        obs, _ = env.reset(seed=list(env_seeds))
        for agent in agents:
            agent.reset()
        if uses_blocks(env):
            return _play_blocks(env, agents, bounds, obs, keep)
        curves: dict[str, list[np.ndarray]] = {}
        single = len(agents) == 1
        bandit = isinstance(obs, dict)
        for t in range(1, horizon + 1):
            if single:
                actions = agents[0].act(obs)
            elif bandit:
                actions = np.concatenate(
                    [
                        agent.act({key: value[lo:hi] for key, value in obs.items()})
                        for agent, (lo, hi) in zip(agents, bounds, strict=True)
                    ]
                )
            else:
                actions = np.concatenate(
                    [agent.act(obs[lo:hi]) for agent, (lo, hi) in zip(agents, bounds, strict=True)]
                )
            obs, _, _, _, info = env.step(actions)
            if not t & 1023 and progress_hook is not None:
                progress_hook(t, horizon)
            if t in keep:
                for key in METRICS:
                    if key in info:
                        curves.setdefault(key, []).append(np.asarray(info[key], dtype=np.float64))
    finally:
        if lean:
            base.info_rounds = previous
    return {key: np.stack(values) for key, values in curves.items()}


def uses_blocks(env: Any) -> bool:
    """True when :func:`play_shared` plays ``env`` in blocks (see the module docstring)."""
    base = env.unwrapped
    core = getattr(base, "core", None)
    return (
        jit_enabled()
        and callable(getattr(base, "step_block", None))
        and core is not None
        and core.feedback in ("full", "bandit", "oco")
        and core.supports_blocks
    )


def _block_actions(agent: Any, obs: np.ndarray) -> np.ndarray:
    """(K, b) actions of one agent for a (K, b, N) block of observations."""
    play_block = block_entry(agent, "play_block")
    if play_block is not None:
        return play_block(obs)
    return np.stack([np.asarray(agent.act(row), dtype=np.int64) for row in obs])


def _play_blocks(
    env: Any,
    agents: Sequence[Any],
    bounds: list[tuple[int, int]],
    obs: np.ndarray,
    keep: set[int],
) -> dict[str, np.ndarray]:
    """The episode of :func:`play_shared` in blocks of rounds (after ``reset``)."""
    base = env.unwrapped
    core = base.core
    if core.feedback == "oco":
        return _play_oco_blocks(env, agents, bounds, obs, keep)
    horizon = int(base.horizon)
    marks = sorted(r for r in keep if 1 <= r <= horizon)
    runs, n = core.num_runs, core.n_experts
    bandit = core.feedback == "bandit"
    # Doubles a round of the block holds: the advice (and its products) dominate on bandit
    # envs -- identity advice included, which the block stores as (K, B, K, K) like any other.
    width = runs * n * (core.n_arms if bandit else 1)
    most = min(BLOCK_ROUNDS, max(1, BLOCK_ELEMENTS // width))
    if progress_hook is not None:  # a report every 1024 rounds, as on the per-round path
        most = min(most, 1024)
    stream_of = core._rows  # run r plays stream r % streams
    curves: dict[str, list[np.ndarray]] = {}
    t = 0
    previous = obs  # the observation the next round's act would get: (B, N)
    while t < horizon:
        i = bisect.bisect_right(marks, t)
        stop = marks[i] if i < len(marks) else horizon
        block = base.next_block(min(most, stop - t))
        k = len(block)
        actions = np.empty((k, runs), dtype=np.int64)
        if bandit:
            _bandit_block_actions(core, agents, bounds, previous, block, actions)
        else:
            for agent, (lo, hi) in zip(agents, bounds, strict=True):
                seen = np.empty((k, hi - lo, n))
                seen[0] = previous[lo:hi]
                if k > 1:
                    seen[1:] = block.losses[:-1][:, stream_of[lo:hi], :]
                actions[:, lo:hi] = _block_actions(agent, seen)
        previous, t = _step_block(base, actions, t, horizon, keep, curves)
    return {key: np.stack(values) for key, values in curves.items()}


def _step_block(
    base: Any,
    actions: np.ndarray,
    t: int,
    horizon: int,
    keep: set[int],
    curves: dict[str, list[np.ndarray]],
) -> tuple[Any, int]:
    """Play the pending block; report progress; keep the metrics if it ends on a kept round.

    Returns:
        (the observation after the block, the number of rounds played so far).
    """
    k = len(actions)
    previous, _, _, _, info = base.step_block(actions)
    t += k
    if progress_hook is not None and t // 1024 > (t - k) // 1024:
        progress_hook(t, horizon)
    if t in keep:
        for key in METRICS:
            if key in info:
                curves.setdefault(key, []).append(np.asarray(info[key], dtype=np.float64))
    return previous, t


def _play_oco_blocks(
    env: Any,
    agents: Sequence[Any],
    bounds: list[tuple[int, int]],
    obs: np.ndarray,
    keep: set[int],
) -> dict[str, np.ndarray]:
    """:func:`_play_blocks` on an OCO env: round t sees round t - 1's gradient."""
    base = env.unwrapped
    core = base.core
    horizon = int(base.horizon)
    marks = sorted(r for r in keep if 1 <= r <= horizon)
    runs, dim = core.num_runs, core.dim
    most = min(BLOCK_ROUNDS, max(1, BLOCK_ELEMENTS // (runs * dim)))
    if progress_hook is not None:
        most = min(most, 1024)
    curves: dict[str, list[np.ndarray]] = {}
    t = 0
    previous = obs
    while t < horizon:
        i = bisect.bisect_right(marks, t)
        stop = marks[i] if i < len(marks) else horizon
        grads = base.next_block(min(most, stop - t))
        k = len(grads)
        actions = np.empty((k, runs, dim))
        for agent, (lo, hi) in zip(agents, bounds, strict=True):
            play_block = block_entry(agent, "play_block")
            if play_block is not None:
                seen_block = np.empty((k, hi - lo, dim))
                seen_block[0] = previous[lo:hi]
                seen_block[1:] = grads[:-1, lo:hi]
                chosen = np.asarray(play_block(seen_block), dtype=np.float64)
                if chosen.shape != (k, hi - lo, dim):
                    raise ValueError(
                        f"play_block must return points of shape ({k}, {hi - lo}, {dim}), got "
                        f"shape {chosen.shape}"
                    )
                actions[:, lo:hi] = chosen
                continue
            for r in range(k):
                seen = np.array(previous[lo:hi] if r == 0 else grads[r - 1, lo:hi])
                chosen = np.asarray(agent.act(seen), dtype=np.float64)
                if chosen.size != (hi - lo) * dim:  # the env checks the values in step_block
                    raise ValueError(
                        f"action must have shape ({hi - lo}, {dim}), got shape {chosen.shape}"
                    )
                actions[r, lo:hi] = chosen.reshape(hi - lo, dim)
        previous, t = _step_block(base, actions, t, horizon, keep, curves)
    return {key: np.stack(values) for key, values in curves.items()}


def _bandit_block_actions(
    core: Any,
    agents: Sequence[Any],
    bounds: list[tuple[int, int]],
    first: dict[str, np.ndarray],
    block: Any,
    actions: np.ndarray,
) -> None:
    """Fill ``actions`` (K, B) with the agents' actions on a bandit block.

    An agent without ``play_bandit_block`` gets, at round i, what the per-round loop would hand
    it: round i's advice and its own action and loss of round i - 1 (``first`` at i = 0). The
    losses ignore the actions, so charging here gives what ``step`` charges.
    """
    k = len(block)
    size = core.n_experts * core.n_arms
    stream_of = core._rows
    flat_advice = None
    if not core.identity_advice:
        assert block.advice is not None
        flat_advice = block.advice.reshape(k, core.num_streams, size)
    losses = block.losses
    for agent, (lo, hi) in zip(agents, bounds, strict=True):
        rows = stream_of[lo:hi]
        play_block = block_entry(agent, "play_bandit_block")
        if play_block is not None:
            own = None
            if flat_advice is not None and hi - lo == core.num_streams and _in_order(rows):
                own = block.advice  # run r plays stream r: the block itself, no copy
            elif flat_advice is not None:
                own = flat_advice[:, rows].reshape(k, hi - lo, core.n_experts, core.n_arms)
            first_obs = {key: value[lo:hi] for key, value in first.items()}
            chosen = np.asarray(play_block(first_obs, own, losses, rows))
            _check_block_actions(core, chosen, k, lo, hi)
            actions[:, lo:hi] = chosen
            continue
        if flat_advice is None:
            advice = first["advice"][lo:hi]  # a read-only view of one identity: every round's
            advice_of = None
        else:
            advice_of = flat_advice[:, rows]  # (K, b, N*K): one gather for the block
        obs = {key: value[lo:hi] for key, value in first.items()}
        for i in range(k):
            if i:
                last = actions[i - 1, lo:hi]
                obs = {
                    "advice": advice if advice_of is None else advice_of[i],
                    "last_action": last.copy(),
                    "last_loss": losses[i - 1][rows, last][:, None],
                }
            chosen = np.asarray(agent.act(obs))
            if (
                chosen.dtype.kind not in "iu"
                or chosen.shape != (hi - lo,)
                or _min_reduce(chosen) < 0
                or _max_reduce(chosen) >= core.n_actions
            ):
                # Checked before the next round charges it: the error the per-round loop gives.
                if chosen.shape == (hi - lo,):
                    full = np.zeros(core.num_runs, dtype=chosen.dtype)
                    full[lo:hi] = chosen
                    core.check_actions(full)
                raise ValueError(
                    f"an agent of {hi - lo} runs must return actions of shape ({hi - lo},), "
                    f"got {chosen.shape}"
                )
            actions[i, lo:hi] = chosen


def _in_order(rows: np.ndarray) -> bool:
    """True when ``rows`` is 0, 1, ..., len - 1."""
    return bool(rows[0] == 0 and np.all(np.diff(rows) == 1)) if len(rows) else True


def _check_block_actions(core: Any, chosen: np.ndarray, k: int, lo: int, hi: int) -> None:
    """Refuse a ``play_bandit_block`` answer that is not (K, b) arms in range, naming it."""
    if chosen.dtype.kind not in "iu" or chosen.shape != (k, hi - lo):
        raise ValueError(
            f"play_bandit_block of an agent of {hi - lo} runs must return ({k}, {hi - lo}) "
            f"integer actions, got {chosen.dtype} {chosen.shape}"
        )
    low, high = _min_reduce(chosen, axis=None), _max_reduce(chosen, axis=None)
    if chosen.size and (low < 0 or high >= core.n_actions):
        for row in chosen:  # the per-round loop's error, at the first bad round
            full = np.zeros(core.num_runs, dtype=chosen.dtype)
            full[lo:hi] = row
            core.check_actions(full)


def group_key(cell: Cell) -> tuple[Any, ...]:
    """Cells with the same key can play one episode together (same env, seeds and rounds)."""
    return (cell.env.key, cell.seed_indices, cell.base_seed, cell.n_record)


def _make_env(cell: Cell, num_runs: int, copies: int) -> Any:
    kwargs = dict(cell.env.params)
    if copies > 1:
        kwargs["copies"] = copies
    return gym.make_vec(
        cell.env.id,
        num_envs=num_runs,
        vectorization_mode="vector_entry_point",
        **kwargs,
    )


def _shares_streams(env_id: str) -> bool:
    """True when the env id's vector env takes ``copies`` (the experts envs do, OCO does not)."""
    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).vector_entry_point
    if entry is None:
        return False
    creator = entry if callable(entry) else load_env_creator(entry)
    try:
        return "copies" in inspect.signature(creator).parameters
    except (TypeError, ValueError):  # pragma: no cover - a creator without a signature
        return False


def _as_seen_alone(env: Any, num_runs: int) -> Any:
    """What ``agents.make(env=...)`` reads, as if the env had ``num_runs`` runs and no copies."""
    spec = getattr(env, "spec", None)
    if spec is not None:
        kwargs = {k: v for k, v in spec.kwargs.items() if k != "copies"}
        if "num_envs" in kwargs:
            kwargs["num_envs"] = num_runs
        spec = dataclasses.replace(spec, kwargs=kwargs)
    return SimpleNamespace(unwrapped=env.unwrapped, num_envs=num_runs, spec=spec)


def _make_agent(cell: Cell, env_view: Any) -> Any:
    params = dict(cell.agent.params)
    if cell.epsilon is not None:
        params["epsilon"] = cell.epsilon
    return agents_pkg.make(cell.agent.name, env=env_view, seed=cell.agent_seeds(), **params)


def _batched_learner(cells: list[Cell], env: Any, num_runs: int) -> tuple[Any, list[Any]] | None:
    """One agent for several epsilons of a ``set_run_epsilons`` learner, their claims; or None."""
    first = cells[0]
    if not callable(getattr(agents_pkg.spec(first.agent.name).cls, "set_run_epsilons", None)):
        return None
    params = dict(first.agent.params)
    seeds = [seed for cell in cells for seed in cell.agent_seeds()]
    agent = agents_pkg.make(
        first.agent.name,
        env=_as_seen_alone(env, num_runs * len(cells)),
        seed=seeds,
        epsilon=first.epsilon,
        **params,
    )
    epsilons = [cell.epsilon for cell in cells for _ in range(num_runs)]
    if not agent.set_run_epsilons(epsilons):
        return None
    probe = _as_seen_alone(env, 1)
    claims = [
        agents_pkg.make(first.agent.name, env=probe, seed=0, epsilon=cell.epsilon, **params).privacy
        for cell in cells
    ]
    return agent, claims


def _plan_agents(cells: list[Cell], env: Any, num_runs: int) -> list[tuple[Any, list[tuple]]]:
    """Agents for the cells in play order: ``(agent, [(cell, claim or None), ...])``."""
    view = env if len(cells) == 1 else _as_seen_alone(env, num_runs)
    by_learner: dict[str, list[Cell]] = {}
    for cell in cells:
        by_learner.setdefault(cell.agent.key, []).append(cell)
    plan: list[tuple[Any, list[tuple]]] = []
    for group in by_learner.values():
        finite = [c for c in group if c.epsilon is not None and math.isfinite(c.epsilon)]
        batched = _batched_learner(finite, env, num_runs) if len(finite) > 1 else None
        if batched is not None:
            agent, claims = batched
            plan.append((agent, list(zip(finite, claims, strict=True))))
            group = [c for c in group if c not in finite]
        plan.extend((_make_agent(cell, view), [(cell, None)]) for cell in group)
    return plan


def _rows(
    cell: Cell,
    base: Any,
    claim: Any,
    curves: dict[str, np.ndarray],
    rounds: np.ndarray,
    restarts: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """The cell's tidy rows from its (len(rounds), B) curves, ``restarts`` on the last round's."""
    fixed: dict[str, Any] = {
        "agent": cell.agent.display,
        "agent_name": cell.agent.name,
        "env": cell.env.display,
        "env_id": cell.env.id,
        "horizon": int(base.horizon),
        "n_experts": int(base.n_experts),
        "epsilon": epsilon_label(cell.epsilon),
        "private": claim.is_private,
        "epsilon_certified": float(claim.epsilon),
        "certified": claim.certified,
    }
    lists = {key: values.tolist() for key, values in curves.items()}  # Python floats, at once
    rows = []
    for r_idx, rnd in enumerate(rounds[: next(iter(curves.values())).shape[0]].tolist()):
        for b, seed_index in enumerate(cell.seed_indices):
            row: dict[str, Any] = {**fixed, "seed": int(seed_index), "round": int(rnd)}
            for key, values in lists.items():
                row[key] = values[r_idx][b]
            if restarts is not None and rnd == int(base.horizon):
                row["restarts"] = int(restarts[b])
            rows.append(row)
    return rows


def run_cells(cells: Sequence[Cell]) -> list[tuple[Cell, list[dict[str, Any]]]]:
    """Run cells of one group (same :func:`group_key`) and return ``(cell, rows)`` pairs. Pure.

    The cells share one env with ``copies`` where the adversary allows it, else each plays
    alone; the rows are the same either way.

    Raises:
        ValueError: for cells of different groups.
    """
    cells = list(cells)
    if not cells:
        return []
    first = cells[0]
    if any(group_key(c) != group_key(first) for c in cells):
        raise ValueError("run_cells needs cells with the same env, seed indices and rounds")
    env_seeds = first.env_seeds()
    num_runs = len(env_seeds)
    copies = len(cells)
    if copies > 1 and not _shares_streams(first.env.id):
        return [pair for cell in cells for pair in run_cells([cell])]
    try:
        env = _make_env(first, num_runs * copies, copies)
    except SharedStreamError:
        return [pair for cell in cells for pair in run_cells([cell])]
    try:
        plan = _plan_agents(cells, env, num_runs)
        rounds = record_rounds(int(env.unwrapped.horizon), first.n_record)
        curves = play_shared(env, [agent for agent, _ in plan], env_seeds, rounds)
    finally:
        env.close()
    rows: dict[int, list[dict[str, Any]]] = {}
    k = 0  # the slice of runs of the next cell
    for agent, members in plan:
        restarts = getattr(agent, "restarts", None)  # restart-based learners count them per run
        for m, (cell, claim) in enumerate(members):
            own = {key: v[:, k * num_runs : (k + 1) * num_runs] for key, v in curves.items()}
            claim = agent.privacy if claim is None else claim
            mine = None
            if isinstance(restarts, np.ndarray) and restarts.shape == (agent.num_envs,):
                mine = restarts[m * num_runs : (m + 1) * num_runs]
            rows[id(cell)] = _rows(cell, env.unwrapped, claim, own, rounds, mine)
            k += 1
    return [(cell, rows[id(cell)]) for cell in cells]


def run_one(cell: Cell) -> list[dict[str, Any]]:
    """Run a cell and return its tidy rows (one per seed and recorded round). Pure."""
    return run_cells([cell])[0][1]
