"""Behaviour fingerprints keying reference rows and sets (docs/bench.md, "The leaderboard")."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from dp_experts_env.bench.protocol import Protocol, Task
from dp_experts_env.bench.runner import Entrant, applicability

__all__ = [
    "FINGERPRINT_HORIZON",
    "FINGERPRINT_SEEDS",
    "fingerprint_tasks",
    "fingerprints",
    "scoring_fingerprint",
]

#: Rounds and runs of each fingerprint play: past every learner's first restarts, block picks
#: and tree nodes, yet cheap enough for a card to play its kind's rows.
FINGERPRINT_HORIZON = 64
FINGERPRINT_SEEDS = 2

_DIGITS = 12  # significant digits of every hashed float: the last bits move across CPUs


def fingerprint_tasks(protocol: Protocol) -> list[Task]:
    """The protocol's grid tasks at :data:`FINGERPRINT_HORIZON` (the learned task left out)."""
    return [
        Task(**{**task.__dict__, "sizes": {**task.sizes, "horizon": FINGERPRINT_HORIZON}})
        for task in protocol.tasks
        if not task.learned
    ]


def _cells(protocol: Protocol, task: Task, entrants: Sequence[Entrant]) -> list[Any]:
    from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid

    grid = Grid(
        agents=[AgentEntry(e.name, dict(e.params), e.label) for e in entrants],
        envs=[EnvEntry(task.env, task.env_params(), task.name)],
        epsilons=[1.0, math.inf],
        n_seeds=FINGERPRINT_SEEDS,
        base_seed=protocol.base_seed,
        n_record=8,
    )
    return grid.cells()


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return format(value, f".{_DIGITS}g")
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    return str(value)


def _play(cells: Sequence[Any]) -> dict[str, list[Any]]:
    """``{agent label: its rows as plain values}`` of cells played together, in cell order."""
    from dp_experts_env.evaluation.episode import METRICS, group_key, run_cells

    out: dict[str, list[Any]] = {}
    groups: dict[Any, list[Any]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)
    for group in groups.values():
        for cell, rows in run_cells(group):
            seen = out.setdefault(cell.agent.display, [])
            for row in rows:
                keys = ("epsilon", "seed", "round", "epsilon_certified", "certified", *METRICS)
                seen.append([_plain(row.get(k)) for k in keys])
    return out


def _paths_played(cells: Sequence[Any]) -> list[dict[str, list[Any]]]:
    """The rows on the numpy path, then (numba importable) on the compiled path."""
    from dp_experts_env._jit import jit_enabled, numba_available, numpy_path

    with numpy_path():
        played = [_play(cells)]
    if numba_available() and jit_enabled():
        played.append(_play(cells))
    return played


def fingerprints(protocol: Protocol, entrants: Sequence[Entrant]) -> dict[str, str]:
    """``{label: 16 hex digits}``: each learner's behaviour on the protocol's tasks of its kind.

    Learners play together on shared loss streams; each gets the rows it gets alone. Where the
    two paths disagree both are hashed, so the fingerprint matches no recorded one.

    Args:
        protocol: whose tasks (env, family, sizes other than the horizon) are played.
        entrants: the learners (name, keywords); labels must be unique.
    """
    labels = [e.label for e in entrants]
    if len(set(labels)) != len(labels):
        raise ValueError(f"entrants must have unique labels, got {labels}")
    parts: dict[str, dict[str, Any]] = {label: {} for label in labels}
    for task in fingerprint_tasks(protocol):
        players = [e for e in entrants if not applicability(e.name, task)]
        if not players:
            continue
        played = _paths_played(_cells(protocol, task, players))
        for entrant in players:
            rows = [p[entrant.label] for p in played]
            agree = all(r == rows[0] for r in rows)
            parts[entrant.label][task.name] = rows[0] if agree else {"paths differ": rows}
    return {label: _digest(parts[label]) for label in labels}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scoring_fingerprint(min_gap: float = 0.2) -> str:
    """The scoring code's behaviour (16 hex): the scores it gives on a fixed hand-made task."""
    import numpy as np
    import pandas as pd

    from dp_experts_env.bench.runner import TaskRows
    from dp_experts_env.bench.scores import capability_scores, task_scale, task_scores

    task = Task("probe", "probe", "DPExperts-Shift-v0", "bernoulli_gap", {}, 5, "static_regret")
    rng = np.random.default_rng(20261129)
    frames = []
    for label, level, epsilons in [
        ("control", 100.0, [math.inf]),
        ("ref-a", 40.0, [math.inf]),
        ("ref-b", 55.0, [math.inf]),
        ("learner", 70.0, [1.0, math.inf]),
    ]:
        for eps in epsilons:
            regret = level + (10.0 if eps == 1.0 else 0.0) + rng.normal(0.0, 8.0, 5)
            frames.append(
                pd.DataFrame(
                    {"agent": label, "epsilon": eps, "seed": range(5), "static_regret": regret}
                )
            )
    rows = TaskRows(task, pd.concat(frames, ignore_index=True), "control", ("ref-a", "ref-b"))
    scale = task_scale(rows, min_gap)
    scores = task_scores(rows, "learner", [1.0, math.inf], scale)
    caps = capability_scores({"probe": scores}, {"probe": ["probe"]})
    return _digest(_rounded({"scale": scale, "scores": scores, "caps": caps}))


def _rounded(value: Any) -> Any:
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_rounded(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return format(float(value), f".{_DIGITS}g")
    if isinstance(value, np.integer):
        return int(value)
    return value
