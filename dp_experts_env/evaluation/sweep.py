"""Run a grid into a results folder, resumably, and summarise it.

Folder layout::

    OUT/grid.json          the grid that was asked for
    OUT/manifest.json      the runs of that grid (run ids): what the table, summary and plot read
    OUT/cells/unit-*.pack  one file per finished unit of work: its runs (cell, seed), each
                           keyed by cell + code + data (cells/<run id>.json: one run per file,
                           as earlier versions wrote them; still read)
    OUT/results.csv        every row (tidy; curves at log-spaced rounds)
    OUT/summary.csv        final-round table: mean, IQM, bootstrap CI, score vs uniform
    OUT/figures/*.png      figures (see plots.py; *.pdf too with pdf=True)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from dp_experts_env._validation import check_choice
from dp_experts_env.evaluation.backends import CellCompletion, execute_units
from dp_experts_env.evaluation.csv_text import write_frame
from dp_experts_env.evaluation.grid import Cell, Grid, json_default
from dp_experts_env.evaluation.store import (
    CellStore,
    ResultsFolderBusy,
    UnsafeResultsFolder,
    folder_lock,
    forget_fingerprints,
    write_atomic,
)
from dp_experts_env.evaluation.summary import final_rows, summarize  # re-exported: public here

__all__ = [
    "run_grid",
    "summarize",
    "final_rows",
    "Progress",
    "SweepInterrupted",
    "SweepWriteError",
]


class Progress:
    """A dependency-free progress bar on stderr (silent when disabled).

    On a terminal the bar is redrawn in place. Elsewhere (a log file, CI) a redraw would be a new
    line per finished cell, so a plain line is written only at each further tenth of the work,
    or after :attr:`QUIET` seconds without one. Work in flight counts too (:meth:`partial`: the
    played fraction of a long unit), so the bar moves during a unit, not only between units.
    """

    #: Longest silence (seconds) of the plain-line output while work is in progress.
    QUIET = 30.0

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
        isatty = getattr(self.stream, "isatty", None)
        self.interactive = bool(isatty()) if callable(isatty) else False
        self._tenths = 0
        self._in_flight = 0.0
        self._last_line = self.start
        self._last_draw = 0.0

    def advance(self, n: int = 1) -> None:
        """Count finished work and redraw."""
        self.done += n
        self._draw(force=True)

    def partial(self, in_flight: float) -> None:
        """Set the finished part of the work in progress (in the same units) and redraw."""
        self._in_flight = max(0.0, float(in_flight))
        self._draw(force=False)

    def _draw(self, *, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        shown = min(self.done + self._in_flight, self.total)
        frac = shown / self.total
        elapsed = now - self.start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        count = f"{self.done}/{self.total}" if shown == self.done else f"{shown:.1f}/{self.total}"
        if not self.interactive:
            tenths = int(10 * min(frac, 1.0))
            if tenths > self._tenths or (now - self._last_line >= self.QUIET and frac < 1):
                self._tenths = max(tenths, self._tenths)
                self._last_line = now
                self.stream.write(
                    f"{count} {self.label}  {elapsed:.1f}s elapsed, ~{eta:.1f}s left\n"
                )
                self.stream.flush()
            return
        if not force and now - self._last_draw < 0.2:
            return
        self._last_draw = now
        bar = "#" * int(30 * frac)
        self.stream.write(
            f"\r[{bar:<30}] {count} {self.label}  {elapsed:6.1f}s elapsed, ~{eta:5.1f}s left"
        )
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


class _UnitProgress:
    """Feeds a :class:`Progress` in cells from the backends' reports inside units."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.running: dict[frozenset[str], tuple[int, float]] = {}

    def report(self, unit: list[Any], frac: float) -> None:
        key = frozenset(cell.cell_id for cell in unit)
        size, before = self.running.get(key, (len(unit), 0.0))
        # A unit may play its cells one episode after another: never move back.
        self.running[key] = (size, max(before, min(frac, 0.999)))
        self.bar.partial(sum(n * f for n, f in self.running.values()))

    def finished(self, cell: Any) -> None:
        cid = cell.cell_id
        for key in [k for k in self.running if cid in k]:
            del self.running[key]
        self.bar.partial(sum(n * f for n, f in self.running.values()))
        self.bar.advance()


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; the message says what was saved and how to resume."""


class SweepWriteError(OSError):
    """A file of the results folder could not be written (full disk, permissions)."""


def run_grid(
    grid: Grid,
    out_dir: str | Path,
    *,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: bool = True,
    log: TextIO | None = None,
    report: bool = True,
    figures: bool = False,
    rows: str = "all",
    pdf: bool = False,
) -> pd.DataFrame:
    """Run every (cell, seed) not already stored in ``out_dir`` and return the grid's rows.

    With ``report`` (default) the folder also gets ``summary.csv`` and, for several envs,
    ``aggregate.csv`` (:func:`~dp_experts_env.evaluation.report.write_report`, dynamic regret);
    ``figures=True`` draws the figures too, as ``dp-experts compare`` does (PNG; ``pdf=True``
    adds a PDF of each).

    The grid is validated first, so a bad name or parameter fails before any cell runs. Stored
    runs whose key matches (same cell, code and data; see :mod:`~dp_experts_env.evaluation.store`)
    are reused and never rewritten; missing seeds of a cell are played as one batch; a damaged
    file is reported on ``log`` and re-run. ``manifest.json`` is written before anything runs and
    lists exactly this grid's runs; ``results.csv`` is written atomically at the end, and the
    manifest is marked complete.

    ``rows="final"`` returns only each run's row at its last round (what the summary reads)
    and writes ``results.csv`` one run file at a time, so the driver's memory grows with the
    number of runs, not rows (figures need every row: ``figures=True`` needs ``rows="all"``).

    When nothing is to compute (every run stored and valid, the manifest complete and listing
    this grid) nothing is written and the folder's ``.lock`` is not touched, so a read-only or
    archived folder can be read again; the report files are then written only where the folder
    is writable.

    Raises:
        ResultsFolderBusy: another sweep holds the folder's lock.
        SweepInterrupted: Ctrl-C (a KeyboardInterrupt whose message counts the saved runs).
        SweepWriteError: a file could not be written (an OSError naming it, with the count).
    """
    check_choice("rows", rows, ("all", "final"))
    if figures and rows != "all":
        raise ValueError("figures=True draws every recorded round: it needs rows='all'")
    grid.validate()
    from dp_experts_env.evaluation.memory import check_grid_memory

    check_grid_memory(grid)  # the measured per-run model: refused before it runs out
    log = log if log is not None else sys.stderr
    out = Path(out_dir)
    forget_fingerprints()  # code edited since the last sweep in this process must count
    store = CellStore(out)
    # Keyed once per call: the no-op check and a sweep with runs to write both read these.
    runs = [(cell, store.runs(cell)) for cell in grid.cells()]
    run_ids = _current_runs(grid, out, runs)
    if run_ids is not None:  # nothing to compute: read only, no lock
        try:
            frame = CellStore(out).frame(run_ids, last_only=rows == "final")
        except KeyboardInterrupt:
            raise SweepInterrupted("interrupted while reading the stored results") from None
        if (report or figures) and os.access(out, os.W_OK):
            _write_report(frame, out, figures, pdf)
        return frame
    with contextlib.ExitStack() as stack:
        try:
            out.mkdir(parents=True, exist_ok=True)
            stack.enter_context(folder_lock(out))
        except (ResultsFolderBusy, UnsafeResultsFolder):
            raise
        except OSError as err:
            raise _write_error(f"cannot use results folder {str(out)!r}: {err}", err) from err
        frame = _run_locked(grid, out, runs, backend, n_jobs, address, progress, log, rows)
        if report or figures:
            _write_report(frame, out, figures, pdf)
        return frame


def _write_report(frame: pd.DataFrame, out: Path, figures: bool, pdf: bool = False) -> None:
    from dp_experts_env.evaluation.report import write_report  # the layer above: figures

    write_report(frame, out, figures=figures, pdf=pdf)


#: Each cell of a grid with its (seed index, key, run id) triples (:meth:`CellStore.runs`).
_GridRuns = list[tuple[Cell, list[tuple[int, dict, str]]]]


def _current_runs(grid: Grid, out: Path, runs: _GridRuns) -> list[str] | None:
    """The grid's run ids when the folder already holds all of them, complete; else None.

    Reads only: the manifest must be complete and list exactly this grid's runs, ``grid.json``
    and ``results.csv`` must exist, and every run file must pass :meth:`CellStore.check`.
    """
    if not (out / "manifest.json").is_file():
        return None
    store = CellStore(out)
    pairs = [(key, run_id) for _, triples in runs for _, key, run_id in triples]
    run_ids = [run_id for _, run_id in pairs]
    if not store.manifest_is(grid.to_dict(), run_ids):
        return None
    for name in ("grid.json", "results.csv"):
        try:
            os.lstat(out / name)
        except OSError:
            return None
    if any(store.check(run_id, key)[1] for key, run_id in pairs):
        return None
    return run_ids


def _write_error(message: str, cause: OSError) -> SweepWriteError:
    error = SweepWriteError(message)
    error.errno = cause.errno  # (filename left unset: it would replace the message in str())
    return error


def _run_locked(
    grid: Grid,
    out: Path,
    runs: _GridRuns,
    backend: str,
    n_jobs: int | None,
    address: str | None,
    progress: bool,
    log: TextIO,
    rows: str = "all",
) -> pd.DataFrame:
    store = CellStore(out)
    counts = {"saved": 0, "todo": 0, "before": 0}

    def resume_hint() -> str:
        return (
            f"{counts['saved']} of {counts['todo']} cells of this session saved in {out} "
            f"({counts['before']} seed runs were stored before); run the same command again to "
            "resume"
        )

    def io(action: Any, *args: Any) -> Any:
        # Only the folder's own files: an OSError raised inside a cell is the cell's error.
        try:
            return action(*args)
        except OSError as err:
            where = f" {err.filename}" if err.filename else ""
            raise _write_error(
                f"cannot write{where} ({err.strerror or err}): {resume_hint()}", err
            ) from err

    try:
        io(store.remove_temporary)  # we hold the lock: any .tmp-* is a killed writer's leftover
        io(
            write_atomic,
            out / "grid.json",
            lambda fh: json.dump(grid.to_dict(), fh, indent=2, default=json_default),
        )
        run_ids: list[str] = []
        todo = []
        todo_of = []  # the grid's cell each todo cell is the missing seeds of
        problems: dict[str, list[str]] = {}  # why stored runs cannot be used -> which
        keys: dict[tuple[str, int], tuple[int, dict, str]] = {}  # (cell, seed) -> its run
        for cell, triples in runs:
            missing = []
            cell_id = cell.cell_id
            for seed, key, run_id in triples:
                keys[cell_id, seed] = (seed, key, run_id)
                run_ids.append(run_id)
                _, problem = store.check(run_id, key)
                if problem == "":
                    counts["before"] += 1
                    continue
                if problem != "missing":
                    problems.setdefault(problem, []).append(f"cell {cell_id} seed {seed}")
                missing.append(seed)
            if missing:
                todo.append(cell.with_seeds(missing))
                todo_of.append(cell)
        for why in store.damaged_packs().values():  # files that name no run they held
            if not any(why in problem for problem in problems):
                print(f"{why}: the runs it held are played again", file=log)
        for problem, which in problems.items():  # a damaged unit file: one line, not one a run
            more = f" and {len(which) - 1} more runs" if len(which) > 1 else ""
            print(
                f"{which[0]}{more}: the stored result cannot be used ({problem}); re-running",
                file=log,
            )
        counts["todo"] = len(todo)
        grid_dict = grid.to_dict()
        io(store.write_manifest, grid_dict, run_ids)
        bar = Progress(len(todo), enabled=progress)
        units = _UnitProgress(bar)
        reports = units.report if progress and backend != "ray" else None
        completion = CellCompletion(todo)
        wholes = {c.cell_id: o.cell_id for c, o in zip(todo, todo_of, strict=True)}

        def runs_of(part: Any) -> list[tuple[int, dict, str]]:  # keys derived above, not again
            grid_cell = wholes[completion.whole(part).cell_id]
            return [keys[grid_cell, seed] for seed in part.seed_indices]

        for unit in execute_units(
            todo, backend=backend, n_jobs=n_jobs, address=address, progress=reports
        ):
            io(store.save_unit, unit, runs_of)  # one file per unit, as soon as it is back
            for part, _ in unit:
                whole = completion.add(part)
                if whole is not None:
                    counts["saved"] += 1
                    units.finished(whole)
            del unit  # a unit's results are held only until they are written
        if rows == "all":
            frame = store.frame(run_ids)
            io(write_atomic, out / "results.csv", lambda fh: write_frame(frame, fh))
        else:  # stream the table to disk, keep each run's last row
            lasts: list[pd.DataFrame] = []  # the last rows, from write_csv's reads
            io(
                write_atomic,
                out / "results.csv",
                lambda fh: lasts.append(store.write_csv(run_ids, fh, last_rows=True)),
            )
            frame = lasts[0]
        io(store.write_manifest, grid_dict, run_ids, True)
    except KeyboardInterrupt:
        raise SweepInterrupted(f"interrupted: {resume_hint()}") from None
    return frame
