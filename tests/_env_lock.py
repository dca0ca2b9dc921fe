"""Behaviour lock of the environments: every (env id, family)'s episodes as reference arrays.

:func:`record_case` plays one seeded episode of a single env (and the same episode with a
neighbouring round, and one step after a reset from the env's own seed generator) and of a small
vector env (through its autoreset step) under a fixed, seeded action sequence, and records every
observation, reward, flag and ``info`` value, plus the env's public attributes and spaces, as
named arrays (``single/step/info/dynamic_regret``: the (T,) dynamic regrets of the single
episode, ...). ``tests/data/env_reference.xz`` holds the reference arrays and
``tests/data/env_hashes.json`` the exact SHA-256 of the same values' bytes; both were taken at
revision 1e7bc86, before the environment code was restructured. ``tests/test_env_lock.py``
compares the arrays (integers exact, floats to a relative tolerance of 1e-9: see
``_lock_arrays.py``) and reports the hash as an informational check.

Check and report (prints every differing array)::

    PYTHONPATH=. python tests/_env_lock.py

Regenerate deliberately (every case, or the named ones)::

    PYTHONPATH=. python tests/_env_lock.py --update
    PYTHONPATH=. python tests/_env_lock.py --update DPExperts-OCO-v0/shifting

Regenerating is legitimate only for a deliberate change of an env's behaviour (a new random
stream, a corrected law or regret), stated in the commit and in the docs the change touches.
It is never the fix for a lock that fails on another machine: a value that moves by more than
the tolerance across CPUs is a portability bug (an order-dependent reduction, a decision taken on
the last bit of a float) to be fixed in the code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import dp_experts_env  # noqa: F401  (registers the ids)
from dp_experts_env.adversaries import families
from dp_experts_env.adversaries.oco import OCO_FAMILIES
from dp_experts_env.envs import OCOEnv
from dp_experts_env.registration import ENVS

sys.path.insert(0, str(Path(__file__).parent))
from _lock_arrays import compare, join_cases, load, save, split_cases  # noqa: E402

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "env_reference.xz"  # the arrays (see _lock_arrays.py for the format)
HASHES = DATA / "env_hashes.json"  # the exact SHA-256 per case (informational)

SEED = 20240611
HORIZON_VECTOR = 40  # the vector episode is shorter: it checks batching, not length
NUM_ENVS = 3

# Families that cannot be built from defaults alone get a small public input (seeded here).
_RNG = np.random.default_rng(7)
_LOSSES = _RNG.random((60, 4))
_ARM_LOSSES = _RNG.random((60, 3))
_ADVICE = _RNG.dirichlet(np.ones(3), size=(60, 4))
_GRADIENTS = np.clip(_RNG.normal(size=(60, 3)) * 0.3, -0.5, 0.5)

REQUIRED_INPUTS: dict[tuple[str, str], dict[str, Any]] = {
    ("oblivious", "replay"): {"losses": _LOSSES},
    ("bandit_advice", "replay"): {"losses": _ARM_LOSSES, "advice": _ADVICE},
    ("bandit", "replay"): {"losses": _ARM_LOSSES},
    ("bandit_advice", "policy_class"): {"n_experts": 25, "n_contexts": 2},
    ("oco", "replay"): {"gradients": _GRADIENTS},
}


def cases() -> Iterator[tuple[str, str]]:
    """Every (env id, family) pair the registries offer."""
    for entry in ENVS:
        names = OCO_FAMILIES if entry.kind == "oco" else families(entry.kind)
        for family in names:
            yield entry.id, family


def _feed(h: Any, value: Any, path: str = "", leaves: dict | None = None) -> None:
    """Hash a value with its type and shape, so equal bytes of different layouts differ.

    With ``leaves``, every array leaf is also appended to ``leaves[path]`` (dict keys extend the
    path by ``/key``, sequence items by ``/index``): the values the reference arrays hold.
    """
    if isinstance(value, dict):
        h.update(b"{")
        for key in sorted(value):
            h.update(repr(key).encode())
            _feed(h, value[key], f"{path}/{key}", leaves)
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for i, item in enumerate(value):
            _feed(h, item, f"{path}/{i}", leaves)
        h.update(b"]")
    else:
        arr = np.asarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
        if leaves is not None:
            leaves.setdefault(path, []).append(arr.copy())


#: Names of the items of a step's and a reset's tuple (the paths of the recorded arrays).
STEP_ITEMS = ("obs", "reward", "terminated", "truncated", "info")
RESET_ITEMS = ("obs", "info")


class Recorder:
    """The exact SHA-256 of everything fed (the old lock's hash) and the values as arrays.

    Each path collects the leaves of one stream across rounds, so ``single/step/info/round`` is
    the (T,) array of the single episode's rounds and ``vector/step/obs`` the (T + 2, B, N)
    observations of the vector episode.
    """

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self._leaves: dict[str, list[np.ndarray]] = {}

    def feed(self, path: str, value: Any, names: tuple[str, ...] | None = None) -> None:
        """Hash ``value`` as the old lock did; record its leaves under ``path`` (tuple items
        under ``names`` when given)."""
        if names is None:
            _feed(self.digest, value, path, self._leaves)
            return
        if len(names) != len(value):
            raise ValueError(f"{path}: {len(value)} items, expected {names}")
        self.digest.update(b"[")
        for name, item in zip(names, value, strict=True):
            _feed(self.digest, item, f"{path}/{name}", self._leaves)
        self.digest.update(b"]")

    def arrays(self) -> dict[str, np.ndarray]:
        """Every path's leaves stacked along a new first axis (rounds)."""
        out = {}
        for path, leaves in self._leaves.items():
            shapes = {leaf.shape for leaf in leaves}
            if len(shapes) != 1:
                raise ValueError(f"{path}: leaves of different shapes {sorted(shapes)}")
            out[path.lstrip("/")] = np.stack(leaves)
        return out


def _actions(space: gym.Space, rng: np.random.Generator, batch: int | None) -> Any:
    shape = () if batch is None else (batch,)
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.n, size=shape)
    lo, hi = space.low.reshape(-1)[0], space.high.reshape(-1)[0]
    dim = space.shape[-1]
    return rng.uniform(lo, hi, size=shape + (dim,)).astype(space.dtype)


