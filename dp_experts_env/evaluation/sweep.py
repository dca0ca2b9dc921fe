"""Run a grid into a results folder, resumably, and summarise it.

Folder layout::

    OUT/grid.json          the grid that was asked for
    OUT/cells/<id>.json    one file per finished cell (see store.py)
    OUT/results.csv        every row (tidy; curves at log-spaced rounds)
    OUT/summary.csv        final-round table: mean, IQM, bootstrap CI, score vs uniform
    OUT/figures/*.png|pdf  figures (see plots.py)
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.backends import execute
from dp_experts_env.evaluation.grid import Grid
from dp_experts_env.evaluation.stats import bootstrap_ci, iqm
from dp_experts_env.evaluation.store import CellStore

__all__ = ["run_grid", "summarize", "final_rows", "Progress"]


class Progress:
    """A dependency-free progress bar on stderr (silent when disabled)."""

    def __init__(
        self,
        total: int,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        label: str = "cells",
    ) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.label = label
        self.start = time.monotonic()

    def advance(self, n: int = 1) -> None:
        """Count finished work and redraw."""
        self.done += n
        if not self.enabled:
            return
        frac = self.done / self.total
        elapsed = time.monotonic() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * int(30 * frac)
        self.stream.write(
            f"\r[{bar:<30}] {self.done}/{self.total} {self.label}  "
            f"{elapsed:6.1f}s elapsed, ~{eta:5.1f}s left"
        )
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def run_grid(
    grid: Grid,
    out_dir: str | Path,
    *,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run every cell not already finished in ``out_dir`` and return all rows.

    The grid is validated first, so a bad name or parameter fails before any cell runs. Finished
    cells (valid files) are never re-run or rewritten; corrupt or partial files are re-run.
    """
    grid.validate()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "grid.json").write_text(json.dumps(grid.to_dict(), indent=2, default=str))
    store = CellStore(out)
    cells = grid.cells()
    todo = [c for c in cells if not store.is_done(c)]
    bar = Progress(len(todo), enabled=progress)
    for cell, rows in execute(todo, backend=backend, n_jobs=n_jobs, address=address):
        store.save(cell, rows)
        bar.advance()
    rows: list[dict[str, Any]] = []
    for cell in cells:
        cell_rows = store.load(cell)
        if cell_rows is None:  # pragma: no cover - only if a file vanished mid-run
            raise RuntimeError(f"result of cell {cell.cell_id} is missing after the run")
        rows.extend(cell_rows)
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "results.csv", index=False)
    return frame


def final_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows at each run's last recorded round (the episode's end)."""
    last = frame.groupby(["agent", "env", "epsilon", "seed"])["round"].transform("max")
    return frame[frame["round"] == last]


def summarize(
    frame: pd.DataFrame,
    metric: str = "dynamic_regret",
    *,
    baseline: str = "uniform",
    confidence: float = 0.95,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """Final-round table per (env, agent, epsilon), ranked by mean ``metric`` within each env.

    Columns: mean, IQM, bootstrap CI of the mean, median, static regret mean, and ``score`` =
    1 - metric / metric(``baseline``) averaged over seeds (common random numbers pair the seeds;
    1 is zero regret, 0 is the baseline's), NaN when the baseline is not in the grid.
    """
    if metric not in frame.columns:
        raise ValueError(f"metric must be one of the result columns, got {metric!r}")
    final = final_rows(frame)
    base = final[final["agent"] == baseline].groupby(["env", "seed"])[metric].mean()
    records = []
    for (env, agent, eps), group in final.groupby(["env", "agent", "epsilon"], dropna=False):
        values = group[metric].to_numpy()
        est, lo, hi = bootstrap_ci(values, "mean", confidence=confidence, n_boot=n_boot)
        ref = base.reindex(pd.MultiIndex.from_arrays([group["env"], group["seed"]]))
        ref = ref.to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = 1.0 - values / ref
        score = float(np.nanmean(ratio)) if np.isfinite(ratio).any() else math.nan
        records.append(
            {
                "env": env,
                "agent": agent,
                "epsilon": eps,
                "seeds": len(values),
                f"{metric}_mean": est,
                "ci_low": lo,
                "ci_high": hi,
                f"{metric}_iqm": iqm(values),
                f"{metric}_median": float(np.median(values)),
                "static_regret_mean": float(group["static_regret"].mean()),
                f"score_vs_{baseline}": score,
                "certified": bool(group["certified"].all()),
            }
        )
    table = pd.DataFrame(records)
    table = table.sort_values(["env", f"{metric}_mean"], kind="stable").reset_index(drop=True)
    table.insert(1, "rank", table.groupby("env").cumcount() + 1)
    return table
