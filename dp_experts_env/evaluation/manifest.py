"""The results folder's manifest: the run ids of the grid last run there, with a checksum.

The results table, the summary and ``dp-experts plot`` read exactly those runs; ``complete`` is
set once every run and ``results.csv`` are written (docs/grid.md, "The manifest").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dp_experts_env.evaluation.grid import json_default, plain_numbers
from dp_experts_env.evaluation.packs import FORMAT_VERSION
from dp_experts_env.evaluation.safe_files import (
    UnsafeResultsFolder,
    check_run_id,
    loads,
    read_plain,
)

__all__ = ["FORMAT_VERSION", "MANIFEST", "manifest_checksum", "manifest_data", "read_manifest"]

MANIFEST = "manifest.json"


def manifest_checksum(grid_dict: Any, run_ids: Any) -> str:
    """SHA-256 of a manifest's grid and run list (JSON, keys sorted)."""
    payload = json.dumps(
        {"grid": grid_dict, "runs": run_ids},
        sort_keys=True,
        separators=(",", ":"),
        default=json_default,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def manifest_data(grid_dict: Mapping[str, Any], run_ids: list[str], complete: bool) -> dict:
    """The manifest's content as it reads back from disk (JSON round trip), with its checksum."""
    grid_json = json.loads(json.dumps(plain_numbers(dict(grid_dict)), default=json_default))
    runs = [check_run_id(r) for r in run_ids]
    return {
        "version": FORMAT_VERSION,
        "grid": grid_json,
        "runs": runs,
        "complete": bool(complete),
        "checksum": manifest_checksum(grid_json, runs),
    }


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The folder's manifest, its checksum and run ids checked.

    Raises:
        ValueError: no manifest, a damaged one, or an unsafe run id.
    """
    path = Path(folder) / MANIFEST
    try:
        raw = read_plain(path)
    except FileNotFoundError:
        raise ValueError(
            f"no {MANIFEST} in {str(folder)!r}: not a results folder written by "
            "`dp-experts compare`/`run` (or written by an older version; run compare again)"
        ) from None
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    try:
        data = loads(raw)
        runs = data["runs"]
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            raise ValueError("unknown manifest version (an older layout)")
        if not isinstance(runs, list):
            raise ValueError("'runs' is not a list")
        if data.get("checksum") != manifest_checksum(data.get("grid"), runs):
            raise ValueError("checksum mismatch: the manifest was edited or damaged")
    except (ValueError, KeyError, TypeError) as err:
        if isinstance(err, UnsafeResultsFolder):
            raise
        raise ValueError(f"{path} is damaged ({err}); run compare again to rewrite it") from err
    for run_id in runs:
        check_run_id(run_id)
    return data
