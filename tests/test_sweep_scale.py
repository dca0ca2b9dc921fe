"""Sweeps at scale: bounded driver memory on a 1M-row folder, and progress inside a long unit.

The memory test builds a folder of 1,000,000 rows (15,625 runs of 64 recorded rounds) without
playing it -- one run file per run, as versions before unit files wrote them, with the keys of
the current code -- and measures the peak resident memory of a fresh process that re-runs the
grid (a no-op: every run is stored) and so reads every row into the table, writes the summary
and returns; then the same with the folder rewritten as unit files (what a sweep writes now).
The cap is stated in docs/grid.md.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
from dp_experts_env.evaluation import backends as backends_mod
from dp_experts_env.evaluation import sweep as sweep_mod
from dp_experts_env.evaluation.grid import record_rounds
from dp_experts_env.evaluation.packs import record_payload
from dp_experts_env.evaluation.store import (
    PACK_VERSION,
    CellStore,
    read_manifest,
    write_atomic,
)
from dp_experts_env.evaluation.sweep import final_rows

ROOT = Path(__file__).resolve().parents[1]

#: Peak resident memory of the driver reading back a 1M-row folder (measured 390-420 MB with
#: ~140 MB of imports; docs/grid.md): about 250 bytes per row on top of the imports.
MEMORY_CAP_MB = 600
#: The same with ``rows="final"`` (the table streamed to disk, each run's last row kept).
FINAL_CAP_MB = 250
ROWS = 1_000_000


#: 16 envs x 977 seeds. The bootstraps hold n_boot x seeds floats per summary row, and the
#: stratified bootstrap of aggregate.csv (several envs with uniform play) n_boot x all runs: with
#: uniform in this grid it alone would need ~1 GB (docs/grid.md), so the learner is another.
N_ENVS = 16


def _big_grid(n_seeds: int) -> Grid:
    envs = [
        EnvEntry("DPExperts-Shift-v0", {"n_experts": 2, "horizon": 64, "gap": 0.05 + 0.02 * i})
        for i in range(N_ENVS)
    ]
    return Grid(["follow-the-leader"], envs, n_seeds=n_seeds, seeds_per_cell=1000, n_record=64)


#: A seed no run has, written where a payload's seed goes and replaced by the run's.
_SEED_MARK = 987_654_321_987


def _plant_folder(out: Path, grid: Grid) -> int:
    """Write a complete, valid results folder for ``grid`` without playing it; returns rows.

    The files are the run files earlier versions wrote (the store's payload function, the keys
    of the current code); only the losses are made up.
    """
    store = CellStore(out)
    (out / "cells").mkdir(parents=True)
    rounds = record_rounds(64, 64).tolist()
    n = len(rounds)
    run_ids = []
    rows_total = 0
    # A payload differs between runs in its seed, env and dynamic regrets (by seed % 3): encoded
    # once per (env, seed % 3) with a placeholder seed, the run's seed written into the bytes.
    encoded: dict[tuple[str, int], bytes] = {}
    for cell in grid.cells():
        for seed, key, run_id in store.runs(cell):
            rows = [
                {"agent": "follow-the-leader", "agent_name": "follow-the-leader",
                 "env": cell.env.display, "env_id": cell.env.id, "horizon": 64, "n_experts": 2,
                 "epsilon": float("inf"),
                 "private": False, "epsilon_certified": float("inf"), "certified": True,
                 "seed": seed, "round": r, "cumulative_loss": 0.5 * r + seed % 7,
                 "static_regret": 0.1 * r, "dynamic_regret": 0.2 * r + seed % 3}
                for r in rounds
            ] if not run_ids else None  # fmt: skip
            if rows is not None:
                template = json.loads(record_payload(rows))
            if (cell.env.display, seed % 3) not in encoded:
                template["const"]["seed"] = _SEED_MARK
                template["const"]["env"] = cell.env.display
                template["cols"]["dynamic_regret"] = [0.2 * r + seed % 3 for r in rounds]
                text = json.dumps(template, separators=(",", ":"), allow_nan=True).encode()
                assert text.count(b"%d" % _SEED_MARK) == 1
                encoded[cell.env.display, seed % 3] = text
            payload = encoded[cell.env.display, seed % 3].replace(b"%d" % _SEED_MARK, b"%d" % seed)
            header = {"version": 3, "key": key, "n": n, "columns": template["order"]}
            header["checksum"] = hashlib.sha256(payload).hexdigest()
            (out / "cells" / f"{run_id}.json").write_bytes(
                json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload
            )
            run_ids.append(run_id)
            rows_total += n
    write_atomic(out / "grid.json", lambda fh: json.dump(grid.to_dict(), fh))
    (out / "results.csv").write_text("planted\n")
    store.write_manifest(grid.to_dict(), run_ids, True)
    return rows_total


def _pack_folder(out: Path) -> None:
    """Rewrite a planted folder's run files as unit files, one per env (as a sweep writes)."""
    runs = read_manifest(out)["runs"]
    store = CellStore(out)
    per_unit = len(runs) // N_ENVS
    for start in range(0, len(runs), per_unit):
        ids = runs[start : start + per_unit]
        rest = b"".join(store.path(r).read_bytes() + b"\n" for r in ids)
        head = {"pack": PACK_VERSION, "runs": ids, "bytes": len(rest)}
        head["checksum"] = hashlib.sha256(rest).hexdigest()
        name = "unit-" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:20] + ".pack"
        (out / "cells" / name).write_bytes(json.dumps(head).encode() + b"\n" + rest)
        for r in ids:
            store.path(r).unlink()


