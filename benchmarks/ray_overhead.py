"""CPU of the Ray backend against the serial backend on the default comparison (issue 40 item 2).

The default grid (``default_grid``: T = 10^4 and 10 seeds, what ``dp-experts compare`` plays;
``--quick`` T = 2,000, ``--smoke`` T = 50 and 2 seeds on 2 CPUs) is played, on this machine:
``serial`` (in this process, ``time.process_time``, after a first serial run that pays the
process's imports and calibrations), then on a local Ray instance started here with ``--cpus``
logical CPUs (default 24, more than the 2-core development machine has: the planner sizes
tasks from the cluster's CPUs) three ways: with the default task floor (``ray_tasks``: the
default comparison is below one task's worth, so it plays in the calling process), as one task
holding the whole grid (the floor set just below the grid's estimate) and with no floor
(``DP_EXPERTS_RAY_TASK_SECONDS=0``: one task per CPU, the planner before the floor). Ray's CPU
is this process plus every process descended from it (the GCS, the raylet, the workers), read
from ``/proc/<pid>/stat`` before Ray shuts down, so it counts Ray's own processes, the
workers' imports and the rows travelling back. Ray's start (``ray.init`` and a one-cell
warm-up grid played as tasks, which starts workers) is reported apart from the grid. Rows must
be identical to serial (checked). Linux only (``/proc``).

Transport: what one unit's results cost to send back, as Ray sends them (pickle) -- the rows
(one dict per seed and round, what the backends shipped before) against the per-run columns of
arrays shipped now (:func:`dp_experts_env.evaluation.columns.by_seed`): bytes and CPU to pickle
and unpickle, for the first unit of the grid played in one process.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import parse_args, write_json

_TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """CPU seconds (user + system, own and waited-for children) of ``root``'s descendants."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = sum(int(f) for f in fields[11:15]) / _TICK
    total = 0.0
    for pid in cpu:
        p = pid
        while p in parents and p not in (0, 1):
            p = parents[p]
            if p == root:
                total += cpu[pid]
                break
    return total


def _cpu() -> float:
    return time.process_time() + _tree_cpu(os.getpid())


def _transport(grid: Any) -> dict[str, float]:
    """Pickled bytes and pickle + unpickle CPU of one unit's results: rows vs columns."""
    from dp_experts_env.evaluation.backends import plan_units
    from dp_experts_env.evaluation.columns import by_seed
    from dp_experts_env.evaluation.episode import run_cells

    unit = plan_units(grid.cells(), 1)[0]
    rows = run_cells(unit)
    columns = [(cell, by_seed(r)) for cell, r in rows]
    out: dict[str, float] = {"transport_rows": float(sum(len(r) for _, r in rows))}
    for name, payload in (("rows", rows), ("columns", columns)):
        blob = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        start, repeats = time.process_time(), 5
        for _ in range(repeats):
            pickle.loads(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        out[f"transport_{name}_bytes"] = float(len(blob))
        out[f"transport_{name}_cpu_seconds"] = (time.process_time() - start) / repeats
    start = time.process_time()
    [(cell, by_seed(r)) for cell, r in rows]
    out["transport_to_columns_cpu_seconds"] = time.process_time() - start
    return out


def main(argv: list[str] | None = None) -> None:
    def extra(parser) -> None:
        parser.add_argument("--cpus", type=int, default=24, help="the Ray instance's CPUs")

    args = parse_args(__doc__ or "", argv, extra)
    import pandas as pd
    import ray

    from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, default_grid, run_grid
    from dp_experts_env.evaluation.backends import RAY_TASK_SECONDS, estimate_seconds, ray_tasks

    horizon, seeds, cpus = 10_000, 10, args.cpus
    if args.quick:
        horizon = 2_000
    if args.smoke:
        horizon, seeds, cpus = 50, 2, 2
    grid = default_grid(horizon=horizon, seeds=seeds)
    n_cells = len(grid.cells())
    result: dict[str, Any] = {"horizon": horizon, "seeds": seeds, "n_cells": n_cells}
    with tempfile.TemporaryDirectory() as tmp:
        # Pay this process's first-time costs (imports, calibrations, fingerprints) first.
        run_grid(grid, Path(tmp) / "s0", backend="serial", progress=False, report=False)
        start = time.process_time()
        serial = run_grid(grid, Path(tmp) / "s", backend="serial", progress=False, report=False)
        serial_cpu = time.process_time() - start
        start = _cpu()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        try:
            warm = Grid(
                agents=[AgentEntry("hedge")],
                envs=[EnvEntry("DPExperts-Shift-v0", {"horizon": 20, "n_experts": 3})],
                n_seeds=2,
            )
            os.environ["DP_EXPERTS_RAY_TASK_SECONDS"] = "0"  # start the workers
            try:
                run_grid(warm, Path(tmp) / "w", backend="ray", progress=False, report=False)
            finally:
                os.environ.pop("DP_EXPERTS_RAY_TASK_SECONDS", None)
            startup = _cpu() - start
            cpu: dict[str, float] = {}
            estimate = estimate_seconds(grid.cells())
            # The default (below one task's floor: this process plays it), one task holding
            # the whole grid (a floor just below its estimate), no floor (a task per CPU).
            one = repr(0.999 * estimate)
            variants = (("ray", None), ("ray_one_task", one), ("ray_no_floor", "0"))
            for name, floor in variants:
                if floor is not None:
                    os.environ["DP_EXPERTS_RAY_TASK_SECONDS"] = floor
                try:
                    below = estimate < (RAY_TASK_SECONDS if floor is None else float(floor))
                    result[f"{name}_tasks"] = 0 if below else len(ray_tasks(grid.cells(), cpus))
                    start = _cpu()
                    remote = run_grid(
                        grid, Path(tmp) / name, backend="ray", progress=False, report=False
                    )
                    cpu[name] = _cpu() - start
                finally:
                    os.environ.pop("DP_EXPERTS_RAY_TASK_SECONDS", None)
                pd.testing.assert_frame_equal(serial, remote)
        finally:
            ray.shutdown()
    result.update(
        {
            "ray_cpus": cpus,
            "serial_cpu_seconds": serial_cpu,
            "ray_cpu_seconds": cpu["ray"],
            "ray_one_task_cpu_seconds": cpu["ray_one_task"],
            "ray_no_floor_cpu_seconds": cpu["ray_no_floor"],
            "ray_startup_cpu_seconds": startup,
            "overhead_per_cell_seconds": (cpu["ray"] - serial_cpu) / n_cells,
            "estimated_seconds": estimate,
            "ray_over_serial": cpu["ray"] / serial_cpu,
            "ray_one_task_over_serial": cpu["ray_one_task"] / serial_cpu,
            "ray_no_floor_over_serial": cpu["ray_no_floor"] / serial_cpu,
            "rows_identical": True,
            **_transport(grid),
        }
    )
    path = write_json("ray_overhead", result, args.out)
    print(
        _common.table(
            [{k: v for k, v in result.items() if isinstance(v, (int, float))}],
            [k for k, v in result.items() if isinstance(v, (int, float)) and k != "rows_identical"],
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
