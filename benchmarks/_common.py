"""Helpers shared by the benchmark scripts: CPU-time rates measured interleaved, tables, JSON.

Not a test module: nothing here asserts on time. Every script writes its numbers to
``benchmarks/results/<name>.json`` (git-ignored) and prints a table.

How things are timed (the machine is shared, so wall-clock numbers move with other people's
jobs): every rate is CPU time of this process (``time.process_time``), and methods that are
compared run *interleaved* -- a short slice of each in turn, repeated, in a rotating order --
so a load change hits all of them alike. A ratio is the median of the per-slice ratios of the
same round, never a ratio of numbers taken minutes apart.

Importing this module puts the repository root first on ``sys.path``: a script measures the
code of the tree it lives in (a worktree or an older checkout), not whatever copy of the
package is installed. Child processes get the same root through :func:`child_env`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def child_env(root: Path = ROOT) -> dict[str, str]:
    """Environment for a child Python process that must import the code under ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    return env


def parse_args(
    description: str,
    argv: Sequence[str] | None = None,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The flags every script takes: --quick, --smoke, --budget, --out (``extra`` adds more)."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument("--quick", action="store_true", help="a smaller sweep (about a minute)")
    parser.add_argument(
        "--smoke", action="store_true", help="the smallest configuration only (for the smoke test)"
    )
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds per measurement (default per script)"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    return parser.parse_args(argv)


def rate(
    step: Callable[[], Any], budget: float, *, min_calls: int = 3, max_calls: int | None = None
) -> tuple[float, int, float]:
    """Call ``step`` repeatedly for about ``budget`` CPU seconds (after one warm-up call).

    Returns:
        (calls per CPU second, calls timed, CPU seconds used).
    """
    step()  # warm-up: first-call allocations and caches are not what we measure
    calls = 0
    clock = time.process_time
    start = clock()
    while True:
        step()
        calls += 1
        elapsed = clock() - start
        if (elapsed >= budget and calls >= min_calls) or (max_calls and calls >= max_calls):
            return calls / max(elapsed, 1e-9), calls, elapsed


def interleaved_rates(
    steps: Mapping[str, Callable[[], Any]],
    budget: float,
    *,
    rounds: int = 5,
    min_calls: int = 3,
) -> dict[str, list[float]]:
    """CPU-time rates (calls/s) of several methods, measured in alternation.

    Each of ``rounds`` rounds gives every method a slice of ``budget / rounds`` CPU seconds, in
    an order that rotates from round to round (so no method always runs first or last). Every
    method is warmed up once before the first round.

    Returns:
        name -> the per-round rates (same order as the rounds, so ratios can be paired).
    """
    names = list(steps)
    for name in names:
        steps[name]()
    out: dict[str, list[float]] = {name: [] for name in names}
    piece = budget / rounds
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            step = steps[name]
            calls = 0
            start = time.process_time()
            while True:
                step()
                calls += 1
                elapsed = time.process_time() - start
                if elapsed >= piece and calls >= min_calls:
                    break
            out[name].append(calls / max(elapsed, 1e-9))
    return out


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float:
    """Median over rounds of ``numerator[r] / denominator[r]`` (rates measured side by side)."""
    return float(statistics.median(a / b for a, b in zip(numerator, denominator, strict=True)))


def median(values: Sequence[float]) -> float:
    """The median of ``values`` (a float)."""
    return float(statistics.median(values))


def machine() -> dict[str, Any]:
    """What the numbers were measured on (and that rates are CPU time, interleaved)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in load],
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "clock": "process CPU time (time.process_time); compared methods interleaved",
        "root": str(ROOT),
    }


def write_json(name: str, payload: dict[str, Any], out: Path | None = None) -> Path:
    """Write ``payload`` (plus machine info) to ``benchmarks/results/<name>.json``."""
    path = out if out is not None else RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2, default=_jsonable) + "\n")
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain-text table of ``rows`` restricted to ``columns``."""
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}"
    return str(value)


def target_line(label: str, measured: float, target: float, *, at_least: bool = True) -> str:
    """'label: measured vs target -> met / MISSED by x' (x = the factor short)."""
    met = measured >= target if at_least else measured <= target
    if met:
        verdict = "met"
    else:
        factor = target / measured if at_least else measured / target
        verdict = f"MISSED by {factor:.2f}x"
    sign = ">=" if at_least else "<="
    return f"{label}: {measured:,.3g} (target {sign} {target:,.3g}) -> {verdict}"


def target_record(measured: float, target: float, *, at_least: bool = True) -> dict[str, Any]:
    """JSON form of a target check."""
    met = measured >= target if at_least else measured <= target
    short = None if met else (target / measured if at_least else measured / target)
    return {
        "measured": measured,
        "target": target,
        "at_least": at_least,
        "met": met,
        "missed_by_factor": short,
    }
