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
    ``manifest.json`` lists the run ids of the grid last run in the folder; the results table,
    the summary and ``dp-experts plot`` read exactly those runs, never other runs of ``cells/``
    (an earlier grid's, a stale key's) or temporary files. It carries a checksum of its grid
    and run list, and ``complete`` once every listed run and ``results.csv`` are written.

Every file is written to a temporary file in the same folder and renamed into place (atomic on
POSIX and Windows), with the mode the umask asks for; unit files without an fsync. A run whose
stored copy does not parse, belongs to another key or fails its checksum (or sits in a unit file
that fails its size or checksum) is reported and re-run; a valid file is never rewritten.

Trust boundary
    A results folder may come from someone else (a shared group folder, an unpacked archive), so
    nothing in it may make a sweep or a plot read or write outside it: run ids are checked to be
    plain file names before any path is built from them (:func:`check_run_id`); files are read
    with ``O_NOFOLLOW`` and must be regular files (:func:`read_plain`); the folders written into
    (``cells/``, ``figures/``) must be real folders, not symbolic links (:func:`plain_dir`);
    outputs are renamed over their destination, which replaces a planted symbolic link instead
    of following it; the ``.lock`` file is opened with ``O_NOFOLLOW``, must be a regular file
    with one link, and is never truncated (:func:`folder_lock`).
"""

from __future__ import annotations

import ast
import contextlib
import errno
import functools
import hashlib
import importlib.util
import json
import math
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation import columns as columns_mod
from dp_experts_env.evaluation.grid import Cell, canonical_json, json_default, plain_numbers

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

#: Version of the run-file layout and of the key's fields; bump it when the episode loop or the
#: seed derivation changes meaning in a way the code hash would not see.
#: 3: the derived seeds and the source of evaluation/grid.py joined the key; manifest checksum.
FORMAT_VERSION = 3
MANIFEST = "manifest.json"


class SweepError(RuntimeError):
    """A sweep could not proceed for a reason outside the grid (folder busy, workers died)."""


class ResultsFolderBusy(SweepError):
    """Another process holds the results folder's lock."""


class UnsafeResultsFolder(ValueError):
    """A results folder holds a file that could make us read or write outside it."""


# ----------------------------------------------------------------------------- the boundary
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows, where symlinks need privileges
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a planted FIFO must not hang the open
#: What :meth:`CellStore.run_id` produces: a readable prefix of letters, digits and ``_.+-``
#: (``e1e+06``), no leading dot, no separator, at most 200 characters.
_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def check_run_id(run_id: Any) -> str:
    """Return ``run_id`` if it is a plain file stem (no separator, no ``..``); else ValueError.

    Run ids come from a manifest, which is a file of the folder: they are checked before any
    path is built from them, so ``../../elsewhere/file`` cannot make us read outside the folder.
    """
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UnsafeResultsFolder(
            f"run id {run_id!r} is not a plain file name (letters, digits and _.+- only, no "
            "'..'); the manifest was altered: run compare again into a fresh folder"
        )
    return run_id


def plain_dir(path: str | Path, *, create: bool = True) -> Path:
    """``path`` as a real folder (created if missing); UnsafeResultsFolder for a symlink.

    A folder of the results folder that is a symbolic link (``figures -> ~/``) would make every
    file written "into" it land elsewhere.
    """
    path = Path(path)
    if create:
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if create:
            raise
        return path
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeResultsFolder(
            f"{path} is {'a symbolic link' if stat.S_ISLNK(info.st_mode) else 'not a folder'}; "
            "a results folder's sub-folders must be plain folders (remove it, or use another "
            "folder)"
        )
    return path


