"""Behaviour lock of the environments: one hash per (env id, family) of everything they emit.

:func:`episode_hash` plays one seeded episode of a single env and of a small vector env (with a
neighbouring reset and the vector env's autoreset step) under a fixed, seeded action sequence and
hashes every observation, reward, flag and ``info`` value, plus the env's public attributes and
spaces. ``tests/data/env_hashes.json`` holds the hashes computed before the environment code was
restructured; ``tests/test_env_lock.py`` asserts they are unchanged, so a refactor that alters a
single bit of any episode fails.

Regenerate (only for a deliberate behaviour change, which must then be documented)::

    cd tests && python -m _env_lock > data/env_hashes.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

import dp_experts_env  # noqa: F401  (registers the ids)
from dp_experts_env.adversaries import families
from dp_experts_env.adversaries.oco import OCO_FAMILIES
from dp_experts_env.envs import OCOEnv
from dp_experts_env.registration import ENVS

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


def _feed(h: Any, value: Any) -> None:
    """Hash a value with its type and shape, so equal bytes of different layouts differ."""
    if isinstance(value, dict):
        h.update(b"{")
        for key in sorted(value):
            h.update(repr(key).encode())
            _feed(h, value[key])
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    else:
        arr = np.asarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())


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


def _play_single(h: Any, env: gym.Env, options: dict[str, Any] | None) -> None:
    rng = np.random.default_rng(SEED + 1)
    obs, info = env.reset(seed=SEED, options=options)
    _feed(h, (obs, info))
    done = False
    while not done:
        obs, reward, done, truncated, info = env.step(_actions(env.action_space, rng, None))
        _feed(h, (obs, reward, done, truncated, info))


def episode_hash(env_id: str, family: str) -> str:
    """The SHA-256 of one (env id, family)'s seeded episodes (see the module docstring)."""
    kind = next(e.kind for e in ENVS if e.id == env_id)
    extra = REQUIRED_INPUTS.get((kind, family), {})
    h = hashlib.sha256()
    env = gym.make(env_id, family=family, **extra).unwrapped
    _feed(h, _attributes(env))
    _play_single(h, env, None)
    _play_single(h, env, {"neighbor": _neighbor(env)})
    env.reset()  # a fresh seed drawn from the env's own generator
    _feed(h, env.step(_actions(env.action_space, np.random.default_rng(SEED), None)))

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
    _feed(h, venv.reset(seed=SEED))
    for _ in range(venv.unwrapped.horizon + 2):  # through the autoreset step and one more
        _feed(h, venv.step(_actions(venv.single_action_space, rng, NUM_ENVS)))
    venv.close()
    return h.hexdigest()


def all_hashes() -> dict[str, str]:
    """``{"<env id>/<family>": hash}`` for every case."""
    return {f"{env_id}/{family}": episode_hash(env_id, family) for env_id, family in cases()}


if __name__ == "__main__":
    json.dump(all_hashes(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