@pytest.mark.slow
def test_driver_memory_on_a_million_rows_stays_under_the_cap(tmp_path, monkeypatch):
    rows_per_run = len(record_rounds(64, 64))
    grid = _big_grid(-(-ROWS // (rows_per_run * N_ENVS)))
    rows = _plant_folder(tmp_path / "out", grid)
    assert rows >= ROWS
    script = textwrap.dedent(
        f"""
        import sys
        from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
        from dp_experts_env.evaluation import backends
        backends.run_cells = None  # a no-op rerun: nothing may be played
        envs = [
            EnvEntry("DPExperts-Shift-v0", dict(n_experts=2, horizon=64, gap=0.05 + 0.02 * i))
            for i in range({N_ENVS})
        ]
        grid = Grid(
            ["follow-the-leader"], envs, n_seeds={grid.n_seeds}, seeds_per_cell=1000, n_record=64
        )
        frame = run_grid(grid, sys.argv[1], backend="serial", progress=False, rows=sys.argv[2])
        # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child forked from a
        # big pytest process (late in the full suite) would report the parent's size.
        with open("/proc/self/status") as fh:
            peak = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:")) / 1024
        print(len(frame), frame["dynamic_regret"].sum(), peak)
        """
    )
    # The folder as earlier versions wrote it (one file per run), then as a sweep writes it
    # now (one unit file per unit: here per env, 977 runs each).
    layouts = (("run files", None), ("unit files", _pack_folder))
    for (layout, convert), (mode, cap, expected) in itertools.product(
        layouts, (("all", MEMORY_CAP_MB, rows), ("final", FINAL_CAP_MB, None))
    ):
        if convert is not None and mode == "all":
            convert(tmp_path / "out")
        if mode == "final":  # not a no-op: results.csv is written again, streamed run by run
            (tmp_path / "out" / "results.csv").unlink()
        proc = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "out"), mode],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr
        n_rows, _, peak_mb = proc.stdout.split()
        assert int(n_rows) == (expected or grid.n_seeds * N_ENVS)
        said = f"{layout}, rows={mode}: driver peak {float(peak_mb):.0f} MB for {rows} rows"
        print(said)  # pytest -s
        assert float(peak_mb) < cap, said
        summary = (tmp_path / "out" / "summary.csv").read_text().splitlines()
        assert len(summary) == 1 + N_ENVS
    with open(tmp_path / "out" / "results.csv") as fh:
        assert sum(1 for _ in fh) == rows + 1


