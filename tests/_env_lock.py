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
import struct
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import partial
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


#: The dtype numpy gives a Python int (int64 on the platforms numpy 2 supports).
_INT = np.asarray(0).dtype
_FLOAT_HEAD = f"{np.dtype(np.float64).str}()".encode()
_BOOL_HEAD = f"{np.dtype(np.bool_).str}()".encode()
_INT_HEAD = f"{_INT.str}()".encode()
_pack_float = struct.Struct("d").pack  # native order: the bytes of a float64 array
_pack_int = struct.Struct("q").pack if _INT == np.dtype(np.int64) else None
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_TRUE, _FALSE = b"\x01", b"\x00"
#: numpy scalars whose bytes are their value's (a long double's padding is whatever
#: ``np.asarray`` leaves there: those take the general path, as before).
_PLAIN_SCALARS = (np.bool_, np.integer, np.float16, np.float32, np.float64, np.complex64)
_PLAIN_SCALARS += (np.complex128,)
#: (dtype string, shape) -> the header ``_feed`` hashes before an array's bytes.
_HEADS: dict[tuple[str, tuple[int, ...]], bytes] = {}
#: (path, a dict's keys in their order) -> [(key, key's path, key's hashed repr)] sorted by key,
#: for dicts whose keys are all ``str`` (an info dict has the same keys every round).
_PLANS: dict[tuple[str, tuple[str, ...]], list[tuple[str, str, bytes]]] = {}


