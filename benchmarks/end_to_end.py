"""End to end: wall time and peak memory of the default compare grid.

Runs ``dp_experts_env.evaluation.default_grid()`` (DPExperts-Shift-v0, N = 10, T = 10^4, S = 4,
every baseline and private full-information learner, epsilon in {0.5, 1, 2}, 10 seeds) through
``run_grid`` with the serial backend (one process: the machine has 2 shared cores) into a
temporary folder, and reports the wall time in total and per learner (summed over its cells),
the process's peak RSS (``resource.getrusage``) and, with ``--tracemalloc``, the peak of
Python-allocated memory (tracemalloc slows the run, so it is off by default).
``--quick`` shrinks the grid (T = 1000, 3 seeds). Run ``python benchmarks/end_to_end.py [--quick]``.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, table, write_json  # noqa: E402

from dp_experts_env.evaluation import (  # noqa: E402
    backends,  # noqa: E402
    default_grid,
    run_grid,
)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main(argv: list[str] | None = None) -> dict:
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--tracemalloc", action="store_true")
    known, rest = extra.parse_known_args(argv if argv is not None else sys.argv[1:])
    args = parse_args(__doc__.splitlines()[0], rest)
    if args.smoke:
        settings = {"horizon": 100, "seeds": 2, "epsilons": (1.0,), "agents": ["hedge"]}
    elif args.quick:
        settings = {"horizon": 1000, "seeds": 3}
    else:
        settings = {}
    grid = default_grid(**settings)
    cells = grid.cells()

    rss_before = _rss_mb()
    if known.tracemalloc:
        tracemalloc.start()
    per_cell = []
    original = backends.run_one

    def timed_run_one(cell):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        rows = original(cell)
        per_cell.append(
            {
                "agent": cell.agent.display,
                "epsilon": cell.epsilon,
                "seconds": time.perf_counter() - t0,
            }
        )
        return rows

    backends.run_one = timed_run_one  # wraps the serial backend's call, nothing else changes
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            run_grid(grid, tmp, backend="serial", progress=False)
            sweep_seconds = time.perf_counter() - start
    finally:
        backends.run_one = original
    cells_seconds = sum(r["seconds"] for r in per_cell)
    traced_peak = None
    if known.tracemalloc:
        traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    rss_peak = _rss_mb()

    by_agent: dict[str, float] = {}
    for row in per_cell:
        by_agent[row["agent"]] = by_agent.get(row["agent"], 0.0) + row["seconds"]
    agent_rows = sorted(
        ({"agent": a, "seconds": s, "share": s / cells_seconds} for a, s in by_agent.items()),
        key=lambda r: -r["seconds"],
    )
    print(table(agent_rows, ["agent", "seconds", "share"]))
    print(
        f"\n{len(cells)} cells, {grid.n_seeds} seeds each: cells {cells_seconds:.1f} s; "
        f"full run_grid (cells + store + summary) {sweep_seconds:.1f} s"
    )
    print(f"peak RSS {rss_peak:.0f} MB (before the grid: {rss_before:.0f} MB)")
    if traced_peak is not None:
        print(f"tracemalloc peak {traced_peak:.1f} MB")
    payload = {
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
        "n_cells": len(cells),
        "n_seeds": grid.n_seeds,
        "cells_seconds": cells_seconds,
        "run_grid_seconds": sweep_seconds,
        "peak_rss_mb": rss_peak,
        "rss_before_mb": rss_before,
        "tracemalloc_peak_mb": traced_peak,
        "per_agent": agent_rows,
        "per_cell": per_cell,
    }
    path = write_json("end_to_end", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
