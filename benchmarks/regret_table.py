"""CPU time per table entry of the exact S-switch regret: numpy, compiled per round, blocks.

For each (B, S, N) the three update paths of ``RegretTracker`` run interleaved on the same
random losses (K = 8 rounds per call): ``numpy`` (``DP_EXPERTS_NO_JIT=1``), ``kernel`` (the
compiled per-round update, forced at every size) and ``block`` (``update_block``, K rounds per
call). Reported in nanoseconds per table entry and round, ``streams x (S + 1) x N`` entries.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from _common import interleaved_rates, median, parse_args, table, write_json

from dp_experts_env import _regret_kernel
from dp_experts_env.regret import RegretTracker

SIZES = [(16, 64, 1000), (1, 1024, 10_000), (1024, 4, 100), (10, 4, 10)]
ROUNDS = 8


def _step(mode: str, b: int, s: int, n: int) -> Any:
    rng = np.random.default_rng(0)
    losses, charged = rng.random((ROUNDS, b, n)), rng.random((ROUNDS, b))
    env = {"numpy": "1", "kernel": "0", "block": "0"}[mode]
    os.environ["DP_EXPERTS_NO_JIT"] = env
    _regret_kernel.MIN_ELEMENTS = 1 if mode == "kernel" else 1 << 62
    tracker = RegretTracker(b, n, s, 10**9)

    def run() -> None:
        os.environ["DP_EXPERTS_NO_JIT"] = env
        if mode == "block":
            tracker.update_block(losses, charged)
        else:
            for k in range(ROUNDS):
                tracker.update(losses[k], charged[k])

    return run


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv)
    sizes = [(4, 2, 10)] if args.smoke else SIZES[2:] if args.quick else SIZES
    budget = args.budget or (0.05 if args.smoke else 3.0)
    rows = []
    default_min = _regret_kernel.MIN_ELEMENTS
    try:
        for b, s, n in sizes:
            steps = {mode: _step(mode, b, s, n) for mode in ("numpy", "kernel", "block")}
            rates = interleaved_rates(steps, budget, rounds=3, min_calls=1)
            entries = ROUNDS * b * (s + 1) * n
            row = {"B": b, "S": s, "N": n}
            for mode, values in rates.items():
                row[f"{mode}_ns_per_entry"] = 1e9 / (median(values) * entries)
            rows.append(row)
    finally:
        _regret_kernel.MIN_ELEMENTS = default_min
        os.environ.pop("DP_EXPERTS_NO_JIT", None)
    path = write_json("regret_table", {"rows": rows, "rounds_per_call": ROUNDS}, args.out)
    print(table(rows, ["B", "S", "N", "numpy_ns_per_entry", "kernel_ns_per_entry",
                       "block_ns_per_entry"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