def _head(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    key = (dtype.str, shape)
    head = _HEADS.get(key)
    if head is None:
        head = _HEADS[key] = f"{dtype.str}{shape}".encode()
    return head


def _plan(value: dict, path: str) -> list[tuple[Any, str, bytes]]:
    """The keys of ``value`` in the order they are hashed, with their paths and hashed reprs."""
    keys = tuple(value)
    exact = all(type(key) is str for key in keys)
    plan = _PLANS.get((path, keys)) if exact else None
    if plan is None:
        plan = [(key, f"{path}/{key}", repr(key).encode()) for key in sorted(value)]
        if exact:
            _PLANS[path, keys] = plan
    return plan


def _chunks(value: Any, path: str, out: list[bytes], leaves: defaultdict) -> None:
    """Append the bytes :func:`_feed` hashes for ``value`` to ``out`` (see there).

    The common leaves (Python floats, bools and int64-sized ints, numpy scalars, plain arrays)
    are written without building an array: the header and bytes ``np.asarray`` would give.
    A leaf is recorded as the scalar itself (immutable; :func:`_stacked` turns it into the
    0-d array the recursive feeder stored) or as a copy of the array.
    """
    kind = type(value)
    if kind is float:
        out += (_FLOAT_HEAD, _pack_float(value))
        leaves[path].append(value)
    elif kind is bool:
        out += (_BOOL_HEAD, _TRUE if value else _FALSE)
        leaves[path].append(value)
    elif kind is int and _pack_int is not None and _INT_MIN <= value <= _INT_MAX:
        out += (_INT_HEAD, _pack_int(value))
        leaves[path].append(value)
    elif kind is dict or (kind is not np.ndarray and isinstance(value, dict)):
        out.append(b"{")
        for key, sub, key_repr in _plan(value, path):
            out.append(key_repr)
            item = value[key]
            if type(item) is float:  # the most common leaf, inline
                out += (_FLOAT_HEAD, _pack_float(item))
                leaves[sub].append(item)
            else:
                _chunks(item, sub, out, leaves)
        out.append(b"}")
    elif kind is tuple or kind is list or isinstance(value, (list, tuple)):
        out.append(b"[")
        for i, item in enumerate(value):
            _chunks(item, f"{path}/{i}", out, leaves)
        out.append(b"]")
    elif kind is np.ndarray:
        out += (_head(value.dtype, value.shape), value.tobytes())  # C order, as the old feeder
        leaves[path].append(value.copy())
    elif isinstance(value, _PLAIN_SCALARS):
        out += (_head(value.dtype, ()), value.tobytes())
        leaves[path].append(value)
    else:
        arr = np.asarray(value)
        out += (_head(arr.dtype, arr.shape), np.ascontiguousarray(arr).tobytes())
        leaves[path].append(arr.copy())


def _feed(h: Any, value: Any, path: str = "", leaves: dict | None = None) -> None:
    """Hash a value with its type and shape, so equal bytes of different layouts differ.

    A dict is ``{``, then each key's ``repr`` (keys sorted) followed by its value, then ``}``;
    a list or tuple is ``[``, its items, ``]``; anything else is ``np.asarray(value)``: its
    dtype string and shape (``<f8(3,)``), then its bytes in C order. With ``leaves``, every
    leaf is also appended to ``leaves[path]`` (dict keys extend the path by ``/key``, sequence
    items by ``/index``): the values the reference arrays hold (as :func:`_stacked` stacks
    them: a Python or numpy scalar is appended as itself, an array as a copy).

    The bytes are those of the recursive feeder the hashes in ``tests/data`` were taken with
    (``tests/test_lock_feed.py`` keeps it as the reference), joined into one ``update``.
    """
    out: list[bytes] = []
    found: defaultdict = leaves if isinstance(leaves, defaultdict) else defaultdict(list)
    _chunks(value, path, out, found)
    h.update(b"".join(out))
    if leaves is not None and found is not leaves:
        for key, values in found.items():
            leaves.setdefault(key, []).extend(values)


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
        self._leaves: defaultdict[str, list[Any]] = defaultdict(list)
        self._arrays: dict[str, np.ndarray] | None = None  # arrays() until the next feed
        self._paths: dict[tuple[str, tuple[str, ...]], list[str]] = {}

    def feed(self, path: str, value: Any, names: tuple[str, ...] | None = None) -> None:
        """Hash ``value`` as the old lock did; record its leaves under ``path`` (tuple items
        under ``names`` when given)."""
        out: list[bytes] = []
        if names is None:
            _chunks(value, path, out, self._leaves)
        else:
            if len(names) != len(value):
                raise ValueError(f"{path}: {len(value)} items, expected {names}")
            paths = self._paths.get((path, names))
            if paths is None:
                paths = self._paths[path, names] = [f"{path}/{name}" for name in names]
            out.append(b"[")
            for sub, item in zip(paths, value, strict=True):
                _chunks(item, sub, out, self._leaves)
            out.append(b"]")
        self.digest.update(b"".join(out))
        self._arrays = None

    def arrays(self) -> dict[str, np.ndarray]:
        """Every path's leaves stacked along a new first axis (rounds); read-only arrays,
        computed once between feeds (both paths' lock tests read a shared recording)."""
        if self._arrays is None:
            self._arrays = {}
            for path, leaves in self._leaves.items():
                stacked = _stacked(path, leaves)
                stacked.flags.writeable = False
                self._arrays[path.lstrip("/")] = stacked
        return dict(self._arrays)


#: The dtype of the 0-d array ``np.asarray`` makes of each Python scalar ``_chunks`` records.
_SCALAR_DTYPES = {float: np.dtype(np.float64), bool: np.dtype(np.bool_), int: _INT}


def _stacked(path: str, leaves: list[Any]) -> np.ndarray:
    """``np.stack`` of the leaves as 0-d or n-d arrays (what the recursive feeder stored)."""
    first = type(leaves[0])
    if first in _SCALAR_DTYPES and all(type(leaf) is first for leaf in leaves):
        # The (T,) array of T equal-typed Python scalars: the stack of their 0-d arrays.
        return np.array(leaves, dtype=_SCALAR_DTYPES[first])
    arrays = [leaf if type(leaf) is np.ndarray else np.asarray(leaf) for leaf in leaves]
    shapes = {leaf.shape for leaf in arrays}
    if len(shapes) != 1:
        raise ValueError(f"{path}: leaves of different shapes {sorted(shapes)}")
    return np.stack(arrays)


def _actions(space: gym.Space, rng: np.random.Generator, batch: int | None) -> Any:
    return _drawer(space, rng, batch)()


def _drawer(space: gym.Space, rng: np.random.Generator, batch: int | None) -> Callable[[], Any]:
    """The seeded action draws of an episode: each call is one :func:`_actions` call's draw."""
    shape = () if batch is None else (batch,)
    if isinstance(space, gym.spaces.Discrete):
        if batch is None:
            # The 0-d array ``integers(n, size=())`` gives, from the scalar draw: the same value
            # and stream (one bounded draw either way), a fifth of the cost (no size handling).
            integers, n = rng.integers, space.n
            return lambda: np.asarray(integers(n))
        return partial(rng.integers, space.n, size=shape)
    lo, hi = space.low.reshape(-1)[0], space.high.reshape(-1)[0]
    size, dtype = shape + (space.shape[-1],), space.dtype
    return lambda: rng.uniform(lo, hi, size=size).astype(dtype)


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
    draw = _drawer(env.action_space, np.random.default_rng(SEED + 1), None)
    obs, info = env.reset(seed=SEED, options=options)
    rec.feed(f"{stream}/reset", (obs, info), RESET_ITEMS)
    done, path = False, f"{stream}/step"
    while not done:
        obs, reward, done, truncated, info = env.step(draw())
        rec.feed(path, (obs, reward, done, truncated, info), STEP_ITEMS)


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
    draw = _drawer(venv.single_action_space, np.random.default_rng(SEED + 2), NUM_ENVS)
    rec.feed("vector/reset", venv.reset(seed=SEED), RESET_ITEMS)
    for _ in range(venv.unwrapped.horizon + 2):  # through the autoreset step and one more
        rec.feed("vector/step", venv.step(draw()), STEP_ITEMS)
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
