"""The results folder: one unit file per finished unit, each run in it keyed by what makes its rows.

Cache key
    A run -- one seed index of one (agent, env, epsilon) cell -- is stored under a key made of
    the cell (agent name and parameters, env id and parameters, epsilon, base seed, recorded
    rounds, seed index), the env and agent seeds derived for it, the package version, a SHA-256
    of the source of the learner's and the env's modules (and every project module they import,
    see :func:`code_fingerprint`; the env's side includes the episode loop and
    ``evaluation/grid.py``, which derives the seeds and the recorded rounds), the plug-ins in
    effect and their code (:func:`plugin_fingerprint`; only when there are any), and the SHA-256 of
    the content of every data file a parameter names (a replay ``losses`` path). Its run id is
    a readable prefix and a hash of the key: a changed key is another run id, so the run is
    played again; the old run is ignored.

Per-seed runs
    Cells are played as one batch of seeds, but each seed's rows are a run of their own. Raising
    ``seeds`` from 4 to 6 therefore plays seeds 4 and 5 only. A seed's rows do not depend on the
    other seeds of its batch (seeds are keyed by seed index), so they are the same whether the
    seed ran in a 4-seed or a 6-seed grid.

Unit files
    A finished unit's runs are written together as ``cells/unit-<digest>.pack`` (see "the store"
    below), once, when the unit is back: a crash loses at most the units in flight. Run files
    of earlier versions (``cells/<run id>.json``, one run each, the same two-line record) are
    still found by run id and checked the same way.

Manifest
    ``manifest.json`` lists the run ids of the grid last run in the folder
    (:mod:`~dp_experts_env.evaluation.manifest`); the results table, the summary and
    ``dp-experts plot`` read exactly those runs, never other runs of ``cells/``.

Every file is written to a temporary file in the same folder and renamed into place, unit files
without an fsync. A run whose stored copy does not parse, belongs to another key or fails its
checksum (or sits in a unit file that fails its size or checksum) is reported and re-run; a
valid file is never rewritten. Nothing in a results folder may make a sweep read or write
outside it: :mod:`~dp_experts_env.evaluation.safe_files` (the trust boundary). The code and
data hashes of the key: :mod:`~dp_experts_env.evaluation.fingerprints`. This module re-exports
the public names of those three.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation import columns as columns_mod
from dp_experts_env.evaluation.csv_text import write_frame
from dp_experts_env.evaluation.fingerprints import (
    code_fingerprint,
    data_fingerprint,
    forget_fingerprints,
    module_fingerprint,
    plugin_fingerprint,
)
from dp_experts_env.evaluation.grid import Cell, canonical_json, json_default
from dp_experts_env.evaluation.manifest import MANIFEST, manifest_data, read_manifest
from dp_experts_env.evaluation.packs import (
    FORMAT_VERSION,
    PACK_SUFFIX,
    PACK_VERSION,
    DamagedPack,
    key_digest,
    parse_pack,
    record_header,
    record_problem,
    split_record,
)
from dp_experts_env.evaluation.safe_files import (
    ResultsFolderBusy,
    SweepError,
    TooDeep,
    UnsafeResultsFolder,
    check_run_id,
    folder_lock,
    loads,
    plain_dir,
    read_first_line,
    read_plain,
    write_atomic,
)

__all__ = [
    "CellStore",
    "DamagedPack",
    "FORMAT_VERSION",
    "TooDeep",
    "MANIFEST",
    "PACK_VERSION",
    "ResultsFolderBusy",
    "SweepError",
    "UnsafeResultsFolder",
    "VOLATILE_KEY_FIELDS",
    "check_run_id",
    "code_fingerprint",
    "data_fingerprint",
    "folder_lock",
    "forget_fingerprints",
    "manifest_data",
    "load_results",
    "manifest_problem",
    "loads",
    "module_fingerprint",
    "plugin_fingerprint",
    "plain_dir",
    "read_manifest",
    "read_plain",
    "write_atomic",
]

def _write_json(path: Path, data: Any) -> Path:
    # json.dumps, not json.dump: dump streams through the pure-Python encoder, dumps uses the C
    # one (the same text, ~4x less CPU for a cell's rows).
    text = json.dumps(data, separators=(",", ":"), allow_nan=True, default=json_default)
    return write_atomic(path, lambda fh: fh.write(text))


#: Parsed unit files kept per store: reads are grouped by file (:meth:`CellStore.frame`) and
#: checks use each file's kept summary, so one is enough; each costs about the file's size.
_PACK_CACHE = 1


class CellStore:
    """The ``cells/`` folder of a results directory: one unit file per finished unit of work.

    Runs (one seed of one cell) are found by their run id in the unit files' headers, then in
    the run files of earlier versions (``cells/<run id>.json``).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.cells_dir = self.root / "cells"
        self._index: dict[str, list[str]] | None = None  # run id -> unit files, newest first
        self._unsafe: list[str] = []  # unit files refused while indexing (links, not files)
        self._unreadable: list[str] = []  # unit files whose header does not parse
        self._packs: dict[str, dict[str, tuple[bytes, bytes]] | DamagedPack] = {}  # LRU
        self._shared: dict[tuple[str, ...], list[str]] = {}  # equal column lists, kept once
        self._summaries: dict[str, dict[str, tuple[dict, str, str]] | DamagedPack] = {}
        self._file_columns: dict[str, list[str]] = {}  # run file's columns, as check() read it

    # ---------------------------------------------------------------- keys
    @staticmethod
    def key(cell: Cell, seed_index: int) -> dict[str, Any]:
        """Everything that determines the rows of one seed of a cell (JSON-ready)."""
        return CellStore._keys(cell, [seed_index])[0]

    @staticmethod
    def _keys(cell: Cell, seed_indices: Iterable[int]) -> list[dict[str, Any]]:
        description = cell.to_dict()
        description.pop("seed_indices")
        common = {
            "format": FORMAT_VERSION,
            **description,
            "code": code_fingerprint(cell.agent.name, cell.env.id),
            "data": {
                **data_fingerprint(cell.env.params, "env."),
                **data_fingerprint(cell.agent.params, "agent."),
            },
        }
        common = _frozen(json.loads(canonical_json(common)))  # once per cell: the stored form
        seeds = [int(i) for i in seed_indices]
        block = cell.with_seeds(seeds)
        keys = []
        for i, env_seed, agent_seed in zip(
            seeds, block.env_seeds(), block.agent_seeds(), strict=True
        ):
            # The seeds the episode is played with: a changed derivation changes the key even
            # if evaluation/grid.py (hashed in "code") were not where it changed.
            key = _RunKey(common, seed=i, env_seed=int(env_seed), agent_seed=int(agent_seed))
            # JSON-ready (string keys, Python values): its canonical_json is this text, which
            # a JSON round trip leaves unchanged, so one hash serves the run id and the check.
            text = json.dumps(key, sort_keys=True, separators=(",", ":"))
            key.digest = hashlib.sha256(text.encode()).hexdigest()
            keys.append(key)
        return keys

    @staticmethod
    def run_id(cell: Cell, key: Mapping[str, Any]) -> str:
        """File stem of a run: readable prefix plus the key's hash."""
        if type(key) is _RunKey:
            digest = key.digest
        else:
            digest = hashlib.sha256(canonical_json(key).encode()).hexdigest()
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in cell.agent.name)
        eps = "np" if cell.epsilon is None else f"e{cell.epsilon:g}"
        return f"{safe}-{eps}-s{key['seed']}-{digest[:20]}"

    def runs(self, cell: Cell) -> list[tuple[int, dict[str, Any], str]]:
        """(seed index, key, run id) of every seed of the cell."""
        return [
            (key["seed"], key, self.run_id(cell, key))
            for key in self._keys(cell, cell.seed_indices)
        ]

    def path(self, run_id: str) -> Path:
        """Where an earlier version stored a run alone (the run id is checked first)."""
        return self.cells_dir / f"{check_run_id(run_id)}.json"

    # ---------------------------------------------------------------- unit files
    def _pack_index(self) -> dict[str, list[str]]:
        """Run id -> the unit files listing it (newest first), from the files' first lines."""
        if self._index is not None:
            return self._index
        index: dict[str, list[str]] = {}
        self._unsafe, self._unreadable = [], []
        folder = plain_dir(self.cells_dir, create=False)
        found = []
        if folder.is_dir():
            for entry in os.scandir(folder):
                if entry.name.endswith(PACK_SUFFIX) and not entry.name.startswith("."):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
        for _, name in sorted(found, reverse=True):
            try:
                header = loads(read_first_line(folder / name))
                runs = header["runs"] if isinstance(header, dict) else None
            except UnsafeResultsFolder:
                self._unsafe.append(name)
                continue
            except OSError as err:
                if err.errno == errno.ELOOP:
                    self._unsafe.append(name)
                continue
            except (ValueError, KeyError, TypeError):  # names no run: its runs are missing
                self._unreadable.append(name)
                continue
            if isinstance(runs, list):
                for run_id in runs:
                    if isinstance(run_id, str):
                        index.setdefault(run_id, []).append(name)
        self._index = index
        return index

    def _pack(self, name: str) -> dict[str, tuple[bytes, bytes]] | DamagedPack:
        """The parsed records of a unit file, or the DamagedPack saying why it is refused."""
        if name in self._packs:
            self._packs[name] = self._packs.pop(name)  # most recently used last
            return self._packs[name]
        try:
            parsed: Any = parse_pack(read_plain(self.cells_dir / name), name)
        except DamagedPack as err:
            parsed = err
        except FileNotFoundError:
            parsed = DamagedPack(f"cells/{name} disappeared")
        while len(self._packs) >= _PACK_CACHE:
            del self._packs[next(iter(self._packs))]
        self._packs[name] = parsed
        return parsed

    def damaged_packs(self) -> dict[str, str]:
        """Unit files that failed their checks so far (name -> why), and refused links."""
        found = {n: str(p) for n, p in self._packs.items() if isinstance(p, DamagedPack)}
        for name in self._unsafe:
            found[name] = f"cells/{name} is not a plain file (a symbolic link?); not read"
        for name in self._unreadable:
            found[name] = f"cells/{name} is damaged (its header does not parse)"
        return found

    def _records(self, run_id: str) -> Iterator[tuple[str, dict[str, Any] | None, bytes, str]]:
        """Every stored copy of a run: (where, header, payload, problem) -- unit files first.

        ``problem`` is "" for a record that passes its own checks (format and checksum; the key
        is the caller's to compare), else why it cannot be used (``header`` None when the file
        itself is refused). Nothing is yielded when no copy exists.
        """
        check_run_id(run_id)
        for name in self._pack_index().get(run_id, []):
            parsed = self._pack(name)
            if isinstance(parsed, DamagedPack):
                yield f"cells/{name}", None, b"", str(parsed)
                continue
            line, payload = parsed[run_id]
            header = record_header(line)
            if header is None:
                yield f"cells/{name}", None, b"", f"cells/{name} has an unreadable record"
                continue
            yield f"cells/{name}", header, payload, record_problem(header, payload)
        plain_dir(self.cells_dir, create=False)
        try:
            header, payload = split_record(read_plain(self.path(run_id)))
        except FileNotFoundError:
            return
        except UnsafeResultsFolder:
            raise
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield f"cells/{run_id}.json", None, b"", f"unreadable ({type(err).__name__})"
            return
        yield f"cells/{run_id}.json", header, payload, record_problem(header, payload)

    def read_record(self, run_id: str) -> tuple[dict[str, Any], bytes]:
        """(header, payload bytes) of a run's first readable copy; FileNotFoundError if none."""
        for _, header, payload, _problem in self._records(run_id):
            if header is not None:
                return header, payload
        raise FileNotFoundError(f"no stored copy of run {run_id}")

    # ---------------------------------------------------------------- reading
    def _summary(self, name: str) -> dict[str, tuple[dict, str, str]] | DamagedPack:
        """Per run of a unit file: (row count and columns, key digest, problem); kept.

        What :meth:`check` and the streamed table need, so they never parse the file again
        (about 0.3 kB per run: equal column lists are shared).
        """
        if name not in self._summaries:
            parsed = self._pack(name)
            if isinstance(parsed, DamagedPack):
                self._summaries[name] = parsed
                return parsed
            summary: dict[str, tuple[dict, str, str]] = {}
            for run_id, (line, payload) in parsed.items():
                header = record_header(line)
                if header is None:
                    summary[run_id] = ({}, "", f"cells/{name} has an unreadable record")
                    continue
                columns = header.get("columns")
                if isinstance(columns, list):
                    columns = self._shared.setdefault(tuple(map(str, columns)), list(columns))
                kept = {"version": header.get("version"), "n": header.get("n"), "columns": columns}
                summary[run_id] = (
                    kept,
                    key_digest(header.get("key")),
                    record_problem(header, payload),
                )
            self._summaries[name] = summary
        return self._summaries[name]

    def check(self, run_id: str, key: Mapping[str, Any]) -> tuple[dict | None, str]:
        """(header, "") for a valid copy; (None, reason) otherwise (reason "missing" if absent).

        Valid: the current format, exactly this key, and the checksum of its rows (and, in a
        unit file, the file's own size and checksum). The reason names the file. For a run in a
        unit file the header holds only its version, row count and columns.
        """
        wanted: list[str] = []  # the key's digest, computed once a stored copy is found

        def differs(digest: str) -> bool:
            if not wanted:
                wanted.append(_digest(key))
            return digest != wanted[0]

        reasons = []
        try:
            for name in self._pack_index().get(check_run_id(run_id), []):
                summary = self._summary(name)
                if isinstance(summary, DamagedPack):
                    reasons.append(str(summary))
                    continue
                header, digest, problem = summary.get(run_id, ({}, "", "not in the file"))
                if not problem and differs(digest):
                    problem = "belongs to another cell or code version"
                if not problem:
                    return header, ""
                reasons.append(f"{problem} (in cells/{name})")
            header, problem = self._check_run_file(run_id, differs)
        except UnsafeResultsFolder as err:
            return None, f"refused ({err})"
        if not problem:
            return header, ""
        return None, reasons[0] if reasons and problem == "missing" else problem

    def _check_run_file(
        self, run_id: str, differs: Callable[[str], bool]
    ) -> tuple[dict | None, str]:
        """:meth:`check` for the run file of an earlier version (``cells/<run id>.json``)."""
        try:
            plain_dir(self.cells_dir, create=False)
            header, payload = split_record(read_plain(self.path(run_id)))
        except FileNotFoundError:
            return None, "missing"
        except UnsafeResultsFolder:
            raise
        except (OSError, ValueError, KeyError, TypeError) as err:
            problem = f"unreadable ({type(err).__name__})"
        else:
            problem = record_problem(header, payload)
            if not problem and differs(key_digest(header.get("key"))):
                problem = "belongs to another cell or code version"
            if not problem:
                columns = header.get("columns")
                if isinstance(columns, list) and all(isinstance(c, str) for c in columns):
                    shared = self._shared.setdefault(tuple(columns), list(columns))
                    self._file_columns[run_id] = shared
                return header, ""
        self._file_columns.pop(run_id, None)
        return None, f"{problem} (in cells/{run_id}.json)"

    def _load(self, run_id: str) -> tuple[dict[str, Any], int] | None:
        """(columns, row count) of a run's first copy that passes its checks; None otherwise."""
        for _, header, payload, problem in self._records(run_id):
            if header is None or problem:
                continue
            try:
                n = int(header["n"])
                data = loads(payload)
                if n < 1 or any(len(v) != n for v in data["cols"].values()):
                    continue
                return data, n
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
        return None

    # ---------------------------------------------------------------- writing
    def save_unit(
        self,
        results: Iterable[tuple[Cell, Mapping[int, Any]]],
        runs: Callable[[Cell], list[tuple[int, dict[str, Any], str]]] | None = None,
    ) -> Path:
        """Write a finished unit's runs as one unit file (atomically, without an fsync).

        ``results``: ``(cell, {seed index: run columns})`` pairs
        (:func:`~dp_experts_env.evaluation.columns.by_seed`), every seed of each cell present.
        ``runs``: :meth:`runs` of a cell, when the caller has the keys already (a sweep derived
        them to check the folder).
        A kill during the write leaves no file (the unit is played again); a power loss may
        leave a torn file, which fails its checksum and is played again.
        """
        plain_dir(self.cells_dir)
        run_ids: list[str] = []
        body: list[bytes] = []
        for cell, played in results:
            for seed, key, run_id in (runs or self.runs)(cell):
                run = played.get(seed)
                if not run:
                    raise RuntimeError(f"cell {cell.cell_id} returned no rows for seed {seed}")
                payload = columns_mod.payload(run)
                header = {
                    "version": FORMAT_VERSION,
                    "key": key,
                    "checksum": hashlib.sha256(payload).hexdigest(),
                    "n": int(run["n"]),
                    "columns": list(run["order"]),
                }
                head = json.dumps(header, separators=(",", ":"), default=json_default).encode()
                run_ids.append(run_id)
                body += [head, b"\n", payload, b"\n"]
        rest = b"".join(body)
        top = {
            "pack": PACK_VERSION,
            "runs": run_ids,
            "bytes": len(rest),
            "checksum": hashlib.sha256(rest).hexdigest(),
        }
        name = "unit-" + hashlib.sha256("\n".join(run_ids).encode()).hexdigest()[:20]
        head = json.dumps(top, separators=(",", ":")).encode() + b"\n"
        path = write_atomic(
            self.cells_dir / f"{name}{PACK_SUFFIX}",
            lambda fh: fh.write(head + rest),
            text=False,
            durable=False,
        )
        self._packs.pop(path.name, None)
        self._summaries.pop(path.name, None)
        for run_id in run_ids:  # a run played again had no usable run file: drop the old one
            self.path(run_id).unlink(missing_ok=True)  # (a planted link is removed, not followed)
            self._file_columns.pop(run_id, None)
        if self._index is not None:
            for run_id in run_ids:
                self._index.setdefault(run_id, []).insert(0, path.name)
        return path

    def save_cell(self, cell: Cell, rows: list[dict[str, Any]]) -> Path:
        """Write a played cell's rows (split by seed) as one unit file."""
        return self.save_unit([(cell, columns_mod.by_seed(rows))])

    def remove_temporary(self) -> int:
        """Delete leftovers of killed writes (only safe while holding the folder lock)."""
        count = 0
        for folder in (self.root, plain_dir(self.cells_dir, create=False)):
            if folder.is_dir():
                for tmp in folder.glob(".tmp-*"):
                    tmp.unlink(missing_ok=True)
                    count += 1
        return count

    # ---------------------------------------------------------------- manifest
    def write_manifest(
        self, grid_dict: Mapping[str, Any], run_ids: list[str], complete: bool = False
    ) -> Path:
        """Record which runs make up the folder's current grid.

        ``complete`` says every listed run and ``results.csv`` were written (a sweep writes the
        manifest before it plays, then again at its end).
        """
        return _write_json(self.root / MANIFEST, manifest_data(grid_dict, run_ids, complete))

    def manifest_is(self, grid_dict: Mapping[str, Any], run_ids: list[str]) -> bool:
        """True when the folder's manifest is complete and lists exactly this grid and runs."""
        try:
            current = read_manifest(self.root)
        except ValueError:
            return False
        return current == manifest_data(grid_dict, run_ids, True)

    def _source(self, run_id: str) -> str:
        """The file a run is read from first (groups reads so each unit file is parsed once)."""
        names = self._pack_index().get(run_id)
        return names[0] if names else ""

    def frame(self, run_ids: Iterable[str], *, last_only: bool = False) -> pd.DataFrame:
        """The rows of the listed runs as one DataFrame, in manifest order.

        Built column by column from the stored runs, read grouped by unit file (each parsed
        once): a run's constant columns are kept once (an interned string, a number) and
        repeated at the end, its varying columns as numpy arrays, so the process never holds a
        Python object per row (about 150 bytes per row of 18 columns; docs/grid.md). With
        ``last_only`` only each run's row at its last recorded round is kept (what the summary
        reads): memory then grows with the runs, not the rows. Raises ValueError naming how
        many runs are missing or damaged, and the damaged unit files.
        """
        run_ids = list(run_ids)
        return self._assembled(run_ids, self._loaded(run_ids, last_only=last_only))

    def _loaded(
        self, run_ids: list[str], *, last_only: bool = False, lasts: list[Any] | None = None
    ) -> list[Any]:
        """Per run (in order): its columns as :meth:`frame` assembles them; None if absent.

        ``lasts`` (if given) gets each run's row at its last round, from the same read.
        """
        for run_id in run_ids:
            check_run_id(run_id)
        reading = sorted(range(len(run_ids)), key=lambda i: self._source(run_ids[i]))
        # Per run, until assembled in manifest order: its column names and constants as tuples
        # (equal name tuples shared, strings interned) and its varying columns as arrays.
        loaded: list[Any] = [None] * len(run_ids)
        last: list[Any] = [None] * len(run_ids)
        shapes: dict[tuple[str, ...], tuple[str, ...]] = {}

        def kept(data: dict[str, Any], n: int) -> tuple:
            names = tuple(data["order"])
            const = tuple(data["const"])
            return (
                shapes.setdefault(names, names),
                shapes.setdefault(const, const),
                tuple(sys.intern(v) if isinstance(v, str) else v for v in data["const"].values()),
                {k: np.asarray(v) for k, v in data["cols"].items()},
                n,
            )

        for i in reading:
            got = self._load(run_ids[i])
            if got is None:
                continue
            data, n = got
            if lasts is not None:
                last[i] = kept(_last_row(data), 1) if n > 1 else kept(data, n)
            if last_only and n > 1:
                data, n = _last_row(data), 1
            loaded[i] = kept(data, n)
            del data, got
        if lasts is not None:
            lasts.extend(last)
        return loaded

    def _assembled(self, run_ids: list[str], loaded: list[Any]) -> pd.DataFrame:
        """The DataFrame of :meth:`frame` from :meth:`_loaded`'s runs (emptied as it goes)."""
        missing = [run_ids[i] for i, got in enumerate(loaded) if got is None]
        if missing:
            damaged = self.damaged_packs()
            if self._unsafe:
                raise UnsafeResultsFolder(
                    f"{self.cells_dir / self._unsafe[0]} is a symbolic link or not a plain file; "
                    "files of a results folder are never followed out of it (remove it)"
                )
            also = f"; {'; '.join(sorted(damaged.values()))}" if damaged else ""
            raise ValueError(
                f"{len(missing)} of {len(run_ids)} runs listed in {self.root / MANIFEST} are "
                f"missing or damaged (first: {missing[0]}){also}; run the same compare/run "
                "command again to complete the folder"
            )
        order: dict[str, None] = {}
        lengths: list[int] = []
        const: dict[str, list[Any]] = {}
        varying: dict[str, list[np.ndarray]] = {}
        for k, got in enumerate(loaded):
            names, const_names, const_values, cols, n = got
            loaded[k] = None  # assembled: the per-run copy can go
            constants = dict(zip(const_names, const_values, strict=True))
            for name in names:
                if name not in order:
                    order[name] = None
                    const[name] = [math.nan] * k  # earlier runs lack the column: NaN, as concat
                    varying[name] = []
            for name in order:
                if name in constants:
                    const[name].append(constants[name])
                elif name in cols:
                    const[name].append(_VARYING)
                    varying[name].append(cols[name])
                else:
                    const[name].append(math.nan)
            lengths.append(n)
        if not lengths:
            return pd.DataFrame()
        counts = np.asarray(lengths)
        columns = {name: _assemble(const[name], varying[name], counts) for name in order}
        return pd.DataFrame(columns, copy=False)

    def write_csv(
        self, run_ids: list[str], fh: Any, *, batch: int = 500, last_rows: bool = False
    ) -> pd.DataFrame | None:
        """Write the listed runs' rows as CSV to ``fh``, ``batch`` runs at a time.

        Memory is bounded by a batch, not the table. The columns are the union over the runs in
        order of first appearance (a run without a column leaves it empty), as
        ``frame(run_ids).to_csv(fh, index=False)`` writes them. With ``last_rows`` it returns
        ``frame(run_ids, last_only=True)``, taken from the same reads (each run read once).
        """
        order: dict[str, None] = {}
        for run_id in run_ids:
            order.update(dict.fromkeys(self._column_names(run_id)))
        columns = list(order)
        lasts: list[Any] | None = [] if last_rows else None
        for start in range(0, len(run_ids), batch):
            ids = run_ids[start : start + batch]
            part = self._assembled(ids, self._loaded(ids, lasts=lasts))
            write_frame(part.reindex(columns=columns), fh, header=start == 0)
        return None if lasts is None else self._assembled(list(run_ids), lasts)

    def _column_names(self, run_id: str) -> list[str]:
        in_units = self._pack_index().get(run_id, [])
        for name in in_units:  # kept per unit file: parsed once
            summary = self._summary(name)
            if not isinstance(summary, DamagedPack) and run_id in summary:
                names = summary[run_id][0].get("columns")
                if isinstance(names, list):
                    return names
        if not in_units and run_id in self._file_columns:
            # The run file is the run's only copy, read_record's answer: as check() read it
            # (a sweep holds the folder's lock; save_unit forgets the runs it writes).
            return self._file_columns[run_id]
        header, payload = self.read_record(run_id)
        names = header.get("columns")
        if isinstance(names, list):
            return names
        return json.loads(payload)["order"]  # a file written without the list in its header


