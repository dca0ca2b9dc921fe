"""A memo for calibrations that are pure functions of public quantities, kept on disk safely.

Only frozen results are memoised (every caller shares the object); on disk, frozen dataclasses of
plain numbers and strings, one signed entry per (function, arguments, :func:`code_stamp`). The
folder may be shared, so nothing read is trusted: entries carry an HMAC under a per-user key
(:func:`key_path`), are written atomically 0600 into a 0700 user-owned folder, and may be
re-checked on load (docs/architecture.md, "Calibrations on disk, validated").
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import os
import stat
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "cache_dir",
    "code_stamp",
    "key_path",
    "public_cache",
    "read_entry",
    "write_entry",
]

R = TypeVar("R")

_PLAIN = (int, float, str, bool, type(None))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: Version of the signed entry layout (line 1: JSON header with the MAC; then the bytes).
_LAYOUT = 1
_WARNED: set[str] = set()


def cache_dir() -> Path | None:
    """The on-disk cache folder (calibrations, tables, parsed imports), or None when turned off."""
    value = os.environ.get("DP_EXPERTS_CACHE_DIR", "")
    if value.lower() in ("off", "0", "none"):
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dp-experts-env"


def key_path() -> Path:
    """Where the per-user signing key of the cache lives (never inside the cache folder).

    ``$DP_EXPERTS_CACHE_KEY`` if set, else ``$XDG_CONFIG_HOME/dp-experts-env/cache.key``
    (``~/.config/...``).
    """
    value = os.environ.get("DP_EXPERTS_CACHE_KEY", "")
    if value:
        return Path(value)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "dp-experts-env" / "cache.key"


@functools.cache
def code_stamp() -> str:
    """SHA-256 of every source file of the project's packages and of the platform computing.

    The platform (CPU architecture, Python, numpy's and scipy's versions) is in it because a
    tuning's floats may differ in their last bits elsewhere: an entry is served only where it
    is what this machine would compute (a shared home folder, an upgrade).
    """
    import platform
    from importlib import metadata

    import dp_experts_env

    digest = hashlib.sha256()
    for dist in ("numpy", "scipy"):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{dist}={version}\0".encode())
    digest.update(f"{platform.machine()}\0{platform.python_version()}\0".encode())
    for package in (Path(__file__).parent, Path(dp_experts_env.__file__).parent):
        for path in sorted(package.rglob("*.py")):
            name = path.relative_to(package.parent).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _warn(message: str) -> None:
    if message not in _WARNED:  # once per process and cause
        _WARNED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _private(path: Path, what: str) -> bool:
    """True when ``path`` (lstat) is a real, user-owned entry nobody else can write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    owner = getattr(os, "getuid", lambda: info.st_uid)()
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link"
    elif info.st_uid != owner:
        problem = f"belongs to user {info.st_uid}"
    elif info.st_mode & 0o022:
        problem = "is writable by other users"
    else:
        return True
    _warn(f"{what} {path} {problem}: not used (the cache works in memory only)")
    return False


def _folder(create: bool) -> Path | None:
    """The cache folder if it is safe to use (made 0700 when created); else None."""
    folder = cache_dir()
    if folder is None:
        return None
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return None  # a read-only home: the memo in memory still works
    elif not os.path.lexists(folder):
        return None
    if not _private(folder, "cache folder"):
        return None
    if os.lstat(folder).st_mode & 0o077:
        try:  # a folder made by an earlier version (0755): nobody else needs to read it
            os.chmod(folder, 0o700)
        except OSError:
            pass
    return folder


@functools.cache
def _secret() -> bytes | None:
    """The per-user signing key (32 random bytes), made on first use; None if unusable."""
    path = key_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(32).hex().encode())
        if not _private(path, "cache key") or os.lstat(path).st_mode & 0o077:
            _warn(f"cache key {path} is readable by other users: the disk cache is not used")
            return None
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            key = bytes.fromhex(fh.read(128).decode())
    except (OSError, ValueError):
        return None
    return key if len(key) >= 16 else None


def _mac(key: bytes, kind: str, name: str, code: str, payload: bytes) -> str:
    head = f"{_LAYOUT}\0{kind}\0{name}\0{code}\0".encode()
    return hmac.new(key, head + payload, hashlib.sha256).hexdigest()


