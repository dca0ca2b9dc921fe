"""``dp-experts verify OUT``: is a results folder what the current code would produce? Read only.

Every run is keyed again with the current code and counted current, stale, missing, foreign or
damaged (docs/grid.md, "``dp-experts verify``").
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dp_experts_env.evaluation.grid import Grid, canonical_json
from dp_experts_env.evaluation.store import (
    FORMAT_VERSION,
    MANIFEST,
    CellStore,
    check_run_id,
    forget_fingerprints,
    loads,
    manifest_problem,
    read_manifest,
    read_plain,
)

__all__ = ["FolderReport", "verify_folder", "verify_tree"]

#: Key fields that change when the code, the data, the seed derivation or the layout change
#: (the rest of a key identifies the cell and seed).
_VOLATILE = ("format", "code", "data", "env_seed", "agent_seed")
_SHOWN = 5  # runs listed per category


@dataclass
class FolderReport:
    """What :func:`verify_folder` found in one results folder."""

    folder: Path
    current: int = 0
    stale: list[tuple[str, str]] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    foreign: list[tuple[str, str]] = field(default_factory=list)
    damaged: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every run is current and the manifest has no problem."""
        return not (self.stale or self.missing or self.foreign or self.damaged or self.problems)

    def lines(self) -> list[str]:
        """A human-readable account, one line per finding (the first few runs of each kind)."""
        head = (
            f"{self.folder}: {self.current} current, {len(self.stale)} stale, "
            f"{len(self.missing)} missing, {len(self.foreign)} foreign, "
            f"{len(self.damaged)} damaged run(s)" + ("" if self.ok else " -- NOT current")
        )
        out = [head]
        out += [f"  manifest: {p}" for p in self.problems]
        for name, items in (
            ("stale", self.stale),
            ("missing", self.missing),
            ("foreign", self.foreign),
            ("damaged", self.damaged),
        ):
            for run_id, reason in items[:_SHOWN]:
                out.append(f"  {name}: {run_id} ({reason})")
            if len(items) > _SHOWN:
                out.append(f"  ... and {len(items) - _SHOWN} more {name}")
        return out


def _identity(key: Any) -> str:
    """The part of a key naming the cell and seed (everything but code, data, seeds, format)."""
    if not isinstance(key, dict):
        return ""
    return canonical_json({k: v for k, v in key.items() if k not in _VOLATILE})


