"""One result file per cell, written atomically, verified on read.

A sweep that is killed leaves finished cells' files complete (each is written to a temporary
file and renamed into place) and nothing else. On resume, a file that does not parse, belongs to
another cell, or fails its checksum is reported and re-run; a valid file is never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dp_experts_env.evaluation.grid import Cell

__all__ = ["CellStore", "FORMAT_VERSION"]

FORMAT_VERSION = 1


def _digest(rows: list[dict[str, Any]]) -> str:
    payload = json.dumps(rows, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CellStore:
    """The ``cells/`` folder of a results directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.cells_dir = self.root / "cells"

    def path(self, cell: Cell) -> Path:
        """Where the cell's rows live."""
        return self.cells_dir / f"{cell.cell_id}.json"

    def load(self, cell: Cell) -> list[dict[str, Any]] | None:
        """The cell's rows if a complete, matching file exists; otherwise None."""
        path = self.path(cell)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            rows = data["rows"]
            ok = (
                data.get("version") == FORMAT_VERSION
                and data.get("cell") == json.loads(json.dumps(cell.to_dict()))
                and data.get("checksum") == _digest(rows)
                and isinstance(rows, list)
                and len(rows) > 0
            )
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        return rows if ok else None

    def is_done(self, cell: Cell) -> bool:
        """True when a valid result file exists for the cell."""
        return self.load(cell) is not None

    def save(self, cell: Cell, rows: list[dict[str, Any]]) -> Path:
        """Write the rows atomically (temporary file + rename in the same folder)."""
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        path = self.path(cell)
        data = {
            "version": FORMAT_VERSION,
            "cell": cell.to_dict(),
            "checksum": _digest(rows),
            "rows": rows,
        }
        fd, tmp = tempfile.mkstemp(dir=self.cells_dir, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, separators=(",", ":"), allow_nan=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def all_rows(self) -> list[dict[str, Any]]:
        """Rows of every valid cell file in the folder (for re-plotting a results folder)."""
        rows: list[dict[str, Any]] = []
        if not self.cells_dir.is_dir():
            return rows
        for path in sorted(self.cells_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                if data.get("checksum") == _digest(data["rows"]):
                    rows.extend(data["rows"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return rows