def test_final_rows_mode_streams_the_same_table(tmp_path):
    """rows='final': the same results.csv and summary, each run's last row returned."""
    envs = [
        EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 50}),
        EnvEntry("DPExperts-Bandit-v0", {"n_arms": 3, "horizon": 50}),  # other columns
    ]
    grid = Grid(["uniform"], envs, n_seeds=3, n_record=8)
    full = run_grid(grid, tmp_path / "a", backend="serial", progress=False)
    last = run_grid(grid, tmp_path / "b", backend="serial", progress=False, rows="final")
    for name in ("results.csv", "summary.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    pd.testing.assert_frame_equal(final_rows(full).reset_index(drop=True), last)
    again = run_grid(grid, tmp_path / "b", backend="serial", progress=False, rows="final")
    pd.testing.assert_frame_equal(last, again)  # the no-op rerun reads the same
    with pytest.raises(ValueError, match="rows='all'"):
        run_grid(grid, tmp_path / "c", rows="final", figures=True)


# ----------------------------------------------------------------------------- progress
def _stream() -> io.StringIO:
    return io.StringIO()


def test_progress_moves_inside_a_unit(tmp_path, monkeypatch):
    """One unit, one cell: the bar shows fractions of the cell before it finishes."""
    stream = _stream()
    real = sweep_mod.Progress
    monkeypatch.setattr(sweep_mod.Progress, "QUIET", 0.0)
    monkeypatch.setattr(backends_mod, "_REPORT_EVERY", 0.0)
    monkeypatch.setattr(sweep_mod, "Progress", lambda total, **kw: real(total, stream=stream, **kw))
    env = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 8192})
    run_grid(
        Grid(["hedge"], [env], n_seeds=1), tmp_path, backend="serial", progress=True, report=False
    )
    lines = stream.getvalue().splitlines()
    partial = [line for line in lines if line.startswith("0.")]
    assert len(partial) >= 3, lines  # 8192 rounds: a report every 1024
    fractions = [float(line.split("/")[0]) for line in partial]
    assert fractions == sorted(fractions) and fractions[-1] < 1
    assert lines[-1].startswith("1/1 cells")


def test_progress_reports_never_change_rows(tmp_path, monkeypatch):
    env = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 3000})
    grid = Grid(["hedge", "uniform"], [env], n_seeds=2)
    quiet = run_grid(grid, tmp_path / "a", backend="serial", progress=False, report=False)
    monkeypatch.setattr(backends_mod, "_REPORT_EVERY", 0.0)
    shown = run_grid(grid, tmp_path / "b", backend="serial", progress=True, report=False)
    assert quiet.equals(shown)


@pytest.mark.slow
def test_local_workers_report_progress_through_the_queue(tmp_path):
    """Two units on two processes: the worker's unit reports fractions while it plays."""
    script = textwrap.dedent(
        """
        import io, sys
        from dp_experts_env.evaluation import EnvEntry, Grid, run_grid, sweep, backends

        seen = []

        def report(unit, frac):
            seen.append((tuple(cell.cell_id for cell in unit), frac))

        if __name__ == "__main__":
            env = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 20000})
            grid = Grid(["hedge", "follow-the-leader"], [env], n_seeds=1)
            backends._REPORT_EVERY = 0.0
            results = list(backends.execute(grid.cells(), n_jobs=2, progress=report))
            assert len(results) == 2
            units = {unit for unit, _ in seen}
            print(len(units), sum(1 for _, f in seen if 0 < f < 1))
        """
    )
    path = tmp_path / "driver.py"
    path.write_text(script)
    proc = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    n_units, n_reports = map(int, proc.stdout.split())
    assert n_units == 2 and n_reports >= 4