def read_plain(path: str | Path) -> bytes:
    """The bytes of a regular file, never following a symbolic link at ``path``.

    Raises:
        FileNotFoundError: no file there.
        UnsafeResultsFolder: a symbolic link, a FIFO, a device or a folder.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeResultsFolder(
                f"{path} is a symbolic link; files of a results folder are never followed out "
                "of it (remove the link)"
            ) from err
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise UnsafeResultsFolder(f"{path} is not a regular file")
        return fh.read()


# ----------------------------------------------------------------------------- file writing
def _umask() -> int:
    # os.umask can only be read by setting it; restore it at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(
    path: str | Path, writer: Callable[[Any], None], *, text: bool = True, durable: bool = True
) -> Path:
    """Write a file via a temporary file in the same folder and an atomic rename.

    Args:
        path: the destination.
        writer: called with the open temporary file.
        text: open in text mode (else binary).
        durable: ``fsync`` before the rename, so the file survives a power loss too. Run files
            skip it (it cost ~7 ms per file, most of a sweep of short cells): a run file torn
            by a power loss fails its checksum and is played again.

    A full disk or a kill leaves the previous file (or none) in place, never a truncated one (an
    OSError without a file name, ENOSPC from a write, gets ``path`` as its name). The
    file gets the mode an ordinary ``open`` would give it (0666 minus the umask), not mkstemp's
    0600.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w" if text else "wb", **({"newline": ""} if text else {})) as fh:
            writer(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(path)  # a full disk names the file it was writing (ENOSPC)
        raise
    return path


def _write_json(path: Path, data: Any) -> Path:
    # json.dumps, not json.dump: dump streams through the pure-Python encoder, dumps uses the C
    # one (the same text, ~4x less CPU for a cell's rows).
    text = json.dumps(data, separators=(",", ":"), allow_nan=True, default=json_default)
    return write_atomic(path, lambda fh: fh.write(text))


# ----------------------------------------------------------------------------- fingerprints
# Aggregating package __init__ modules import every learner / env; following them would make
# every key depend on every module. Evaluation code other than the episode loop (tables, plots,
# CLI) does not change rows.
_UNFOLLOWED = ("agents", "dp_experts_env", "dp_experts_env.cli", "dp_experts_env.__main__")


#: Evaluation modules that change rows: the episode loop, and the grid module, which derives
#: every env and agent seed and the recorded rounds.
_ROW_MODULES = ("dp_experts_env.evaluation.episode", "dp_experts_env.evaluation.grid")


def _project_module(name: str) -> bool:
    if name in _UNFOLLOWED:
        return False
    if name.startswith("dp_experts_env.evaluation"):
        return name in _ROW_MODULES
    return name.startswith(("agents.", "dp_experts_env."))


@functools.cache
def _module_source(name: str) -> tuple[str | None, bytes]:
    """(origin path, source bytes) of a module, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None, b""
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return None, b""
    return spec.origin, Path(spec.origin).read_bytes()


# (module name, SHA-256 of its source) -> its import statements, parsed. Kept across sweeps (an
# edited file is another digest), so a process running many grids (reproduce) parses each file
# once, not once per grid. Also kept on disk, signed, in the cache folder of the calibrations
# (agents._public_cache: read_entry / write_entry), so a new process does not parse the ~60
# source files again (~0.4 s of CPU); a planted or edited entry is ignored and named there.
_PARSED: dict[tuple[str, str], tuple[tuple[str, tuple[str, ...]], ...]] = {}
_PARSED_STATE = {"loaded": False, "dirty": False}
_PARSED_FILE = "imports-v2.json"
_PARSED_KIND = "parsed-imports"


def _load_parsed() -> None:
    from agents._public_cache import read_entry

    _PARSED_STATE["loaded"] = True
    payload = read_entry(_PARSED_FILE, _PARSED_KIND)
    try:
        stored = json.loads(payload) if payload is not None else []
        for name, digest, statements in stored:
            key = (str(name), str(digest))
            _PARSED[key] = tuple((str(b), tuple(str(n) for n in ns)) for b, ns in statements)
    except (ValueError, TypeError, RecursionError):
        pass  # signed but not this layout: parse again


def _save_parsed() -> None:
    from agents._public_cache import write_entry

    if not _PARSED_STATE["dirty"]:
        return
    _PARSED_STATE["dirty"] = False
    # The project's modules only (a plug-in's are parsed again: no entry for every temporary
    # module a test or a user ever named).
    records = [
        [*key, [[b, list(ns)] for b, ns in value]]
        for key, value in _PARSED.items()
        if _top(key[0]) in _PROJECT
    ]
    write_entry(_PARSED_FILE, _PARSED_KIND, json.dumps(records).encode())


def _import_statements(
    name: str, origin: str, source: bytes
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(module, names)`` of every import of a module's source (``names`` empty for ``import``)."""
    stamp = (name, hashlib.sha256(source).hexdigest())
    if not _PARSED_STATE["loaded"]:
        _load_parsed()
    if stamp in _PARSED:
        return _PARSED[stamp]
    _PARSED_STATE["dirty"] = True
    is_package = os.path.basename(origin) == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    statements: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            statements.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(p for p in [*parts, base] if p)
            statements.append((base, tuple(alias.name for alias in node.names)))
    _PARSED[stamp] = parsed = tuple(statements)
    return parsed


@functools.cache
def _imports(name: str, tops: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Project modules a module imports anywhere in its source (lazy imports included).

    Modules of the outside packages ``tops`` (plug-ins) are listed and resolved the same way.
    """
    origin, source = _module_source(name)
    if origin is None:
        return ()
    found: set[str] = set()
    for base, names in _import_statements(name, origin, source):
        found.add(base)
        # `from pkg import submodule`. Only a package has submodules: looking one up in a plain
        # module would import that module (and whatever it imports: ~1 s for the accountants).
        if names and _top(base) in (*_PROJECT, *tops) and _is_package(base):
            found.update(c for c in (f"{base}.{n}" for n in names) if _module_source(c)[0])
    return tuple(
        sorted(n for n in found if n.startswith(("agents.", "dp_experts_env.")) or _top(n) in tops)
    )


_PROJECT = ("agents", "dp_experts_env")


def _top(name: str) -> str:
    return name.partition(".")[0]


def _is_package(name: str) -> bool:
    origin = _module_source(name)[0]
    return origin is not None and os.path.basename(origin) == "__init__.py"


def _closure(
    roots: Iterable[str],
    follow: Callable[[str], bool] = _project_module,
    tops: tuple[str, ...] = (),
) -> list[str]:
    """The roots and every module they import, transitively, that ``follow`` accepts.

    ``tops`` names the outside packages (plug-ins) whose imports are walked too.
    """
    seen: set[str] = set()
    stack = [r for r in roots if follow(r)]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(n for n in _imports(name, tops) if follow(n))
    return sorted(seen)


def module_fingerprint(roots: Iterable[str], follow: Callable[[str], bool]) -> str:
    """SHA-256 of the source of ``roots`` and the project modules they import (per ``follow``)."""
    return _hash_modules(_closure(roots, follow))


def _hash_modules(names: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0" + _module_source(name)[1] + b"\0")
    return digest.hexdigest()


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("dp-experts-env")
    except Exception:  # not installed (source checkout on sys.path)
        import dp_experts_env

        return str(getattr(dp_experts_env, "__version__", "unknown"))


@functools.cache
def code_fingerprint(agent_name: str, env_id: str) -> dict[str, str]:
    """Package version and source hashes of the code that produces a cell's rows.

    The learner's hash covers the modules of its class and base classes and every project module
    they import (transitively; the privacy mechanisms, the batch RNG); the env's covers the
    modules of its single and vector entry points and their imports (the adversary families, the
    regret bookkeeping), plus the episode loop and ``evaluation/grid.py`` (seed derivation and
    recorded rounds). Hashes are of the source files, so editing a
    learner's learning rate changes its key even when the version number does not move.
    """
    import gymnasium as gym

    import agents as agents_pkg
    import dp_experts_env  # noqa: F401 - registers the ids

    cls = agents_pkg.spec(agent_name).cls
    agent_roots = {c.__module__ for c in cls.__mro__ if c.__module__ != "builtins"}
    plugins = plugin_fingerprint()
    # A learner of an outside package: its modules and their imports, walked as the project's.
    tops = tuple(sorted({_top(m) for m in agent_roots} - set(_PROJECT)))
    agent_follow = _project_module
    if tops:
        def agent_follow(name: str) -> bool:
            return _project_module(name) or _top(name) in tops

    spec = gym.spec(env_id)
    env_roots = set(_ROW_MODULES)
    for entry in (spec.entry_point, spec.vector_entry_point):
        if isinstance(entry, str):
            env_roots.add(entry.partition(":")[0])
        elif entry is not None:
            env_roots.update(c.__module__ for c in getattr(entry, "__mro__", [entry]))
    # An env's package (dp_experts_env.envs) re-exports its classes; the adversary families are
    # found through the factory's imports.
    env_roots |= {m.rpartition(".")[0] for m in list(env_roots) if m.count(".") > 1}
    fingerprint = {
        "package": _package_version(),
        "agent": _hash_modules(_closure(agent_roots, agent_follow, tops)),
        "env": _hash_modules(_closure(env_roots)),
    }
    if plugins is not None:  # only then: keys of a plug-in-free setup stay what they were
        fingerprint["plugins"] = plugins["code"]
        fingerprint["plugin_list"] = plugins["list"]
    _save_parsed()
    return fingerprint


@functools.cache
def plugin_fingerprint() -> dict[str, str] | None:
    """The plug-ins in effect and a SHA-256 of their code; None when there are none.

    The list is every module of ``DP_EXPERTS_PLUGINS`` and every entry point of the learner and
    family groups (``group:name=module:object``); the code is the source of each such module
    and of every module of its own package it imports, transitively (the walk
    :func:`code_fingerprint` makes for the project). It joins every run's key: a plug-in may
    register a family any env plays, or patch a built-in learner, so editing one, adding one or
    removing one changes every key (the rows are played again; ``verify`` names the runs
    stale with ``code.plugins``). A module that cannot be found is listed as ``missing:``.
    """
    from dp_experts_env import plugins as plugins_mod

    modules = plugins_mod.plugin_modules()
    points = [
        ep
        for group in (plugins_mod.AGENT_GROUP, plugins_mod.FAMILY_GROUP)
        for ep in plugins_mod.entry_points(group)
    ]
    if not modules and not points:
        return None
    roots = set(modules) | {ep.module for ep in points}
    listed = [f"module:{m}" for m in modules]
    listed += sorted(f"{ep.group}:{ep.name}={ep.value}" for ep in points)
    listed += sorted(f"missing:{r}" for r in roots if _module_source(r)[0] is None)
    tops = tuple(sorted({_top(r) for r in roots} - set(_PROJECT)))

    def follow(name: str) -> bool:
        return name in roots or _top(name) in tops

    digest = _hash_modules(_closure(roots, follow, tops))
    return {"list": ",".join(listed), "code": digest}


def forget_fingerprints() -> None:
    """Drop the cached hashes (each sweep hashes the files as they are on disk now)."""
    for cached in (_module_source, _imports, code_fingerprint, plugin_fingerprint):
        cached.cache_clear()
    _FILE_DIGESTS.clear()


# (resolved path, size, mtime) -> digest: every seed of every cell names the same data file, and
# hashing a large replay matrix once per seed would dominate the planning of a sweep.
_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    info = path.stat()
    memo = (str(path.resolve()), info.st_size, info.st_mtime_ns)
    if memo not in _FILE_DIGESTS:
        _FILE_DIGESTS[memo] = _hash_file(path)
    return _FILE_DIGESTS[memo]


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_fingerprint(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """SHA-256 of every file a parameter names (``{"env.losses": digest}``).

    A string or path parameter that names an existing file (relative to the working directory,
    as the env reads it) is a data file: replacing its content changes the key even though the
    parameter (the path) does not change. Nested tables are searched too.
    """
    out: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(data_fingerprint(value, prefix=f"{name}."))
        elif isinstance(value, (str, os.PathLike)):
            try:
                path = Path(value)
                if path.is_file():
                    out[name] = _file_digest(path)
            except (OSError, ValueError):  # not a usable path (too long, NUL): not a file
                continue
    return out


# ----------------------------------------------------------------------------- the store
# A run record is two lines: a header (format version, key, checksum, row count, columns) and the
# rows as columns: the columns whose value is the same on every row of the run (agent, env,
# epsilon, seed, ...) once, the others (round, the metrics) as lists
# (:mod:`~dp_experts_env.evaluation.columns`). The checksum is the SHA-256 of the second line's
# bytes as stored, so checking a record never re-serialises it, and reading a run costs one JSON
# parse of a few lists, not one dict per row.
#
# Unit files (``cells/unit-<digest>.pack``, written since pack version 1): one file per unit of
# work, written once when the unit finishes. Line 1 is the pack header -- ``{"pack": 1, "runs":
# [run ids], "bytes": size of the rest, "checksum": SHA-256 of the rest}`` -- and the rest is
# one two-line record per listed run, in order. Run files (``cells/<run id>.json``, one record
# each) are what versions before packs wrote; they are still read, with the same checks.

#: Version of the unit-file container (the records inside keep :data:`FORMAT_VERSION`).
PACK_VERSION = 1
_PACK_SUFFIX = ".pack"


def _payload(rows: list[dict[str, Any]]) -> bytes:
    """The stored JSON of one run's rows (what :func:`columns.payload` gives for them)."""
    return columns_mod.payload(columns_mod.run_columns(rows))


class TooDeep(ValueError):
    """A JSON text nested deeper than the parser's recursion limit (a planted line)."""


def loads(raw: str | bytes) -> Any:
    """``json.loads`` for files of a results folder: deep nesting is a ValueError, not a crash.

    A line nested deeper than the recursion limit makes ``json.loads`` raise RecursionError,
    which the readers do not expect; as a ValueError (:class:`TooDeep`) the file is reported
    as damaged like any other, and its runs are played again.
    """
    try:
        return json.loads(raw)
    except RecursionError:
        raise TooDeep(
            "nested too deeply to parse (more levels than Python's recursion limit)"
        ) from None


def _split(raw: bytes) -> tuple[dict[str, Any], bytes]:
    """(header, payload bytes) of a run record; ValueError when it has not the two-line layout."""
    head, sep, payload = raw.partition(b"\n")
    if not sep:
        raise ValueError("not a two-line run file")
    header = loads(head)
    if not isinstance(header, dict):
        raise ValueError("header is not an object")
    return header, payload


def _rows_of(payload: dict[str, Any], n: int) -> list[dict[str, Any]]:
    const, cols = payload["const"], payload["cols"]
    return [
        {name: const[name] if name in const else cols[name][i] for name in payload["order"]}
        for i in range(n)
    ]


class DamagedPack(ValueError):
    """A unit file that fails its own checks (truncated, edited, not a pack)."""


def _record_problem(header: dict[str, Any], payload: bytes) -> str:
    """Why a record cannot be used whatever its key ("" when it can)."""
    if header.get("version") != FORMAT_VERSION:
        return "written by another format version"
    if header.get("checksum") != hashlib.sha256(payload).hexdigest():
        return "checksum mismatch"
    return ""


def _pack_header(raw: bytes, name: str) -> tuple[dict[str, Any], bytes]:
    """(pack header, rest) of a unit file; DamagedPack naming the file and what is wrong."""
    head, sep, body = raw.partition(b"\n")
    try:
        header = loads(head)
        if not isinstance(header, dict) or header.get("pack") != PACK_VERSION:
            raise ValueError(f"not a pack of version {PACK_VERSION}")
        runs = header["runs"]
        if not isinstance(runs, list):
            raise ValueError("'runs' is not a list")
        for run_id in runs:
            check_run_id(run_id)
    except UnsafeResultsFolder as err:
        raise DamagedPack(f"cells/{name} lists an unsafe run id ({err})") from None
    except (ValueError, KeyError, TypeError) as err:
        raise DamagedPack(f"cells/{name} is damaged ({err})") from None
    if not sep:
        raise DamagedPack(f"cells/{name} is damaged (truncated after its header)")
    return header, body


def _parse_pack(raw: bytes, name: str) -> dict[str, tuple[bytes, bytes]]:
    """``{run id: (record header line, payload bytes)}`` of a unit file that passes its checks.

    The record headers are parsed where they are read (:func:`_record_header`): a parsed key
    costs a few kB per run, more than the run's rows at the last round.

    Raises:
        DamagedPack: the file is truncated, edited or not a unit file; the message names it.
    """
    header, body = _pack_header(raw, name)
    if header.get("bytes") != len(body):
        raise DamagedPack(
            f"cells/{name} is damaged (truncated or extended: {len(body)} bytes after its header, "
            f"{header.get('bytes')} written)"
        )
    if header.get("checksum") != hashlib.sha256(body).hexdigest():
        raise DamagedPack(f"cells/{name} is damaged (checksum mismatch)")
    lines = body.split(b"\n")
    runs = header["runs"]
    if len(lines) != 2 * len(runs) + 1 or lines[-1]:
        raise DamagedPack(f"cells/{name} is damaged ({len(runs)} runs listed, not as many records)")
    records: dict[str, tuple[bytes, bytes]] = {}
    for i, run_id in enumerate(runs):
        records.setdefault(run_id, (lines[2 * i], lines[2 * i + 1]))
    return records


def _record_header(line: bytes) -> dict[str, Any] | None:
    """A record's header line parsed; None when it is not a JSON object."""
    try:
        header = loads(line)
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


def _first_line(path: Path) -> bytes:
    """The first line of a regular file (never following a link), read in chunks."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise UnsafeResultsFolder(f"{path} is not a regular file")
        chunks: list[bytes] = []
        while not chunks or b"\n" not in chunks[-1]:
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).partition(b"\n")[0]


#: Parsed unit files kept per store: reads are grouped by file (:meth:`CellStore.frame`) and
#: checks use each file's kept summary, so one is enough; each costs about the file's size.
_PACK_CACHE = 1


def _key_digest(key: Any) -> str:
    """SHA-256 of a key's JSON form (keys sorted): equal digests, equal keys.

    A stored key too deep to serialise (planted) gets a digest no current key has.
    """
    try:
        text = json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (RecursionError, ValueError, TypeError):
        return "unserialisable"
    return hashlib.sha256(text.encode()).hexdigest()


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
        common = json.loads(canonical_json(common))  # once per cell: the JSON form, as stored
        seeds = [int(i) for i in seed_indices]
        block = cell.with_seeds(seeds)
        keys = []
        for i, env_seed, agent_seed in zip(
            seeds, block.env_seeds(), block.agent_seeds(), strict=True
        ):
            # The seeds the episode is played with: a changed derivation changes the key even
            # if evaluation/grid.py (hashed in "code") were not where it changed.
            keys.append({**common, "seed": i, "env_seed": env_seed, "agent_seed": agent_seed})
        return keys

    @staticmethod
    def run_id(cell: Cell, key: Mapping[str, Any]) -> str:
        """File stem of a run: readable prefix plus the key's hash."""
        digest = hashlib.sha256(canonical_json(key).encode()).hexdigest()[:20]
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in cell.agent.name)
        eps = "np" if cell.epsilon is None else f"e{cell.epsilon:g}"
        return f"{safe}-{eps}-s{key['seed']}-{digest}"

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
                if entry.name.endswith(_PACK_SUFFIX) and not entry.name.startswith("."):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
        for _, name in sorted(found, reverse=True):
            try:
                header = loads(_first_line(folder / name))
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
            parsed: Any = _parse_pack(read_plain(self.cells_dir / name), name)
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
            header = _record_header(line)
            if header is None:
                yield f"cells/{name}", None, b"", f"cells/{name} has an unreadable record"
                continue
            yield f"cells/{name}", header, payload, _record_problem(header, payload)
        plain_dir(self.cells_dir, create=False)
        try:
            header, payload = _split(read_plain(self.path(run_id)))
        except FileNotFoundError:
            return
        except UnsafeResultsFolder:
            raise
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield f"cells/{run_id}.json", None, b"", f"unreadable ({type(err).__name__})"
            return
        yield f"cells/{run_id}.json", header, payload, _record_problem(header, payload)

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
                header = _record_header(line)
                if header is None:
                    summary[run_id] = ({}, "", f"cells/{name} has an unreadable record")
                    continue
                columns = header.get("columns")
                if isinstance(columns, list):
                    columns = self._shared.setdefault(tuple(map(str, columns)), list(columns))
                kept = {"version": header.get("version"), "n": header.get("n"), "columns": columns}
                summary[run_id] = (
                    kept,
                    _key_digest(header.get("key")),
                    _record_problem(header, payload),
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
                wanted.append(_key_digest(json.loads(canonical_json(key))))
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
            header, payload = _split(read_plain(self.path(run_id)))
        except FileNotFoundError:
            return None, "missing"
        except UnsafeResultsFolder:
            raise
        except (OSError, ValueError, KeyError, TypeError) as err:
            problem = f"unreadable ({type(err).__name__})"
        else:
            problem = _record_problem(header, payload)
            if not problem and differs(_key_digest(header.get("key"))):
                problem = "belongs to another cell or code version"
            if not problem:
                return header, ""
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

    def load_run(self, run_id: str) -> list[dict[str, Any]] | None:
        """Rows of a run if a copy passes its checks (key not re-derived)."""
        loaded = self._load(run_id)
        return None if loaded is None else _rows_of(*loaded)

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
            self.cells_dir / f"{name}{_PACK_SUFFIX}",
            lambda fh: fh.write(head + rest),
            text=False,
            durable=False,
        )
        self._packs.pop(path.name, None)
        self._summaries.pop(path.name, None)
        for run_id in run_ids:  # a run played again had no usable run file: drop the old one
            self.path(run_id).unlink(missing_ok=True)  # (a planted link is removed, not followed)
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
        for run_id in run_ids:
            check_run_id(run_id)
        reading = sorted(range(len(run_ids)), key=lambda i: self._source(run_ids[i]))
        # Per run, until assembled in manifest order: its column names and constants as tuples
        # (equal name tuples shared, strings interned) and its varying columns as arrays.
        loaded: list[Any] = [None] * len(run_ids)
        shapes: dict[tuple[str, ...], tuple[str, ...]] = {}
        for i in reading:
            got = self._load(run_ids[i])
            if got is None:
                continue
            data, n = got
            if last_only and n > 1:
                data, n = _last_row(data), 1
            names = tuple(data["order"])
            const = tuple(data["const"])
            loaded[i] = (
                shapes.setdefault(names, names),
                shapes.setdefault(const, const),
                tuple(sys.intern(v) if isinstance(v, str) else v for v in data["const"].values()),
                {k: np.asarray(v) for k, v in data["cols"].items()},
                n,
            )
            del data, got
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

    def write_csv(self, run_ids: list[str], fh: Any, *, batch: int = 500) -> None:
        """Write the listed runs' rows as CSV to ``fh``, ``batch`` runs at a time.

        Memory is bounded by a batch, not the table. The columns are the union over the runs in
        order of first appearance (a run without a column leaves it empty), as
        ``frame(run_ids).to_csv(fh, index=False)`` writes them.
        """
        order: dict[str, None] = {}
        for run_id in run_ids:
            order.update(dict.fromkeys(self._column_names(run_id)))
        columns = list(order)
        for start in range(0, len(run_ids), batch):
            part = self.frame(run_ids[start : start + batch]).reindex(columns=columns)
            part.to_csv(fh, index=False, header=start == 0)

    def _column_names(self, run_id: str) -> list[str]:
        for name in self._pack_index().get(run_id, []):  # kept per unit file: parsed once
            summary = self._summary(name)
            if not isinstance(summary, DamagedPack) and run_id in summary:
                names = summary[run_id][0].get("columns")
                if isinstance(names, list):
                    return names
        header, payload = self.read_record(run_id)
        names = header.get("columns")
        if isinstance(names, list):
            return names
        return json.loads(payload)["order"]  # a file written without the list in its header


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


def _manifest_checksum(grid_dict: Any, run_ids: Any) -> str:
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
        "checksum": _manifest_checksum(grid_json, runs),
    }


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The folder's manifest; ValueError when there is none, it is damaged or unsafe.

    The checksum is verified and every run id is checked to be a plain file name before the
    caller builds a path from it.
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
        if data.get("checksum") != _manifest_checksum(data.get("grid"), runs):
            raise ValueError("checksum mismatch: the manifest was edited or damaged")
    except (ValueError, KeyError, TypeError) as err:
        if isinstance(err, UnsafeResultsFolder):
            raise
        raise ValueError(f"{path} is damaged ({err}); run compare again to rewrite it") from err
    for run_id in runs:
        check_run_id(run_id)
    return data


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


