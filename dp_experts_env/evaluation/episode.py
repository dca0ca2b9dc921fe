"""The episode loop: one batched agent against one native vector env.

Only observations reach the agent; ``info`` is read here, by the evaluation, at log-spaced
rounds. All seeds of a cell play in one batch, so there is no Python loop over runs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import agents as agents_pkg
from dp_experts_env.evaluation.grid import Cell, epsilon_label, record_rounds

__all__ = ["METRICS", "run_one", "play"]

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
    obs, _ = env.reset(seed=list(env_seeds))
    agent.reset()
    horizon = int(env.unwrapped.horizon)
    # A set, not a length-T mask: memory must not grow with the horizon.
    keep = {int(r) for r in rounds}
    curves: dict[str, list[np.ndarray]] = {}
    for t in range(1, horizon + 1):
        action = agent.act(obs)
        obs, _, terminated, truncated, info = env.step(action)
        if t in keep:
            for key in METRICS:
                if key in info:
                    curves.setdefault(key, []).append(np.asarray(info[key], dtype=np.float64))
        if np.all(terminated) or np.all(truncated):
            break
    return {key: np.stack(values) for key, values in curves.items()}


def run_one(cell: Cell) -> list[dict[str, Any]]:
    """Run a cell and return its tidy rows (one per seed and recorded round). Pure."""
    env_seeds = cell.env_seeds()
    num_runs = len(env_seeds)
    env = gym.make_vec(
        cell.env.id,
        num_envs=num_runs,
        vectorization_mode="vector_entry_point",
        **dict(cell.env.params),
    )
    params = dict(cell.agent.params)
    if cell.epsilon is not None:
        params["epsilon"] = cell.epsilon
    agent = agents_pkg.make(cell.agent.name, env=env, seed=cell.agent_seeds(), **params)
    rounds = record_rounds(int(env.unwrapped.horizon), cell.n_record)
    try:
        curves = play(env, agent, env_seeds, rounds)
    finally:
        env.close()
    claim = agent.privacy
    eps = epsilon_label(cell.epsilon)
    rows = []
    for r_idx, rnd in enumerate(rounds[: next(iter(curves.values())).shape[0]]):
        for b, seed_index in enumerate(cell.seed_indices):
            row: dict[str, Any] = {
                "agent": cell.agent.display,
                "agent_name": cell.agent.name,
                "env": cell.env.display,
                "env_id": cell.env.id,
                "horizon": int(env.unwrapped.horizon),
                "n_experts": int(env.unwrapped.n_experts),
                "epsilon": eps,
                "private": claim.is_private,
                "epsilon_certified": float(claim.epsilon),
                "certified": claim.certified,
                "seed": int(seed_index),
                "round": int(rnd),
            }
            for key, values in curves.items():
                row[key] = float(values[r_idx, b])
            rows.append(row)
    return rows