def _read_only(self: Any, *args: Any, **kwargs: Any) -> None:
    raise TypeError("a run key is read-only (its digest is checked): edit a copy, dict(key)")


class _FrozenDict(dict):
    """A dict nested in a run key: read-only; a copy or an unpickled one is a plain dict."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)


class _FrozenList(list):
    """A list nested in a run key: read-only; a copy or an unpickled one is a plain list."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self) -> tuple:
        return list, (list(self),)


class _RunKey(_FrozenDict):
    """A run's key as :meth:`CellStore.runs` derives it, with the SHA-256 of its canonical JSON.

    Hashed once where it is made: the run id and :meth:`CellStore.check` read ``digest``
    instead of serialising the key again (twice per run), so the key is read-only to its
    nested values (an edit in place would be checked against the old digest).
    """

    __slots__ = ("digest",)


def _frozen(value: Any) -> Any:
    """``value`` (JSON-ready) with its dicts and lists read-only, recursively."""
    if isinstance(value, dict):
        return _FrozenDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    return value


def _digest(key: Mapping[str, Any]) -> str:
    """SHA-256 of the key's canonical JSON, the digest of the key as stored (its JSON form)."""
    if type(key) is _RunKey:
        return key.digest
    return key_digest(json.loads(canonical_json(key)))


