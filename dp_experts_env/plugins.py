"""Outside code joins the suite without editing a list: plug-in modules and entry points.

Entry points of the groups :data:`AGENT_GROUP` and :data:`FAMILY_GROUP`, and modules named in
:data:`ENV_VAR`, read by every process that looks a learner or family up (docs/own_learner.md).
This module imports nothing of the package: both registries call it.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "AGENT_GROUP",
    "ENV_VAR",
    "FAMILY_GROUP",
    "PluginError",
    "entry_points",
    "import_plugin_modules",
    "iter_new",
    "load_entry_point",
    "plugin_modules",
    "plugin_paths",
    "source_of",
    "worker_env",
]

#: Environment variable: comma-separated modules imported before any registry lookup.
ENV_VAR = "DP_EXPERTS_PLUGINS"
#: Entry-point group of learners: ``name = "module:AgentClass"``.
AGENT_GROUP = "dp_experts_env.agents"
#: Entry-point group of loss families: ``"kind.family" = "module:AdversaryClassOrFactory"``.
FAMILY_GROUP = "dp_experts_env.families"

#: The suite's own top-level packages (their registrations are built-ins).
_BUILT_IN = ("agents", "dp_experts_env")
#: Module name -> how it came in (for :func:`source_of`).
_ORIGIN: dict[str, str] = {}


class PluginError(ImportError, ValueError):
    """A plug-in could not be loaded (a ValueError: commands report it as one line)."""


def plugin_modules() -> list[str]:
    """The module names in :data:`ENV_VAR` (empty entries and spaces dropped)."""
    raw = os.environ.get(ENV_VAR, "")
    return [part.strip() for part in raw.split(",") if part.strip()]


def import_plugin_modules() -> list[str]:
    """Import every module of :data:`ENV_VAR` (each once per process); return their names.

    Raises:
        PluginError: a module cannot be imported (the message names it).
    """
    names = plugin_modules()
    for name in names:
        if name in sys.modules:
            _ORIGIN.setdefault(name.split(".")[0], f"module {name} ({ENV_VAR})")
            continue
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise PluginError(
                f"{ENV_VAR}={os.environ.get(ENV_VAR)!r}: cannot import plug-in module {name!r} "
                f"({type(err).__name__}: {err}); put its folder on PYTHONPATH or install its "
                "package"
            ) from err
        except Exception as err:  # noqa: BLE001 - any failure of outside code, named in one line
            raise PluginError(
                f"{ENV_VAR}={os.environ.get(ENV_VAR)!r}: plug-in module {name!r} failed while "
                f"being imported ({type(err).__name__}: {_first_line(err)}); fix the module or "
                f"remove it from {ENV_VAR}"
            ) from err
        _ORIGIN.setdefault(name.split(".")[0], f"module {name} ({ENV_VAR})")
    return names


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group`` in the installed distributions (and on ``sys.path``)."""
    found = list(metadata.entry_points(group=group))
    # A distribution seen twice on sys.path lists its entry points twice: keep the first.
    seen: set[tuple[str, str]] = set()
    unique = []
    for ep in found:
        if (ep.name, ep.value) not in seen:
            seen.add((ep.name, ep.value))
            unique.append(ep)
    return unique


def load_entry_point(ep: metadata.EntryPoint) -> Any:
    """Load one entry point; note its distribution as the source of its module.

    Raises:
        PluginError: the object cannot be imported.
    """
    try:
        obj = ep.load()
    except Exception as err:  # noqa: BLE001 - any failure of outside code, named in one line
        dist = _dist_name(ep)
        raise PluginError(
            f"entry point {ep.name!r} = {ep.value!r} of group {ep.group!r}"
            f"{f' (package {dist})' if dist else ''} cannot be loaded: "
            f"{type(err).__name__}: {_first_line(err)}"
        ) from err
    dist = _dist_name(ep)
    if dist:
        version = getattr(getattr(ep, "dist", None), "version", "")
        top = ep.module.split(".")[0]
        _ORIGIN.setdefault(top, f"package {dist} {version}".rstrip())
    return obj


def _first_line(err: BaseException) -> str:
    """The first line of an exception's message (a SyntaxError's is its location)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return "" if dist is None else str(dist.metadata["Name"] or "")


def source_of(module: str) -> str:
    """Where ``module`` comes from: ``"built-in"``, ``"package NAME VERSION"`` or ``"module M"``."""
    top = module.split(".")[0]
    if top in _BUILT_IN:
        return "built-in"
    if top in _ORIGIN:
        return _ORIGIN[top]
    try:
        dists = metadata.packages_distributions().get(top, [])
    except Exception:  # noqa: BLE001 - a broken metadata folder must not break a listing
        dists = []
    if dists:
        try:
            return f"package {dists[0]} {metadata.version(dists[0])}"
        except metadata.PackageNotFoundError:
            return f"package {dists[0]}"
    return f"module {top}"


def _module_root(name: str) -> str | None:
    """The ``sys.path`` folder a loaded module came from (None for built-in modules)."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None)
    if origin is None:
        return None
    path = Path(origin).resolve().parent
    for _ in name.split(".")[1:]:
        path = path.parent
    if Path(origin).name == "__init__.py":
        path = path.parent
    return str(path)


def plugin_paths() -> list[str]:
    """Folders a worker needs on its path to import this process's plug-ins."""
    paths: list[str] = []
    for name in plugin_modules():
        root = _module_root(name)
        if root is not None and root not in paths:
            paths.append(root)
    for group in (AGENT_GROUP, FAMILY_GROUP):
        for ep in entry_points(group):
            dist = getattr(ep, "dist", None)
            located = getattr(dist, "_path", None)  # PathDistribution: the .dist-info folder
            if located is None:
                continue
            root = str(Path(located).resolve().parent)
            if root not in paths:
                paths.append(root)
            top = ep.module.split(".")[0]
            module_root = _module_root(top) if top in sys.modules else None
            if module_root is not None and module_root not in paths:
                paths.append(module_root)
    return paths


def worker_env() -> dict[str, str]:
    """:data:`ENV_VAR` and ``PYTHONPATH`` (with :func:`plugin_paths`) for a fresh worker."""
    paths = plugin_paths()
    env: dict[str, str] = {}
    if plugin_modules():
        env[ENV_VAR] = os.environ[ENV_VAR]
    if paths:
        current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(current + [p for p in paths if p not in current])
    return env


def iter_new(group: str, done: set[tuple[str, str]]) -> Iterator[tuple[metadata.EntryPoint, Any]]:
    """Load the entry points of ``group`` not in ``done`` (updated), yielding ``(ep, object)``.

    One that fails to load is skipped with a warning: a broken installed package must not stop
    the suite.
    """
    for ep in entry_points(group):
        key = (ep.name, ep.value)
        if key in done:
            continue
        done.add(key)
        try:
            obj = load_entry_point(ep)
        except PluginError as err:
            warnings.warn(str(err), RuntimeWarning, stacklevel=2)
            continue
        yield ep, obj