def _attributes(env: Any) -> dict[str, Any]:
    names = ("kind", "family", "n_experts", "horizon", "n_arms", "n_switches", "feedback", "dim")
    out = {n: repr(getattr(env, n, None)) for n in names}
    out["spaces"] = repr((env.observation_space, env.action_space))
    return out


def _neighbor(env: Any) -> dict[str, Any]:
    space = env.observation_space
    if isinstance(space, gym.spaces.Dict):
        size = env.n_arms
    elif isinstance(env, OCOEnv):
        return {"round": 2, "loss": np.full(env.dim, 0.1)}
    else:
        size = env.n_experts
    return {"round": 2, "loss": np.linspace(0.0, 1.0, size)}


def _play_single(rec: Recorder, stream: str, env: gym.Env, options: dict | None) -> None:
    rng = np.random.default_rng(SEED + 1)
    obs, info = env.reset(seed=SEED, options=options)
    rec.feed(f"{stream}/reset", (obs, info), RESET_ITEMS)
    done = False
    while not done:
        obs, reward, done, truncated, info = env.step(_actions(env.action_space, rng, None))
        rec.feed(f"{stream}/step", (obs, reward, done, truncated, info), STEP_ITEMS)


def record_case(env_id: str, family: str) -> Recorder:
    """Play one (env id, family)'s seeded episodes into a :class:`Recorder`.

    A single episode, the same episode with a neighbouring round, one step after a reset from
    the env's own seed generator, and a vector episode through its autoreset step.
    """
    kind = next(e.kind for e in ENVS if e.id == env_id)
    extra = REQUIRED_INPUTS.get((kind, family), {})
    rec = Recorder()
    env = gym.make(env_id, family=family, **extra).unwrapped
    rec.feed("attributes", _attributes(env))
    _play_single(rec, "single", env, None)
    _play_single(rec, "neighbour", env, {"neighbor": _neighbor(env)})
    env.reset()  # a fresh seed drawn from the env's own generator
    step = env.step(_actions(env.action_space, np.random.default_rng(SEED), None))
    rec.feed("fresh/step", step, STEP_ITEMS)

    horizon = {} if extra else {"horizon": HORIZON_VECTOR}
    venv = gym.make_vec(
        env_id,
        num_envs=NUM_ENVS,
        vectorization_mode="vector_entry_point",
        family=family,
        **horizon,
        **extra,
    )
    rng = np.random.default_rng(SEED + 2)
    rec.feed("vector/reset", venv.reset(seed=SEED), RESET_ITEMS)
    for _ in range(venv.unwrapped.horizon + 2):  # through the autoreset step and one more
        rec.feed(
            "vector/step", venv.step(_actions(venv.single_action_space, rng, NUM_ENVS)), STEP_ITEMS
        )
    venv.close()
    return rec


def episode_hash(env_id: str, family: str) -> str:
    """The SHA-256 of one (env id, family)'s seeded episodes (see the module docstring)."""
    return record_case(env_id, family).digest.hexdigest()


def reference_base(key: str) -> str | None:
    """The neighbouring episode's arrays are stored as differences from the plain episode's."""
    case, _, path = key.partition("|")
    if path.startswith("neighbour/"):
        return f"{case}|single/{path[len('neighbour/') :]}"
    return None


def load_reference() -> tuple[dict[str, dict[str, np.ndarray]], dict[str, str]]:
    """``({case: {path: array}}, {case: exact hash})`` from ``tests/data``."""
    arrays = split_cases(load(REFERENCE)) if REFERENCE.exists() else {}
    hashes = json.loads(HASHES.read_text()) if HASHES.exists() else {}
    return arrays, hashes


def update(selected: list[str]) -> None:
    """Re-record the reference of the ``selected`` cases (all cases when empty)."""
    arrays, hashes = load_reference()
    every = [f"{env_id}/{family}" for env_id, family in cases()]
    unknown = sorted(set(selected) - set(every))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {every}")
    for key in selected or every:
        env_id, family = key.split("/", 1)
        rec = record_case(env_id, family)
        arrays[key], hashes[key] = rec.arrays(), rec.digest.hexdigest()
        print(f"recorded {key}", file=sys.stderr)
    save(REFERENCE, join_cases(arrays), reference_base)
    HASHES.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


def check() -> int:
    """Compare every case with the reference and print what differs; 1 if anything does."""
    arrays, hashes = load_reference()
    failed = 0
    for env_id, family in cases():
        key = f"{env_id}/{family}"
        if key not in arrays:
            print(f"{key}: no reference")
            continue
        rec = record_case(env_id, family)
        problems = compare(rec.arrays(), arrays[key])
        exact = "bytes identical" if rec.digest.hexdigest() == hashes.get(key) else "bytes differ"
        print(f"{key}: {'OK' if not problems else 'DIFFERS'} ({exact})")
        for line in problems:
            print(f"    {line}")
        failed |= bool(problems)
    return int(failed)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--update",
        nargs="*",
        metavar="CASE",
        help="re-record the reference of these cases ('<env id>/<family>'; all when none given)",
    )
    args = parser.parse_args()
    if args.update is None:
        sys.exit(check())
    update(args.update)
