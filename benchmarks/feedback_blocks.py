"""CPU per round of bandit and OCO episodes: the block path against the per-round path, alternated.

``play_shared`` on an oblivious bandit env (``DPExperts-BanditAdvice-v0``, ``DPExperts-Bandit-v0``)
or OCO env (``DPExperts-OCO-v0``, default family) plays blocks of rounds when the JIT is on: the
env fetches K rounds, the learner acts round by round on them, and the env charges the block and
updates the regret at once. This script plays
the same episode (same seeds) both ways in one process, alternating (per round = the loop before,
``episode.uses_blocks`` switched off for the episode; the learners' own paths are the same in
both), checks the curves are byte-identical, and reports the median CPU microseconds per round
(all B runs of the batch together) and their ratio.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
from _common import median, parse_args, table, write_json

import agents
import dp_experts_env  # noqa: F401  (registers the envs)
from dp_experts_env.evaluation import episode

CASES = [
    ("DPExperts-BanditAdvice-v0", "uniform", 16),
    ("DPExperts-BanditAdvice-v0", "ldp-exp4", 16),
    ("DPExperts-BanditAdvice-v0", "private-batched-exp4", 16),
    ("DPExperts-Bandit-v0", "uniform", 8),
    ("DPExperts-Bandit-v0", "private-batched-bandit", 8),
    ("DPExperts-OCO-v0", "ogd", 16),
    ("DPExperts-OCO-v0", "p-comw", 16),
]
NO_EPSILON = ("uniform", "ogd")


def _episode(env_id: str, name: str, runs: int, horizon: int, blocks: bool) -> tuple[float, Any]:
    """CPU seconds of one episode, and its curves."""
    real = episode.uses_blocks
    env = gym.make_vec(env_id, num_envs=runs, vectorization_mode="vector_entry_point",
                       horizon=horizon)
    params = {} if name in NO_EPSILON else {"epsilon": 1.0}
    agent = agents.make(name, env=env, seed=list(range(runs)), **params)
    rounds = np.unique(np.geomspace(1, horizon, 20).astype(np.int64))
    if not blocks:
        episode.uses_blocks = lambda env: False
    try:
        start = time.process_time()
        curves = episode.play_shared(env, [agent], list(range(runs)), rounds)
        return time.process_time() - start, curves
    finally:
        episode.uses_blocks = real


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv)
    horizon = 40 if args.smoke else 1000 if args.quick else 3000
    reps = 1 if args.smoke else 5
    cases = CASES[:1] if args.smoke else CASES
    rows = []
    for env_id, name, runs in cases:
        _episode(env_id, name, runs, horizon, True)  # warm-up: kernels loaded, caches filled
        before, after, identical = [], [], True
        for rep in range(reps):
            order = (False, True) if rep % 2 == 0 else (True, False)
            for blocks in order:
                seconds, curves = _episode(env_id, name, runs, horizon, blocks)
                (after if blocks else before).append(seconds * 1e6 / horizon)
                if blocks:
                    block_curves = curves
                else:
                    round_curves = curves
            identical &= block_curves.keys() == round_curves.keys() and all(
                block_curves[k].tobytes() == round_curves[k].tobytes() for k in block_curves
            )
        rows.append({
            "env": env_id, "learner": name, "B": runs,
            "per_round_us": median(before), "blocks_us": median(after),
            "speedup": median([b / a for b, a in zip(before, after, strict=True)]),
            "identical": identical,
        })  # fmt: skip
    path = write_json("feedback_blocks", {"rows": rows, "horizon": horizon, "reps": reps}, args.out)
    print(table(rows, ["env", "learner", "B", "per_round_us", "blocks_us", "speedup",
                       "identical"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