def _last_row(data: dict[str, Any]) -> dict[str, Any]:
    """A run's columns reduced to its row at the last recorded round."""
    rounds = data["cols"].get("round")
    j = int(np.argmax(rounds)) if rounds is not None else -1
    const = dict(data["const"])
    const.update({name: values[j] for name, values in data["cols"].items()})
    return {"order": data["order"], "const": const, "cols": {}}


#: Marks a run whose column varies (its values are in the varying arrays, in run order).
_VARYING = object()


def _assemble(per_run: list[Any], arrays: list[np.ndarray], counts: np.ndarray) -> Any:
    """One column from per-run constants (repeated) and per-run arrays (concatenated)."""
    if not arrays:
        series = pd.Series(per_run)  # the dtype pandas infers for these values, once per run
        return series.repeat(counts).to_numpy()
    parts = []
    it = iter(arrays)
    for value, n in zip(per_run, counts, strict=True):
        parts.append(next(it) if value is _VARYING else np.asarray([value] * int(n)))
    return pd.Series(np.concatenate(parts) if len(parts) > 1 else parts[0]).to_numpy()


#: Key fields that change with the code, the data, the seed derivation or the layout; the rest
#: of a key names the cell and the seed.
VOLATILE_KEY_FIELDS = ("format", "code", "data", "env_seed", "agent_seed")