def _changed(stored: dict[str, Any], current: dict[str, Any]) -> str:
    """Which volatile parts of the key differ, e.g. ``code.agent, env_seed``."""
    parts = []
    for name in _VOLATILE:
        a, b = stored.get(name), current.get(name)
        if isinstance(a, dict) and isinstance(b, dict):
            parts += [f"{name}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        elif a != b:
            parts.append(name)
    return "changed: " + (", ".join(parts) or "nothing?")


def verify_folder(folder: str | Path) -> FolderReport:
    """Check one results folder against the current code (see the module docstring)."""
    folder = Path(folder)
    report = FolderReport(folder)
    forget_fingerprints()  # hash the code as it is on disk now
    try:
        manifest = read_manifest(folder)
    except ValueError as err:
        report.problems.append(str(err))
        return report
    if not manifest.get("complete"):
        report.problems.append(
            "the sweep that wrote it did not finish (manifest not marked complete): run the "
            "same command again"
        )
    try:
        on_disk = loads(read_plain(folder / "grid.json"))
        if canonical_json(on_disk) != canonical_json(manifest["grid"]):
            report.problems.append("grid.json differs from the grid recorded in the manifest")
    except FileNotFoundError:
        report.problems.append("grid.json is missing")
    except (OSError, ValueError) as err:
        report.problems.append(f"grid.json is unreadable ({err})")
    try:
        grid = Grid.from_dict(manifest["grid"])
        cells = grid.cells()
    except (TypeError, ValueError) as err:
        report.problems.append(f"its grid cannot be built with the current code ({err})")
        return report
    store = CellStore(folder)
    edited = manifest_problem(manifest, store)
    if edited:
        report.problems.append(edited)
    expected: dict[str, tuple[str, dict[str, Any]]] = {}  # identity -> (run id, key)
    for cell in cells:
        for _, key, run_id in store.runs(cell):
            expected[_identity(key)] = (run_id, key)
    by_id = {run_id: identity for identity, (run_id, _) in expected.items()}
    seen: set[str] = set()
    for run_id in manifest["runs"]:
        if run_id in by_id:
            identity = by_id[run_id]
            seen.add(identity)
            rows, problem = store.check(run_id, expected[identity][1])
            if problem == "":
                report.current += 1
            elif problem == "missing":
                report.missing.append((run_id, "listed in the manifest, file absent"))
            else:
                report.damaged.append((run_id, problem))
            continue
        _classify_listed(store, run_id, expected, seen, report)
    for identity, (run_id, _) in expected.items():
        if identity not in seen:
            report.missing.append((run_id, "a run of the grid the manifest does not list"))
    return report


def _classify_listed(
    store: CellStore,
    run_id: str,
    expected: dict[str, tuple[str, dict[str, Any]]],
    seen: set[str],
    report: FolderReport,
) -> None:
    """A listed run whose id is not a current one: stale (same cell and seed) or foreign."""
    try:
        data, _ = store.read_record(check_run_id(run_id))  # a unit file or a run file
        stored_key = data["key"]
        digest = hashlib.sha256(canonical_json(stored_key).encode()).hexdigest()[:20]
        identity = _identity(stored_key)
    except FileNotFoundError:
        report.stale.append((run_id, "listed run of other code; its file is absent"))
        return
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as err:
        # UnsafeResultsFolder and TooDeep are ValueErrors; RecursionError: a key nested deeper
        # than the serialiser goes.
        report.damaged.append((run_id, f"unreadable ({type(err).__name__}: {err})"))
        return
    if not run_id.endswith(f"-{digest}"):
        report.foreign.append((run_id, "its name does not match the key inside it"))
        return
    if identity not in expected:
        report.foreign.append((run_id, "belongs to no cell and seed of the manifest's grid"))
        return
    seen.add(identity)
    reason = _changed(stored_key, expected[identity][1])
    if data.get("version") != FORMAT_VERSION:
        reason = f"older file format {data.get('version')!r}; {reason}"
    report.stale.append((run_id, f"{reason}; current run id {expected[identity][0]}"))


def verify_tree(out: str | Path) -> tuple[list[FolderReport], dict[str, str]]:
    """Every results folder of ``out`` and the stale claims of its claims.csv (if any).

    ``out`` is a results folder (it has a manifest) or a ``dp-experts reproduce`` folder (one
    results folder per claim and sweep under ``runs/``). Raises ValueError when it is neither.
    Symbolic links are not followed.
    """
    out = Path(out)
    if not out.is_dir():
        raise ValueError(f"{str(out)!r} is not a folder")
    if os.path.lexists(out / MANIFEST):
        return [verify_folder(out)], {}
    folders = []
    runs = out / "runs"
    if runs.is_dir() and not runs.is_symlink():
        for root, dirs, files in os.walk(runs):  # followlinks=False
            dirs.sort()
            if MANIFEST in files:
                folders.append(verify_folder(root))
    stale: dict[str, str] = {}
    forget_fingerprints()
    if os.path.lexists(out / "claims.csv"):
        from dp_experts_env.evaluation.reproduce import stale_claims

        stale = stale_claims(out)
    if not folders and not os.path.lexists(out / "claims.csv"):
        raise ValueError(
            f"{str(out)!r} has no {MANIFEST} and no reproduce runs: not a results folder written "
            "by `dp-experts compare`/`run`/`reproduce`"
        )
    return folders, stale
