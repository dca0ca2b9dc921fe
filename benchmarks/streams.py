"""CPU time of the batched random streams: numpy Generators against the compiled PCG64 array.

For each batch size B, the two forms of ``batch_rng.seeded_streams`` run interleaved: ``build``
makes the B streams (the seed-sequence hash, which both forms share, then one
``Generator(PCG64)`` per run, or the compiled seeding loop), ``refill`` fills a (B, W) buffer
(W = BatchRNG's chunk: ``min(4096, 4M / B)`` doubles per run; a Python loop over the runs'
generators, or the compiled loop). Reported per run and per double; ``identical`` says both
forms' doubles and end states are equal bit for bit after the measurement.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from _common import interleaved_rates, median, parse_args, table, write_json

from dp_experts_env import batch_rng
from dp_experts_env._jit import jit_active

SIZES = (32, 1_000, 20_000)
STREAM = 3


def _forms(runs: int) -> dict[str, Any]:
    seeds = list(range(runs))
    return {
        "generators": lambda: batch_rng.seeded_generators(seeds, STREAM),
        "array": lambda: batch_rng.seeded_streams(seeds, STREAM),
    }


def _refill(streams: Any, width: int) -> Any:
    out = np.empty((len(streams), width))

    def run() -> None:
        batch_rng.fill_rows(streams, out, 0)

    return run


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv)
    if os.environ.get("DP_EXPERTS_NO_JIT", "0") not in ("", "0") or not jit_active():
        print("the compiled form needs the JIT (numba installed, DP_EXPERTS_NO_JIT unset)")
        write_json("streams", {"rows": [], "stream": STREAM, "skipped": "no JIT"}, args.out)
        return
    sizes = SIZES[:1] if args.smoke else SIZES[:2] if args.quick else SIZES
    budget = args.budget or (0.02 if args.smoke else 1.0)
    rows = []
    for runs in sizes:
        forms = _forms(runs)
        built = {name: make() for name, make in forms.items()}
        assert isinstance(built["array"], np.ndarray), "the array form was not chosen"
        width = max(64, min(4096, (1 << 22) // runs))
        build = interleaved_rates(forms, budget, rounds=3, min_calls=1)
        refill = interleaved_rates(
            {name: _refill(s, width) for name, s in built.items()}, budget, rounds=3, min_calls=1
        )
        # Both forms have now been advanced by different numbers of refills: compare fresh ones.
        fresh = {name: make() for name, make in forms.items()}
        outs = {name: np.empty((runs, width)) for name in fresh}
        for name, streams in fresh.items():
            batch_rng.fill_rows(streams, outs[name], 0)
        identical = outs["array"].tobytes() == outs["generators"].tobytes() and (
            batch_rng.stream_states(fresh["array"]).tobytes()
            == batch_rng.stream_states(fresh["generators"]).tobytes()
        )
        row: dict[str, Any] = {"B": runs, "W": width}
        for name in forms:
            row[f"build_us_per_run_{name}"] = 1e6 / (median(build[name]) * runs)
            row[f"refill_ns_per_double_{name}"] = 1e9 / (median(refill[name]) * runs * width)
        row["build_speedup"] = row["build_us_per_run_generators"] / row["build_us_per_run_array"]
        row["refill_speedup"] = (
            row["refill_ns_per_double_generators"] / row["refill_ns_per_double_array"]
        )
        row["identical"] = identical
        rows.append(row)
    path = write_json("streams", {"rows": rows, "stream": STREAM}, args.out)
    print(
        table(
            rows,
            [
                "B",
                "W",
                "build_us_per_run_generators",
                "build_us_per_run_array",
                "build_speedup",
                "refill_ns_per_double_generators",
                "refill_ns_per_double_array",
                "refill_speedup",
                "identical",
            ],
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