def manifest_problem(manifest: Mapping[str, Any], store: CellStore) -> str:
    """Why a manifest's run list is not the folder's runs of its own grid ("" when it is).

    The manifest's checksum is plain SHA-256: whoever edits the file can recompute it. So its
    run list is re-derived from the unit files: every listed run that is stored must carry a
    key of a (cell, seed) of the manifest's grid, under the run id that key hashes to, each
    (cell, seed) once, and the list must have one run per (cell, seed). A manifest edited to
    draw other runs (another grid's, a stale key's, a duplicate, a dropped one) is named. Runs
    that are absent or damaged are the readers' to report.
    """
    from dp_experts_env.evaluation.grid import Grid

    try:
        cells = Grid.from_dict(manifest["grid"]).cells()
    except (TypeError, ValueError, KeyError, RecursionError) as err:
        return f"its grid cannot be built ({err})"
    wanted: set[str] = set()
    for cell in cells:
        description = cell.to_dict()
        description.pop("seed_indices")
        base = json.loads(canonical_json(description))
        wanted.update(canonical_json({**base, "seed": int(i)}) for i in cell.seed_indices)
    runs = list(manifest["runs"])
    if len(runs) != len(wanted):
        return (
            f"it lists {len(runs)} runs for the {len(wanted)} cells and seeds of its grid: the "
            "manifest was edited"
        )
    seen: set[str] = set()
    for run_id in sorted(runs, key=store._source):  # each unit file parsed once
        try:
            header, _ = store.read_record(run_id)
            key = header["key"]
            kept = {k: v for k, v in key.items() if k not in VOLATILE_KEY_FIELDS}
            identity = canonical_json(kept)
            digest = hashlib.sha256(canonical_json(key).encode()).hexdigest()[:20]
        except FileNotFoundError:
            continue
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue  # damaged: reported by whoever reads its rows
        if not run_id.endswith(f"-{digest}"):
            return f"it lists run {run_id}, whose file holds another key: the manifest was edited"
        if identity not in wanted:
            return (
                f"it lists run {run_id}, which belongs to no cell and seed of its grid: the "
                "manifest was edited"
            )
        if identity in seen:
            return f"it lists two runs of one cell and seed ({run_id}): the manifest was edited"
        seen.add(identity)
    return ""


def load_results(folder: str | Path) -> pd.DataFrame:
    """Exactly the rows of the grid last run in ``folder`` (per its manifest).

    Raises:
        ValueError: no manifest, a damaged one, one whose run list does not match its unit
            files (:func:`manifest_problem`), or missing runs.
    """
    manifest = read_manifest(folder)
    store = CellStore(folder)
    problem = manifest_problem(manifest, store)
    if problem:
        raise ValueError(
            f"{Path(folder) / MANIFEST} does not match the folder's unit files ({problem}); run "
            "compare again to rewrite it"
        )
    frame = store.frame(manifest["runs"])
    if frame.empty:
        raise ValueError(f"the manifest of {str(folder)!r} lists no runs")
    return frame
