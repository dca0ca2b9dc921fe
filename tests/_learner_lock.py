"""Behaviour lock of the learners: every registered learner's actions on a small seeded game.

:func:`actions` plays a learner (B = 3 runs, env seed 7, learner seed 11; private learners at
epsilon 1 and, as ``name@inf``, at epsilon = inf, their noiseless limit) and returns its actions:
integers for the experts and bandit learners, float points for the continuous-action (OCO) ones.
``tests/data/learner_reference.xz`` holds the reference actions and
``tests/data/learner_hashes.json`` the exact SHA-256 of their bytes, taken at revision 1e7bc86
(before the refactors of the environment parameters, the citations and the per-run-epsilon
speed-ups); ``tests/test_learner_lock.py`` checks that HEAD plays the same actions: integers
equal, floats to a relative tolerance of 1e-9 (``_lock_arrays.py``), the hash as an
informational check. The script uses only the public API, so it runs on any revision.

Check and report::

    PYTHONPATH=. python tests/_learner_lock.py

Regenerate deliberately (every learner, or the named ones, e.g. a new learner ``my-learner``;
its ``@inf`` entry is written with it when it is private)::

    PYTHONPATH=. python tests/_learner_lock.py --update
    PYTHONPATH=. python tests/_learner_lock.py --update my-learner

Regenerating is legitimate for a new learner, or for a deliberate change of a learner's random
stream or law, stated in the commit (and in docs/algorithms.md when its behaviour changes). It
is never the fix for a lock that fails on another machine: actions that move by more than the
tolerance across CPUs are a portability bug to fix in the code. A speed-up claimed "bit for bit"
must pass with the hash identical on the machine it was made on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import agents
import dp_experts_env  # noqa: F401 - registers the ids

sys.path.insert(0, str(Path(__file__).parent))
from _lock_arrays import compare, load, save  # noqa: E402

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "learner_reference.xz"  # {entry: actions} (see _lock_arrays.py)
HASHES = DATA / "learner_hashes.json"  # {entry: sha256 of the actions' bytes} (informational)

#: (env id, env keywords) per feedback kind; "any" learners play the full-information game.
GAMES = {
    "full": ("DPExperts-Shift-v0", {"n_experts": 5, "horizon": 120, "n_shifts": 2}),
    "any": ("DPExperts-Shift-v0", {"n_experts": 5, "horizon": 120, "n_shifts": 2}),
    "bandit": ("DPExperts-BanditAdvice-v0", {"n_experts": 5, "n_arms": 3, "horizon": 120}),
    "oco": ("DPExperts-OCO-v0", {"dim": 2, "horizon": 60}),
}
#: learners left out: PPO trains a torch network first (its determinism is torch's business).
SKIP = {"ppo"}
RUNS = 3


def entries() -> list[str]:
    """Every lock entry of the registry: each learner, and ``name@inf`` for the private ones."""
    found = []
    for spec in sorted(agents.available(), key=lambda a: a["name"]):
        if spec["name"] in SKIP:
            continue
        found.append(spec["name"])
        if spec["private"]:
            found.append(f"{spec['name']}@inf")
    return found


def actions(entry: str) -> np.ndarray:
    """The (T, B) or (T, B, d) actions of a lock entry (``name`` or ``name@inf``)."""
    name, _, inf = entry.partition("@")
    spec = agents.spec(name)
    env_id, params = GAMES[spec.feedback]
    env = gym.make_vec(env_id, num_envs=RUNS, vectorization_mode="vector_entry_point", **params)
    extra = {"epsilon": float("inf") if inf else 1.0} if spec.private else {}
    agent = agents.make(name, env=env, seed=11, **extra)
    played = []
    obs, _ = env.reset(seed=7)
    while True:
        action = np.asarray(agent.act(obs))
        played.append(np.array(action))
        obs, _, terminated, truncated, _ = env.step(action)
        if np.all(terminated | truncated):
            break
    env.close()
    return np.stack(played)


def actions_hash(played: np.ndarray) -> str:
    """The SHA-256 of the rounds' action bytes (the lock's exact, informational check)."""
    digest = hashlib.sha256()
    for action in played:
        digest.update(np.ascontiguousarray(action).tobytes())
    return digest.hexdigest()


def load_reference() -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``({entry: actions}, {entry: hash})`` from ``tests/data``."""
    arrays = load(REFERENCE) if REFERENCE.exists() else {}
    hashes = json.loads(HASHES.read_text()) if HASHES.exists() else {}
    return arrays, hashes


def update(selected: list[str]) -> None:
    """Re-record the named learners (with their ``@inf`` entries), or every entry."""
    arrays, hashes = load_reference()
    every = entries()
    names = {e.partition("@")[0] for e in every}
    unknown = sorted(set(selected) - names - set(every))
    if unknown:
        raise SystemExit(f"unknown learners {unknown}; known: {sorted(names)}")
    chosen = [e for e in every if not selected or e in selected or e.partition("@")[0] in selected]
    for entry in chosen:
        played = actions(entry)
        arrays[entry], hashes[entry] = played, actions_hash(played)
        print(f"recorded {entry}", file=sys.stderr)
    save(REFERENCE, arrays)
    HASHES.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


def check() -> int:
    """Compare every entry with the reference and print what differs; 1 if anything does."""
    arrays, hashes = load_reference()
    failed = 0
    for entry in entries():
        if entry not in arrays:
            print(f"{entry}: no reference")
            continue
        played = actions(entry)
        problems = compare({"actions": played}, {"actions": arrays[entry]})
        exact = "bytes identical" if actions_hash(played) == hashes.get(entry) else "bytes differ"
        print(f"{entry}: {'OK' if not problems else 'DIFFERS'} ({exact})")
        for line in problems:
            print(f"    {line}")
        failed |= bool(problems)
    return int(failed)


def action_hash(name: str, epsilon: float = 1.0) -> str:
    """The exact hash of ``name``'s actions at epsilon 1 or inf (the lock's earlier interface)."""
    if epsilon not in (1.0, float("inf")):
        raise ValueError(f"epsilon must be 1 or inf (the locked levels), got {epsilon}")
    return actions_hash(actions(name if epsilon == 1.0 else f"{name}@inf"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--update",
        nargs="*",
        metavar="LEARNER",
        help="re-record these learners (all when none given)",
    )
    args = parser.parse_args()
    if args.update is None:
        sys.exit(check())
    update(args.update)
