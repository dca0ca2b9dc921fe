"""Helpers shared by the benchmark scripts: time-boxed rate measurement, tables, JSON output.

Not a test module: nothing here asserts on time. Every script writes its numbers to
``benchmarks/results/<name>.json`` (git-ignored) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The flags every script takes: --quick, --smoke, --budget, --out."""
    parser = argparse.ArgumentParser(description=description)
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
    """Call ``step`` repeatedly for about ``budget`` seconds (after one warm-up call).

    Returns:
        (calls per second, calls timed, seconds elapsed).
    """
    step()  # warm-up: first-call allocations and caches are not what we measure
    calls = 0
    start = time.perf_counter()
    while True:
        step()
        calls += 1
        elapsed = time.perf_counter() - start
        if (elapsed >= budget and calls >= min_calls) or (max_calls and calls >= max_calls):
            return calls / elapsed, calls, elapsed


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in load],
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
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
