"""Action hashes of every registered learner on a small seeded game (a behaviour lock).

``python tests/_learner_lock.py OUT.json`` writes ``{learner: sha256}``; the reference in
tests/data/learner_hashes.json was written at revision 1e7bc86 (before the refactors of the
environment parameters, the citations and the per-run-epsilon speed-ups), and
tests/test_learner_lock.py checks that HEAD plays exactly the same actions. The script uses
only the public API that both revisions share, so it can be run on either.
"""

from __future__ import annotations

import hashlib
import json
import sys

import gymnasium as gym
import numpy as np

import agents
import dp_experts_env  # noqa: F401 - registers the ids

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


def action_hash(name: str, epsilon: float = 1.0) -> str:
    """sha256 of the learner's actions (B = 3 runs, env seed 7, learner seed 11).

    Private learners play at ``epsilon`` (1 by default; ``inf`` is the noiseless limit).
    """
    spec = agents.spec(name)
    env_id, params = GAMES[spec.feedback]
    env = gym.make_vec(env_id, num_envs=RUNS, vectorization_mode="vector_entry_point", **params)
    extra = {"epsilon": epsilon} if spec.private else {}
    agent = agents.make(name, env=env, seed=11, **extra)
    digest = hashlib.sha256()
    obs, _ = env.reset(seed=7)
    while True:
        action = np.asarray(agent.act(obs))
        digest.update(np.ascontiguousarray(action).tobytes())
        obs, _, terminated, truncated, _ = env.step(action)
        if np.all(terminated | truncated):
            break
    env.close()
    return digest.hexdigest()


def learner_hashes() -> dict[str, str]:
    """``{learner: hash}`` at epsilon 1 and ``{learner@inf: hash}`` for the private learners at
    epsilon = inf, for every registered learner except :data:`SKIP`."""
    found = {}
    for spec in sorted(agents.available(), key=lambda a: a["name"]):
        name = spec["name"]
        if name in SKIP:
            continue
        found[name] = action_hash(name)
        if spec["private"]:
            found[f"{name}@inf"] = action_hash(name, float("inf"))
    return found


if __name__ == "__main__":
    with open(sys.argv[1], "w") as handle:
        json.dump(learner_hashes(), handle, indent=1, sort_keys=True)
