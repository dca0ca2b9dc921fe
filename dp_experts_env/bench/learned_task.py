"""Play a learned-adversary task, cells stored (docs/bench.md, "The learned-adversary task")."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dp_experts_env.bench.protocol import Task

__all__ = [
    "PERMUTATION_SALT",
    "RUNNER_SOURCES",
    "PermutedPolicy",
    "label_permutations",
    "learned_seeds",
    "play_learned",
    "play_learned_task",
    "runner_hash",
]

#: Public salt of the label permutations' generator (seeded with it and the training seed).
PERMUTATION_SALT = 42
#: Modules whose source files the cell key hashes, beyond the learner's and the attack env's.
RUNNER_SOURCES = (
    "dp_experts_env.bench.learned_task",
    "dp_experts_env.bench.frozen_policy",
)


def learned_seeds(task: Task) -> list[int]:
    """The learner seeds of the runs: ``dp-experts attack``'s evaluation seeds for the task."""
    from dp_experts_env.attack.run import EVAL_SEED_BASE

    start = EVAL_SEED_BASE + 1000 * int(task.adversary["train_seed"])
    return list(range(start, start + task.seeds))


def label_permutations(task: Task) -> np.ndarray:
    """The (seeds, N) label permutations: run i's learner label k is the adversary's ``[i, k]``.

    A seeded base permutation rolled by a seeded shuffle of ``i mod N`` (balanced when N divides
    the seeds), seeded with :data:`PERMUTATION_SALT` and the training seed only: public.
    """
    n, runs = int(task.sizes["n_experts"]), int(task.seeds)
    rng = np.random.default_rng([PERMUTATION_SALT, int(task.adversary["train_seed"])])
    base = rng.permutation(n)
    shifts = rng.permutation(np.arange(runs) % n)
    return np.stack([np.roll(base, int(s)) for s in shifts]).astype(np.int64)


class PermutedPolicy:
    """A policy played through per-run label permutations (:func:`label_permutations`).

    The observation (``t / T``, then blocks of N expert-indexed features) goes into the
    adversary's labels, its loss vector back into the learner's.

    Args:
        policy: (B, obs_size) observations -> (B, N) actions, in the adversary's labels.
        permutations: (B, N) ints, row i a permutation of range(N).
    """

    def __init__(self, policy: Any, permutations: np.ndarray) -> None:
        perms = np.asarray(permutations, dtype=np.int64)
        if perms.ndim != 2 or not (np.sort(perms, axis=1) == np.arange(perms.shape[1])).all():
            raise ValueError("permutations: a (runs, N) array of permutations of range(N)")
        self.policy, self.perms, self.inverse = policy, perms, np.argsort(perms, axis=1)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """(B, 1 + k N) observations in the learner's labels -> (B, N) actions in its labels."""
        b, n = self.perms.shape
        obs = np.asarray(obs)
        if obs.shape[0] != b or (obs.shape[1] - 1) % n:
            raise ValueError(f"obs: shape (runs={b}, 1 + k * {n}) expected, got {obs.shape}")
        blocks = obs[:, 1:].reshape(b, -1, n)
        seen = np.take_along_axis(blocks, self.inverse[:, None, :], axis=2)
        action = np.asarray(self.policy(np.concatenate([obs[:, :1], seen.reshape(b, -1)], 1)))
        return np.take_along_axis(action.reshape(b, n), self.perms, axis=1)


def play_learned(
    task: Task,
    policy: Any,
    name: str,
    params: Mapping[str, Any],
    epsilon: float | None,
) -> dict[str, Any]:
    """One learner at one epsilon against ``policy`` (in its own labels), all seeds at once.

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
    permuted = PermutedPolicy(policy, label_permutations(task))
    obs = core.reset(learned_seeds(task))
    info: dict[str, Any] = {}
    for _ in range(core.horizon):
        obs, _, info = core.step(permuted(obs))
    claim = core.learner.privacy
    return {
        "static_regret": np.asarray(info["static_regret"], dtype=np.float64).tolist(),
        "dynamic_regret": np.asarray(info["dynamic_regret"], dtype=np.float64).tolist(),
        "epsilon_certified": repr(float(claim.epsilon)),  # "inf" is not JSON
        "certified": bool(claim.certified),
        "private": bool(claim.is_private),
    }


def runner_hash(modules: Sequence[str] | None = None) -> str:
    """SHA-256 (16 hex) of the source files of ``modules`` (default :data:`RUNNER_SOURCES`)."""
    from importlib.util import find_spec

    h = hashlib.sha256()
    for name in RUNNER_SOURCES if modules is None else modules:
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"modules: {name!r} has no source file")
        text = Path(spec.origin).read_bytes()
        h.update(f"{len(text)}:".encode() + text)
    return h.hexdigest()[:16]


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
        "runner": runner_hash(),
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
    """The final rows of every player (``(name, keywords, label)``), cells read or played.

    As in a grid, a private learner plays every epsilon, a non-private one once (``inf``).

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
