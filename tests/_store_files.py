"""Results folders as earlier versions wrote them: one run file per (cell, seed).

Until unit files (``cells/unit-*.pack``), the store wrote ``cells/<run id>.json``: a header line
(format version, key, checksum, row count, columns) and the run's columns. The records inside a
unit file are those same two lines, so :func:`as_run_files` turns a folder written now into one
written then (the tests of what is still read, and of the run-file checks, use it).
"""

from __future__ import annotations

import json
from pathlib import Path

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
