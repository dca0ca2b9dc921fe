"""A memo for calibrations that are pure functions of public quantities.

Some learners calibrate their parameters with an exact accountant (a bisection per candidate,
~0.1 s) on every construction, although the result depends only on public inputs (N, T,
epsilon, delta, mode, tuning and explicit overrides). An evaluation builds the same learner
many times (one agent per cell, one more per claim), so the result is kept per input tuple.
Only frozen (immutable) results may be memoised this way: every caller shares the object.

Results are also kept on disk, so a new process (every ``dp-experts`` command) does not
calibrate again: one small JSON file per (function, arguments, code) under
``$DP_EXPERTS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/dp-experts-env`` or
``~/.cache/dp-experts-env``; ``DP_EXPERTS_CACHE_DIR=off`` turns it off; the evaluation keeps its
parsed import lists there too). The key includes the
size and modification time of every source file of the ``agents`` and ``dp_experts_env``
packages, so an edited accountant or learner never reads an old calibration. Only frozen
dataclasses whose fields are plain ``int``/``float``/``str``/``bool``/``None`` are stored (they
round-trip exactly through JSON: floats are written by ``repr``); anything else stays in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

__all__ = ["public_cache", "cache_dir"]

P = ParamSpec("P")
R = TypeVar("R")

_PLAIN = (int, float, str, bool, type(None))


def cache_dir() -> Path | None:
    """The on-disk cache folder (calibrations, parsed imports), or None when turned off."""
    value = os.environ.get("DP_EXPERTS_CACHE_DIR", "")
    if value.lower() in ("off", "0", "none"):
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dp-experts-env"


@functools.cache
def _code_stamp() -> str:
    """Size and mtime of every source file of the project's packages (what a result depends on)."""
    import dp_experts_env

    digest = hashlib.sha256()
    for package in (Path(__file__).parent, Path(dp_experts_env.__file__).parent):
        for path in sorted(package.rglob("*.py")):
            info = path.stat()
            digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _key(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    items = [*args, *sorted(kwargs.items())]
    flat = [v for item in items for v in (item if isinstance(item, tuple) else (item,))]
    if any(type(v) not in _PLAIN for v in flat):
        return None  # repr of other types is not a faithful key
    text = repr(
        (fn.__module__, fn.__qualname__, [(type(v).__name__, repr(v)) for v in flat], _code_stamp())
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _load(path: Path, module: str) -> Any:
    try:
        record = json.loads(path.read_text())
        cls = getattr(sys.modules[module], record["type"])
        return cls(**record["fields"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: compute again


def _store(path: Path, result: Any) -> None:
    if not (dataclasses.is_dataclass(result) and not isinstance(result, type)):
        return
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if any(type(v) not in _PLAIN for v in fields.values()):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            json.dump({"type": type(result).__qualname__, "fields": fields}, fh)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
    except OSError:
        pass  # a read-only home: the memo in memory still works


def public_cache(fn: Callable[P, R]) -> Callable[P, R]:
    """Memoise ``fn`` on its arguments (types included: 1 and 1.0 are different keys).

    Arguments that cannot be hashed (an array passed where a float is expected) bypass the memo,
    so ``fn``'s own validation still reports them. Results are kept on disk too (module doc).
    """

    def compute(*args: Any, **kwargs: Any) -> Any:
        folder = cache_dir()
        key = _key(fn, args, kwargs) if folder is not None else None
        if key is None:
            return fn(*args, **kwargs)
        path = folder / f"{key}.json"  # type: ignore[operator]
        result = _load(path, fn.__module__)
        if result is None:
            result = fn(*args, **kwargs)
            _store(path, result)
        return result

    cached = functools.lru_cache(maxsize=256, typed=True)(compute)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            hash((args, tuple(kwargs.items())))
        except TypeError:
            return fn(*args, **kwargs)
        return cached(*args, **kwargs)

    wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return wrapper
