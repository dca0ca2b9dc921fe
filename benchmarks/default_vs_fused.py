"""The default comparison's CPU against the fused compiled loop of its arithmetic, in one process.

Three methods, interleaved (``_common.interleaved_rates``), each playing the whole default grid
(``dp-experts compare`` with no arguments: 50 cells, 10 seeds, T = 10^4) once per call:

* ``blocks`` -- the suite's cells in this process (``run_cells`` per group, serial), block play
  on (the default with numba installed);
* ``per_round`` -- the same with ``DP_EXPERTS_NO_JIT=1``: the per-round numpy loop, the suite
  before block play;
* ``fused`` -- ``fused_loop.fused_grid``, the practical limit (benchmarks/fused_loop.py).

The ratios are medians of per-round ratios of CPU time. Without ``--quick``/``--smoke`` it also
times the command itself (``python -m dp_experts_env compare --no-progress``, local backend,
figures; ``os.wait4`` CPU of the command and its workers): once with a cold kernel cache (the
numba cache files of this tree deleted first: a fresh install's first run), once on the numpy
path (``DP_EXPERTS_NO_JIT=1``), then ``--pairs`` times (default 4) alternated with an
in-process run of the fused grid -- the command's ratio to the fused limit is the median of
these pairs' ratios -- and as many times at ``--horizon 10`` (the command's fixed cost: the
grid's cells cost ~nothing there).

Python bytecode: a pip install compiles the package's ``.pyc`` files, an editable install
writes them on first import; a shell with ``PYTHONDONTWRITEBYTECODE`` set (as on the machine
these numbers were first taken on) makes every process compile the project's ~100 modules from
source (~0.4 s of CPU). The command runs are timed as installed, with bytecode cached (the
variable removed from the child's environment after one warm-up run writes the files);
``--no-bytecode`` keeps the variable as the shell has it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import _common
from _common import child_env, interleaved_rates, median, paired_ratio, parse_args, write_json
from fused_loop import default_cells, fused_grid


def _suite(horizon: int, seeds: int) -> Any:
    from dp_experts_env.evaluation.defaults import default_grid
    from dp_experts_env.evaluation.episode import group_key, run_cells

    cells = default_grid(horizon=horizon, seeds=seeds).cells()
    groups: dict[Any, list] = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)

    def run() -> None:
        for group in groups.values():
            run_cells(group)

    return run


def _numpy_path(step: Any) -> Any:
    def run() -> None:
        os.environ["DP_EXPERTS_NO_JIT"] = "1"
        try:
            step()
        finally:
            os.environ.pop("DP_EXPERTS_NO_JIT", None)

    return run


def _command_cpu(no_jit: bool, *extra: str, bytecode: bool = True) -> float:
    """CPU seconds (``os.wait4``: the command and its workers) of one ``compare`` run."""
    env = child_env()
    env.pop("DP_EXPERTS_NO_JIT", None)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    if no_jit:
        env["DP_EXPERTS_NO_JIT"] = "1"
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "dp_experts_env", "compare", "--no-progress", *extra]
        cmd += ["--out", out]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise RuntimeError(proc.stderr.read().decode()[-2000:] if proc.stderr else "failed")
    return usage.ru_utime + usage.ru_stime


def _clear_kernel_cache() -> int:
    """Delete this tree's numba cache files (``*.nbi``/``*.nbc``); returns how many."""
    removed = 0
    for package in ("agents", "dp_experts_env"):
        for path in (_common.ROOT / package).rglob("*.nb[ic]"):
            path.unlink()
            removed += 1
    return removed


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pairs", type=int, default=4, help="command runs alternated with the fused grid"
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as the shell sets it for the command runs",
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv, _flags)
    horizon, seeds, rounds = 10_000, 10, 2
    if args.quick:
        horizon, rounds = 2_000, 3
    if args.smoke:
        horizon, seeds, rounds = 100, 2, 1
    cells = default_cells()
    fused_grid(cells[:2], 50, 2)  # compile the fused loop (or load it from the cache)
    suite = _suite(horizon, seeds)
    steps = {
        "blocks": suite,
        "per_round": _numpy_path(suite),
        "fused": lambda: fused_grid(cells, horizon, seeds),
    }
    rates = interleaved_rates(steps, budget=0.0, rounds=rounds, min_calls=1)
    cpu = {name: [1.0 / r for r in values] for name, values in rates.items()}
    result: dict[str, Any] = {
        "horizon": horizon,
        "seeds": seeds,
        "n_cells": len(cells),
        "run_rounds": len(cells) * seeds * horizon,
        "cpu_seconds": {name: median(v) for name, v in cpu.items()},
        "blocks_over_fused": paired_ratio(rates["fused"], rates["blocks"]),
        "per_round_over_fused": paired_ratio(rates["fused"], rates["per_round"]),
        "per_round_over_blocks": paired_ratio(rates["blocks"], rates["per_round"]),
        "ns_per_run_round": {
            name: median(v) / (len(cells) * seeds * horizon) * 1e9 for name, v in cpu.items()
        },
    }
    if not (args.quick or args.smoke):
        bytecode = not args.no_bytecode
        _clear_kernel_cache()
        result["command_cold_cache_cpu_seconds"] = _command_cpu(False, bytecode=bytecode)
        result["bytecode_cached"] = bytecode
        result["command_per_round_cpu_seconds"] = _command_cpu(True, bytecode=bytecode)
        command: list[float] = []
        fused_cpu: list[float] = []
        fixed: list[float] = []
        for _ in range(args.pairs):
            start = time.process_time()
            fused_grid(cells, horizon, seeds)
            fused_cpu.append(time.process_time() - start)
            command.append(_command_cpu(False, bytecode=bytecode))
            fixed.append(_command_cpu(False, "--horizon", "10", bytecode=bytecode))
        result["command_cpu_seconds"] = command
        result["command_fused_cpu_seconds"] = fused_cpu
        result["command_over_fused"] = median(
            [c / f for c, f in zip(command, fused_cpu, strict=True)]
        )
        result["fixed_cost_cpu_seconds"] = fixed
        result["fixed_cost_median"] = median(fixed)
    path = write_json("default_vs_fused", result, args.out)
    print(
        _common.table(
            [
                {"method": k, "cpu_s": v, "ns/run-round": result["ns_per_run_round"][k]}
                for k, v in result["cpu_seconds"].items()
            ],
            ["method", "cpu_s", "ns/run-round"],
        )
    )
    print(
        f"in-process cells / fused: blocks {result['blocks_over_fused']:.2f}x, per-round "
        f"{result['per_round_over_fused']:.2f}x (blocks are {result['per_round_over_blocks']:.2f}x"
        " faster)"
    )
    if "command_over_fused" in result:
        pairs = ", ".join(
            f"{c:.2f}/{f:.2f}"
            for c, f in zip(
                result["command_cpu_seconds"], result["command_fused_cpu_seconds"], strict=True
            )
        )
        print(
            f"command CPU / fused CPU, alternated pairs: {pairs}; median ratio "
            f"{result['command_over_fused']:.2f}x (target <= 3x); numpy path "
            f"{result['command_per_round_cpu_seconds']:.2f} s; cold kernel cache "
            f"{result['command_cold_cache_cpu_seconds']:.2f} s; bytecode cached: "
            f"{result['bytecode_cached']}"
        )
        print(
            "fixed cost (--horizon 10): "
            + ", ".join(f"{x:.2f}" for x in result["fixed_cost_cpu_seconds"])
            + f" s, median {result['fixed_cost_median']:.2f} s (target <= 1.5 s)"
        )
    print(f"wrote {path} at {time.strftime('%H:%M:%S')}")


if __name__ == "__main__":
    main()
