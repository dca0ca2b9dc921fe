"""CPU per run-round of the bandit learners' compiled block kernel against K calls of ``act``.

``play_bandit_block`` (the bandit block protocol, :mod:`agents._bandit_kernels`) plays a block
of K rounds of ldp-exp4, exp4 or exp3 in one compiled call. This script plays the same synthetic
game (one-hot or identity advice, uniform losses, S = 8 loss streams) both ways in one process,
alternating per repetition: per round = the protocol's reference (``act`` on each round's
observation, what the episode loop does without the method), blocks = ``play_bandit_block``.
It checks the actions are identical and reports the median CPU nanoseconds per run-round and
the per-repetition ratio. The kernels are compiled (or loaded from numba's cache) in a warm-up.
"""

from __future__ import annotations

import time

import numpy as np
from _common import median, parse_args, table, write_json

import agents
from agents import _bandit_kernels as kernels

STREAMS = 8
# (learner, advice, N, K_arms, B, block length K, constructor arguments)
CASES = [
    ("ldp-exp4", "one-hot", 10, 5, 64, 5, {"epsilon": 1.0}),
    ("ldp-exp4", "one-hot", 10, 5, 64, 100, {"epsilon": 1.0}),
    # the episode loop's block length for this shape: BLOCK_ELEMENTS // (B N K_arms)
    ("ldp-exp4", "one-hot", 10, 5, 64, 327, {"epsilon": 1.0}),
    ("ldp-exp4", "identity", 5, 5, 64, 100, {"epsilon": 1.0}),
    ("exp4", "one-hot", 10, 5, 64, 100, {}),
    ("exp3", "identity", 5, 5, 64, 100, {}),
]


def _game(advice: str, n: int, arms: int, runs: int, horizon: int):
    rng = np.random.default_rng(0)
    losses = rng.random((horizon, STREAMS, arms))
    if advice == "identity":
        eye = np.broadcast_to(np.eye(n), (runs, n, n))
        return losses, None, eye
    table_ = np.zeros((horizon, runs, n, arms))
    pick = rng.integers(0, arms, size=(horizon, runs, n))
    np.put_along_axis(table_, pick[..., None], 1.0, axis=-1)
    return losses, table_, None


def _episode(case, horizon: int, blocks: bool) -> tuple[float, np.ndarray]:
    """CPU seconds of one episode of the learner alone, and its actions."""
    name, kind, n, arms, runs, k, kwargs = case
    losses, advice, eye = _game(kind, n, arms, runs, horizon)
    rows = np.arange(runs) % STREAMS
    agent = agents.make(name, n_experts=n, n_arms=arms, horizon=horizon, num_envs=runs,
                        seed=list(range(runs)), **kwargs)
    play = agent.play_bandit_block if blocks else (
        lambda *a: kernels.act_loop(agent, *a))
    out = np.empty((horizon, runs), dtype=np.int64)
    first = {"advice": eye if advice is None else advice[0],
             "last_action": np.zeros(runs, np.int64), "last_loss": np.zeros((runs, 1))}
    start = time.process_time()
    for t in range(0, horizon, k):
        chosen = play(first, None if advice is None else advice[t : t + k],
                      losses[t : t + k], rows)
        out[t : t + k] = chosen
        last, end = chosen[-1], t + len(chosen)
        first = {"advice": eye if advice is None else advice[min(end, horizon - 1)],
                 "last_action": last.copy(), "last_loss": losses[end - 1][rows, last][:, None]}
    return time.process_time() - start, out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv)
    horizon = 200 if args.smoke else 1000 if args.quick else 3000
    reps = 1 if args.smoke else 5
    cases = CASES[:1] if args.smoke else CASES
    rows = []
    for case in cases:
        name, kind, n, arms, runs, k, _ = case
        _episode(case, min(horizon, 200), True)  # warm-up: kernel compiled or loaded
        before, after, identical = [], [], True
        for rep in range(reps):
            got = {}
            for blocks in ((False, True) if rep % 2 == 0 else (True, False)):
                seconds, got[blocks] = _episode(case, horizon, blocks)
                (after if blocks else before).append(seconds * 1e9 / (horizon * runs))
            identical &= got[True].tobytes() == got[False].tobytes()
        rows.append({
            "learner": name, "advice": kind, "N": n, "K_arms": arms, "B": runs, "block": k,
            "per_round_ns": median(before), "blocks_ns": median(after),
            "speedup": median([b / a for b, a in zip(before, after, strict=True)]),
            "identical": identical,
        })  # fmt: skip
    path = write_json("bandit_kernels", {"rows": rows, "horizon": horizon, "reps": reps},
                      args.out)
    print(table(rows, ["learner", "advice", "N", "K_arms", "B", "block", "per_round_ns",
                       "blocks_ns", "speedup", "identical"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
