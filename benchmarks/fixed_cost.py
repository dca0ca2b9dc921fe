"""The default comparison's fixed cost against the floor its stack sets, in CPU time.

``dp-experts compare --horizon 10`` plays the default grid (50 cells, 10 seeds) for ten rounds,
so what it costs is the command's fixed cost: the interpreter, imports, the grid's bookkeeping,
the tables and the two default figures. This script splits that cost into what the declared
stack charges before any of the suite's own work and what the suite adds, each phase in its own
child process (``os.wait4`` CPU), the phases alternated ``--reps`` times in a rotating order and
reported as medians:

* ``interpreter`` -- ``python -c pass``;
* ``numpy_gymnasium`` -- importing numpy and gymnasium (what every env needs);
* ``plotting_stack`` -- also matplotlib's ``Figure`` and its Agg canvas (what a PNG needs);
* ``stack`` -- also pandas (the results tables);
* ``suite_imports`` -- the modules the command imports (cli, evaluation, plots, the learners);
* ``figures_drawn`` -- the two default figures, drawn and saved as PNG from a results folder
  the command wrote once at the start: the child's ``process_time`` around
  :func:`~dp_experts_env.evaluation.plots.make_figures` only (imports excluded);
* ``command`` -- the whole command (fresh results folder each time).

``floor = stack + figures_drawn`` is what any ``compare`` that draws these two figures with
matplotlib and keeps its tables in pandas pays before the suite's own imports, grid and tables;
``floor_without_pandas = plotting_stack + figures_drawn``. The issue's target for the fixed
cost was 1.5 s; the floor says whether a target is reachable at all with this stack and these
figures. Bytecode is cached for the children (see benchmarks/default_vs_fused.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import child_env, median, parse_args, target_line, write_json

TARGET_SECONDS = 1.5

_IMPORTS = {
    "interpreter": "pass",
    "numpy_gymnasium": "import numpy, gymnasium",
    "plotting_stack": (
        "import numpy, gymnasium, matplotlib.figure, matplotlib.backends.backend_agg"
    ),
    "stack": (
        "import numpy, gymnasium, pandas, matplotlib.figure, matplotlib.backends.backend_agg"
    ),
    "suite_imports": (
        "import agents, dp_experts_env.cli, dp_experts_env.evaluation.sweep, "
        "dp_experts_env.evaluation.report, dp_experts_env.evaluation.plots"
    ),
}

_FIGURES = """
import json, sys, tempfile, time
from dp_experts_env.evaluation.plots import make_figures
from dp_experts_env.evaluation.store import load_results
frame = load_results(sys.argv[1])
with tempfile.TemporaryDirectory() as out:
    start = time.process_time()
    paths = make_figures(frame, out)
    print(json.dumps({"seconds": time.process_time() - start, "figures": len(paths)}))
"""


def _env() -> dict[str, str]:
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    env.pop("DP_EXPERTS_NO_JIT", None)
    env["MPLBACKEND"] = "Agg"
    return env


def _child(args: list[str]) -> tuple[float, str]:
    """CPU seconds of a child Python process (and its workers) and its standard output."""
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(
            [sys.executable, *args], env=_env(), stdout=stdout, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(proc.stderr.read().decode()[-2000:] if proc.stderr else "failed")
        stdout.seek(0)
        return usage.ru_utime + usage.ru_stime, stdout.read().decode()


def _command(out: Path) -> float:
    cmd = ["-m", "dp_experts_env", "compare", "--no-progress", "--horizon", "10"]
    return _child([*cmd, "--out", str(out)])[0]


def _figures(results: Path) -> float:
    return float(json.loads(_child(["-c", _FIGURES, str(results)])[1])["seconds"])


def measure(reps: int, *, smoke: bool = False) -> dict[str, Any]:
    """Median CPU seconds of every phase over ``reps`` rotated rounds, plus the floors.

    ``smoke``: the command's one sample is the first run's (bytecode not yet warm), not a
    second run: the smoke test checks the script runs, not its numbers.
    """
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder) / "results"
        first = _command(results)  # writes the folder the figures are drawn from (warms bytecode)
        phases: dict[str, Any] = {
            name: (lambda code=code: _child(["-c", code])[0]) for name, code in _IMPORTS.items()
        }
        phases["figures_drawn"] = lambda: _figures(results)
        counter = iter(range(10**6))
        phases["command"] = lambda: _command(Path(folder) / f"run{next(counter)}")
        if smoke:
            del phases["command"]
        samples: dict[str, list[float]] = {name: [] for name in phases}
        names = list(phases)
        for r in range(reps):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(phases[name]())
        if smoke:
            samples["command"] = [first]
    medians = {name: median(values) for name, values in samples.items()}
    floor = medians["stack"] + medians["figures_drawn"]
    return {
        "reps": reps,
        "cpu_seconds": samples,
        "median_cpu_seconds": medians,
        "floor": floor,
        "floor_without_pandas": medians["plotting_stack"] + medians["figures_drawn"],
        "suite_over_floor": medians["command"] - floor,
        "target_seconds": TARGET_SECONDS,
    }


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=7, help="rotated rounds of every phase")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__ or "", argv, _flags)
    reps = 1 if args.smoke else 3 if args.quick else args.reps
    result = measure(reps, smoke=args.smoke)
    path = write_json("fixed_cost", result, args.out)
    rows = [
        {"phase": name, "median_cpu_s": value, "runs": " ".join(f"{x:.2f}" for x in runs)}
        for (name, value), runs in zip(
            result["median_cpu_seconds"].items(), result["cpu_seconds"].values(), strict=True
        )
    ]
    print(_common.table(rows, ["phase", "median_cpu_s", "runs"]))
    print(
        f"floor (stack + figures drawn) {result['floor']:.2f} s; without pandas "
        f"{result['floor_without_pandas']:.2f} s; the suite adds "
        f"{result['suite_over_floor']:.2f} s"
    )
    command = result["median_cpu_seconds"]["command"]
    print(target_line("command fixed cost", command, TARGET_SECONDS, at_least=False))
    print(target_line("floor of the stack", result["floor"], TARGET_SECONDS, at_least=False))
    print(f"wrote {path} at {time.strftime('%H:%M:%S')}")


if __name__ == "__main__":
    main()
