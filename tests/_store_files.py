"""Results folders as earlier versions wrote them: one run file per (cell, seed).

Until unit files (``cells/unit-*.pack``), the store wrote ``cells/<run id>.json``: a header line
(format version, key, checksum, row count, columns) and the run's columns. The records inside a
unit file are those same two lines, so :func:`as_run_files` turns a folder written now into one
written then (the tests of what is still read, and of the run-file checks, use it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
from dp_experts_env.evaluation import backends as backends_mod
from dp_experts_env.evaluation.store import CellStore, read_manifest


def as_run_files(folder: Path) -> list[Path]:
    """Rewrite every unit file of ``folder`` as run files (the manifest's runs); their paths."""
    store = CellStore(folder)
    written = []
    for run_id in read_manifest(folder)["runs"]:
        header, payload = store.read_record(run_id)
        head = json.dumps(header, separators=(",", ":")).encode()
        path = store.path(run_id)
        path.write_bytes(head + b"\n" + payload)
        written.append(path)
    for pack in (folder / "cells").glob("unit-*.pack"):
        pack.unlink()
    return written


#: The small grid of the results-folder tests (test_unit_files, test_results_trust).
SHIFT = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 40, "n_shifts": 1})


def grid(**kw) -> Grid:
    """A two-learner grid on :data:`SHIFT`; keywords replace its fields."""
    defaults = {"agents": ["uniform", "hedge"], "envs": [SHIFT], "n_seeds": 2, "n_record": 6}
    return Grid(**{**defaults, **kw})


def run(g: Grid, out: Path, **kw) -> pd.DataFrame:
    """``run_grid`` on the serial backend without progress output."""
    return run_grid(g, out, backend="serial", progress=False, **kw)


def spy_on_played(monkeypatch) -> list[tuple[str, tuple[int, ...]]]:
    """Record the (agent, seed indices) of every cell actually played (for a fixture)."""
    calls: list[tuple[str, tuple[int, ...]]] = []
    real = backends_mod.run_cells

    def spy(cells):
        calls.extend((cell.agent.name, cell.seed_indices) for cell in cells)
        return real(cells)

    monkeypatch.setattr(backends_mod, "run_cells", spy)
    return calls