def read_entry(name: str, kind: str) -> bytes | None:
    """The bytes of the signed cache entry ``name`` of ``kind``; None when absent or refused.

    A refused entry (not a regular file, unparsable, other code, bad MAC) is named in a warning.
    """
    folder = _folder(create=False)
    key = _secret() if folder is not None else None
    if folder is None or key is None:
        return None
    path = folder / name
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        _warn(f"cache entry {path} cannot be opened ({err}): ignored, computed again")
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            _warn(f"cache entry {path} is not a regular file: ignored, computed again")
            return None
        raw = fh.read()
    head, _, payload = raw.partition(b"\n")
    try:
        header = json.loads(head)
        mac = header["mac"]
        code = header["code"]
    except (ValueError, KeyError, TypeError, RecursionError):
        header, mac, code = None, "", ""
    if not isinstance(mac, str) or not isinstance(code, str):
        mac = code = ""
    if code and code != code_stamp() and mac:
        return None  # written by other code: a different key would name it; not an attack
    if not mac or not hmac.compare_digest(mac, _mac(key, kind, name, code, payload)):
        _warn(
            f"cache entry {path} fails its signature (edited, planted or written by another "
            "user): ignored, computed again"
        )
        return None
    return payload


def write_entry(name: str, kind: str, payload: bytes) -> Path | None:
    """Sign and write a cache entry atomically (mode 0600); its path, or None when not written."""
    folder = _folder(create=True)
    key = _secret() if folder is not None else None
    if folder is None or key is None:
        return None
    code = code_stamp()
    head = json.dumps(
        {"layout": _LAYOUT, "kind": kind, "code": code, "mac": _mac(key, kind, name, code, payload)}
    ).encode()
    path = folder / name
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(head + b"\n" + payload)
            os.replace(tmp, path)  # atomic; replaces a planted link instead of following it
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return None  # a full or read-only disk: computed again next time
    return path


def _key(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    items = [*args, *sorted(kwargs.items())]
    flat = [v for item in items for v in (item if isinstance(item, tuple) else (item,))]
    if any(type(v) not in _PLAIN for v in flat):
        return None  # repr of other types is not a faithful key
    text = repr(
        (fn.__module__, fn.__qualname__, [(type(v).__name__, repr(v)) for v in flat], code_stamp())
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _load(name: str, module: str) -> Any:
    payload = read_entry(name, "calibration")
    if payload is None:
        return None
    try:
        record = json.loads(payload)
        cls = getattr(sys.modules[module], record["type"])
        return cls(**record["fields"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # signed but not a record of this code: compute again


def _store(name: str, result: Any) -> None:
    if not (dataclasses.is_dataclass(result) and not isinstance(result, type)):
        return
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if any(type(v) not in _PLAIN for v in fields.values()):
        return
    record = {"type": type(result).__qualname__, "fields": fields}
    write_entry(name, "calibration", json.dumps(record).encode())


Check = Callable[..., str]


def public_cache(fn: Callable[..., R] | None = None, *, check: Check | None = None) -> Any:
    """Memoise ``fn`` on its arguments (types included: 1 and 1.0 are different keys).

    Unhashable arguments bypass the memo (``fn``'s validation reports them).

    Args:
        fn: the function (``@public_cache``), or None (``@public_cache(check=...)``).
        check: ``check(result, *args, **kwargs)`` on a result read from disk; a non-empty
            return (why it is wrong) discards the entry with a warning.
    """
    if fn is None:
        return functools.partial(public_cache, check=check)
    target = fn

    def compute(*args: Any, **kwargs: Any) -> Any:
        key = _key(target, args, kwargs) if cache_dir() is not None else None
        if key is None:
            return target(*args, **kwargs)
        name = f"{key}.json"
        result = _load(name, target.__module__)
        if result is not None and check is not None:
            problem = check(result, *args, **kwargs)
            if problem:
                _warn(f"cache entry {cache_dir() / name} refused: {problem}; computed again")
                result = None
        if result is None:
            result = target(*args, **kwargs)
            _store(name, result)
        return result

    cached = functools.lru_cache(maxsize=256, typed=True)(compute)

    @functools.wraps(target)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            hash((args, tuple(kwargs.items())))
        except TypeError:
            return target(*args, **kwargs)
        return cached(*args, **kwargs)

    wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return wrapper
