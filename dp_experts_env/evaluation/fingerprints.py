"""What a run's cache key says about the code and data that made it: source and file hashes.

The store puts them into every run's key (docs/grid.md, "Cache keys").
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "code_fingerprint",
    "data_fingerprint",
    "forget_fingerprints",
    "module_fingerprint",
    "plugin_fingerprint",
]


# Aggregating __init__ modules would make every key depend on every module.
_UNFOLLOWED = ("agents", "dp_experts_env", "dp_experts_env.cli", "dp_experts_env.__main__")


#: Evaluation modules that change rows: the episode loop and the grid (seeds, recorded rounds).
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


# (module name, SHA-256 of its source) -> its import statements; also kept on disk, signed, in
# the calibrations' cache folder (agents._public_cache) for the next process.
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
    # The project's modules only: no entry for every temporary module ever named.
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
    """Project (and plug-in ``tops``) modules a module imports anywhere in its source."""
    origin, source = _module_source(name)
    if origin is None:
        return ()
    found: set[str] = set()
    for base, names in _import_statements(name, origin, source):
        found.add(base)
        # Only a package has submodules (a lookup in a plain module would import it).
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
    """The roots and their transitive imports that ``follow`` accepts (plug-ins ``tops`` too)."""
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

    The learner's hash covers its class's and base classes' modules and the project modules
    they import, transitively; the env's its entry points' modules and their imports, plus the
    episode loop and the grid.
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
    # The env's package: the adversary families are found through the factory's imports.
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

    ``{"list": the DP_EXPERTS_PLUGINS modules and entry points (a module not found as
    "missing:"), "code": the hash of their packages' modules they import}``; it joins every
    run's key, since a plug-in may patch a built-in.
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


# (resolved path, size, mtime) -> digest: every seed of every cell names the same data file.
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
    """SHA-256 of every existing file a (nested) parameter names (``{"env.losses": digest}``)."""
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
