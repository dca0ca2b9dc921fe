"""CPU per round of bandit episodes: learners' ``play_bandit_block`` against ``act`` per round.

Both ways play the episode in blocks (``episode.uses_blocks``: the env fetches K rounds and
charges them at once); they differ only in how the learner chooses the block's actions: its
``play_bandit_block`` (the bandit block protocol) or, with the method hidden, K calls of ``act``
(the block path before the protocol). Same seeds, alternated in one process; the curves are
checked byte-identical; the table reports the median CPU microseconds per round (all B runs of the
batch together, env included) and their ratio.
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

# (env id, learner, its parameters, B); the parameters are the reproduce claims' where they use
# the learner (private-batched-exp4 with Alg. 2's release in frpab-advice-batched-exp4-vs-T).
CASES = [
    ("DPExperts-BanditAdvice-v0", "uniform", {}, 16),
    ("DPExperts-BanditAdvice-v0", "private-batched-exp4", {"release": "estimates"}, 16),
    ("DPExperts-BanditAdvice-v0", "private-bandit-over-experts", {}, 16),
    ("DPExperts-Bandit-v0", "uniform", {}, 8),
    ("DPExperts-Bandit-v0", "private-batched-bandit", {}, 8),
]


def _episode(env_id: str, name: str, params: dict, runs: int, horizon: int, block: bool):
    """CPU seconds of one episode, and its curves."""
    env = gym.make_vec(env_id, num_envs=runs, vectorization_mode="vector_entry_point",
                       horizon=horizon)  # fmt: skip
    if name != "uniform":
        params = {"epsilon": 1.0, **params}
    agent = agents.make(name, env=env, seed=list(range(runs)), **params)
    rounds = np.unique(np.geomspace(1, horizon, 20).astype(np.int64))
    cls: Any = type(agent)
    own = cls.__dict__.get("play_bandit_block")
    if not block:
        cls.play_bandit_block = None  # hidden: the episode calls act K times
    try:
        assert episode.uses_blocks(env)
        start = time.process_time()
        curves = episode.play_shared(env, [agent], list(range(runs)), rounds)
        return time.process_time() - start, curves
    finally:
        if own is None:
            if "play_bandit_block" in cls.__dict__:
                del cls.play_bandit_block
        else:
            cls.play_bandit_block = own


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv)
    horizon = 60 if args.smoke else 2000 if args.quick else 8000
    reps = 1 if args.smoke else 5
    cases = CASES[:2] if args.smoke else CASES
    rows = []
    for env_id, name, params, runs in cases:
        _episode(env_id, name, params, runs, horizon, True)  # warm-up: kernels, caches
        before, after, identical = [], [], True
        for rep in range(reps):
            order = (False, True) if rep % 2 == 0 else (True, False)
            got = {}
            for block in order:
                seconds, got[block] = _episode(env_id, name, params, runs, horizon, block)
                (after if block else before).append(seconds * 1e6 / horizon)
            identical &= got[True].keys() == got[False].keys() and all(
                got[True][k].tobytes() == got[False][k].tobytes() for k in got[True]
            )
        rows.append({
            "env": env_id, "learner": name, "B": runs,
            "act_us": median(before), "play_block_us": median(after),
            "speedup": median([b / a for b, a in zip(before, after, strict=True)]),
            "identical": identical,
        })  # fmt: skip
    path = write_json("bandit_play_block", {"rows": rows, "horizon": horizon, "reps": reps},
                      args.out)  # fmt: skip
    print(table(rows, ["env", "learner", "B", "act_us", "play_block_us", "speedup",
                       "identical"]))  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
