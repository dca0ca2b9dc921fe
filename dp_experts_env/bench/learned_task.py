"""Play a learned-adversary task: every learner against one frozen, adaptive PPO adversary.

A task with an ``adversary`` entry (``bench-v2``'s ``learned-adversary``) is not a grid: the
adversary reacts to the learner's plays, so there are no loss streams to share. Each learner
(the feedback kind's control and references, then the entrants) plays, at each epsilon, one
batch of the task's seeds in ``DPExperts-Attack-v0``'s engine
(:class:`~dp_experts_env.attack.env.AttackCore`, full information, realized static regret)
against the frozen policy (:class:`~dp_experts_env.bench.frozen_policy.FrozenPolicy`: numpy
only). Run ``i`` seeds the learner with ``EVAL_SEED_BASE + 1000 * train_seed + i``, the
evaluation seeds ``dp-experts attack`` uses for that training seed (no training episode's).

Each (learner, epsilon) is stored as it finishes in ``OUT/runs/<task>/cells/``, keyed by the
task, the adversary's digest, the learner and its keywords, the seeds and the code that makes
the rows (the learner's and the attack env's source hashes, this module's), so a killed bench
resumes and an edited learner is played again. The rows are those of a grid's final round
(``agent``, ``epsilon``, ``seed``, the metric, ``epsilon_certified``, ``certified``), so the
scores, the card and the certified epsilons read them like any task's. These cells play in the
calling process whatever the backend (a few seconds for every built-in; docs/bench.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dp_experts_env.bench.protocol import Task

__all__ = ["learned_seeds", "play_learned", "play_learned_task"]


def learned_seeds(task: Task) -> list[int]:
    """The learner seeds of a learned-adversary task's runs (module docstring)."""
    from dp_experts_env.attack.run import EVAL_SEED_BASE

    start = EVAL_SEED_BASE + 1000 * int(task.adversary["train_seed"])
    return list(range(start, start + task.seeds))


def play_learned(
    task: Task,
    policy: Any,
    name: str,
    params: Mapping[str, Any],
    epsilon: float | None,
) -> dict[str, Any]:
    """One learner at one epsilon against the frozen adversary, all seeds in one batch.

    Returns:
        ``{"static_regret": [...], "dynamic_regret": [...]}`` per run, and the learner's claim
        (``epsilon_certified``, ``certified``, ``private``).
    """
    from dp_experts_env.attack.env import AttackCore

    sizes = dict(task.sizes)
    core = AttackCore(
        task.seeds,
        learner=name,
        n_experts=int(sizes["n_experts"]),
        horizon=int(sizes["horizon"]),
        epsilon=epsilon,
        learner_params=dict(params),
    )
    obs = core.reset(learned_seeds(task))
    info: dict[str, Any] = {}
    for _ in range(core.horizon):
        obs, _, info = core.step(policy(obs))
    claim = core.learner.privacy
    return {
        "static_regret": np.asarray(info["static_regret"], dtype=np.float64).tolist(),
        "dynamic_regret": np.asarray(info["dynamic_regret"], dtype=np.float64).tolist(),
        "epsilon_certified": repr(float(claim.epsilon)),  # "inf" is not JSON
        "certified": bool(claim.certified),
        "private": bool(claim.is_private),
    }


def _source_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def _cell_key(task: Task, name: str, params: Mapping[str, Any], epsilon: float | None) -> dict:
    from dp_experts_env.attack.env import ATTACK_ID
    from dp_experts_env.evaluation.fingerprints import code_fingerprint

    return {
        "task": {"name": task.name, "env": task.env, "family": task.family},
        "sizes": dict(task.sizes),
        "adversary": dict(task.adversary),
        "seeds": learned_seeds(task),
        "learner": name,
        "params": dict(params),
        "epsilon": "none" if epsilon is None else repr(float(epsilon)),
        "code": code_fingerprint(name, ATTACK_ID),
        "runner": _source_hash(),
    }


def _stored(folder: Path, key: Mapping[str, Any], compute: Any) -> dict[str, Any]:
    """The cell stored under ``key`` in ``folder``, computed and written when absent or stale."""
    from dp_experts_env.evaluation.store import read_plain, write_atomic

    text = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
    try:
        stored = json.loads(read_plain(path))
        if stored.get("key") == json.loads(text):
            return stored["result"]
    except (FileNotFoundError, ValueError, AttributeError):
        pass  # absent or torn: played again
    result = compute()
    folder.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"key": json.loads(text), "result": result}, allow_nan=False)
    write_atomic(path, lambda fh: fh.write(body))
    return result


def play_learned_task(
    task: Task,
    players: Sequence[tuple[str, Mapping[str, Any], str]],
    epsilons: Sequence[float],
    folder: str | Path,
) -> Any:
    """The final rows of every player (``(name, keywords, label)``) on a learned-adversary task.

    A private learner plays every epsilon (``inf``: its noise removed), a non-private one once
    (epsilon ``inf`` in its rows), as in a grid.

    Returns:
        A pandas DataFrame, one row per (player, epsilon, seed index).
    """
    import pandas as pd

    import agents
    from dp_experts_env.bench.frozen_policy import FrozenPolicy, load_shipped

    policy = FrozenPolicy(load_shipped(task.adversary["digest"]))
    folder = Path(folder) / "cells"
    rows = []
    for name, params, label in players:
        private = agents.spec(name).private and "epsilon" not in params
        for eps in list(epsilons) if private else [None]:
            key = _cell_key(task, name, params, eps)
            result = _stored(
                folder, key, lambda n=name, p=params, e=eps: play_learned(task, policy, n, p, e)
            )
            for i, (static, dynamic) in enumerate(
                zip(result["static_regret"], result["dynamic_regret"], strict=True)
            ):
                rows.append(
                    {
                        "agent": label,
                        "agent_name": name,
                        "env": task.name,
                        "epsilon": math.inf if eps is None else float(eps),
                        "seed": i,
                        "round": int(task.sizes["horizon"]),
                        "static_regret": static,
                        "dynamic_regret": dynamic,
                        "epsilon_certified": float(result["epsilon_certified"]),
                        "certified": result["certified"],
                        "private": result["private"],
                    }
                )
    return pd.DataFrame(rows)