# ----------------------------------------------------------------------------- the lock
@contextlib.contextmanager
def folder_lock(folder: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on a results folder (``.lock``) for the duration of a sweep.

    A second sweep into the same folder fails at once with :class:`ResultsFolderBusy` instead of
    racing the first one. The lock is an OS lock on an open file, so it is released when its
    process dies, even by ``kill -9``; a stale ``.lock`` file does not block anything.

    The file is opened with ``O_NOFOLLOW`` (a ``.lock`` that is a symbolic link is refused, not
    followed) and must be a regular file with a single link (a hard link to a file elsewhere is
    refused too). It is never truncated: the holder's process id is written over its first
    bytes, padded to a fixed width.
    """
    path = Path(folder) / ".lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeResultsFolder(
                f"{path} is a symbolic link; a results folder's lock is never followed out of "
                "the folder (remove the link, or use another folder)"
            ) from err
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise UnsafeResultsFolder(
                f"{path} is not a plain file of the folder ("
                f"{'a hard link shared with another file' if info.st_nlink != 1 else 'not a file'}"
                "); remove it, or use another folder"
            )
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError as err:
                raise ResultsFolderBusy(_busy(folder, "")) from err
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise ResultsFolderBusy(_busy(folder, holder if holder.isdigit() else "")) from err
        os.pwrite(fd, f"{os.getpid():<20}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _busy(folder: str | Path, pid: str) -> str:
    who = f"process {pid}" if pid else "another process"
    return (
        f"results folder {str(folder)!r} is in use by {who} (another compare/run writing to it); "
        "wait for it to finish or choose another --out"
    )
