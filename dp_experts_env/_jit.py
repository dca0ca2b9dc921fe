"""The switch between compiled kernels (numba) and the numpy reference path.

:func:`kernel` returns the compiled form when the JIT is enabled, else the Python function; the
numpy path is the reference, equal bit for bit (docs/architecture.md). ``DP_EXPERTS_NO_JIT=1``
and :func:`numpy_path` force it. Private machinery: other packages import ``__all__`` only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "consultations",
    "helper",
    "jit_active",
    "jit_enabled",
    "kernel",
    "kernel_key",
    "numba_available",
    "numpy_path",
    "reached_files",
]

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def numba_available() -> bool:
    """True when numba can be imported (and, if so, its numpy implementations are loaded)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    _load_numpy_implementations()
    return True


def _load_numpy_implementations() -> None:
    """Import ``numba.np.arraymath`` (which numba loads before its first kernel) without BLAS.

    ``scipy.linalg.cython_blas`` (which only decides how ``np.correlate``/``np.convolve``
    compile, used by no kernel) is refused while that module loads and allowed again at once,
    so BLAS-backed functions still compile later. A process that imported either is left alone.
    """
    import sys

    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or blas in sys.modules:
        return
    sys.modules[blas] = None  # type: ignore[assignment]
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if sys.modules.get(blas, 0) is None:
            del sys.modules[blas]


_NUMPY_ONLY = [0]  # depth of nested numpy_path() blocks in this process


@contextlib.contextmanager
def numpy_path() -> Iterator[None]:
    """Use the numpy reference path inside the block (numba is not even imported)."""
    _NUMPY_ONLY[0] += 1
    try:
        yield
    finally:
        _NUMPY_ONLY[0] -= 1


_CONSULTED = [0]  # calls of jit_enabled() in this process


def consultations() -> int:
    """How many times this process asked :func:`jit_enabled` which path to take."""
    return _CONSULTED[0]


def jit_enabled() -> bool:
    """True when compiled kernels are used (numba importable and not switched off)."""
    _CONSULTED[0] += 1
    return jit_active()


def jit_active() -> bool:
    """:func:`jit_enabled` without counting a path decision.

    For code whose two forms are the same integer algorithm, equal bit for bit by construction
    and tested so on both (the batched random streams, :mod:`dp_experts_env._pcg64`): choosing
    between them is not a path decision the numpy-path test pass must replay.
    """
    if _NUMPY_ONLY[0]:
        return False
    if os.environ.get("DP_EXPERTS_NO_JIT", "0") not in ("", "0"):
        return False
    if os.environ.get("DP_EXPERTS_NUMBA", "1") == "0":
        return False
    return numba_available()


#: Top-level packages :func:`reached_files` walks into (besides the kernel's own).
_OWN_PACKAGES = frozenset({"agents", "dp_experts_env"})
_CONSTANTS = (bool, int, float, complex, str, bytes, type(None))


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _walk(
    func: Callable[..., Any], own: frozenset[str], seen: set[Any], files: set[str], data: list
) -> None:
    """Collect the files and constants ``func`` reaches (see :func:`reached_files`)."""
    func = getattr(func, "py_func", func)  # a kernel() wrapper or a numba dispatcher
    if func in seen or not isinstance(func, types.FunctionType):
        return
    seen.add(func)
    files.add(func.__code__.co_filename)
    names = {n for code in _code_objects(func.__code__) for n in code.co_names}
    cells = [c.cell_contents for c in func.__closure__ or () if _has_contents(c)]
    values = [func.__globals__[n] for n in sorted(names) if n in func.__globals__] + cells
    for value in values:
        if isinstance(value, types.ModuleType):
            # ``module.name`` in the kernel: the attribute names are in co_names too.
            values.extend(getattr(value, n) for n in sorted(names) if hasattr(value, n))
            continue
        target = getattr(value, "py_func", value)
        if _is_intrinsic(target):
            # A numba @intrinsic: the file of its definition, which holds its code generation
            # (not walked: its names are numba's and llvmlite's).
            files.add(target._defn.__code__.co_filename)
            continue
        if isinstance(target, types.FunctionType):
            top = (target.__module__ or "").partition(".")[0]
            if top in own:
                _walk(target, own, seen, files, data)
            else:
                lib = sys.modules.get(top)
                data.append(f"{top}={getattr(lib, '__version__', '?')}")
        elif isinstance(value, _CONSTANTS) or (
            isinstance(value, tuple) and all(isinstance(v, _CONSTANTS) for v in value)
        ):
            data.append(repr(value))
        elif isinstance(value, np.ndarray):
            data.append(f"{value.dtype}{value.shape}" + hashlib.sha256(value.tobytes()).hexdigest())


def _is_intrinsic(value: Any) -> bool:
    """True for a function made by ``numba.extending.intrinsic`` (numba already imported)."""
    extending = sys.modules.get("numba.core.extending")
    intrinsic_type = getattr(extending, "_Intrinsic", None)
    return intrinsic_type is not None and isinstance(value, intrinsic_type)


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def reached_files(func: Callable[..., Any]) -> tuple[list[str], list[str]]:
    """The source files and constants whose change can change what ``func`` compiles to.

    Walks the globals ``func`` names into every function of this project (and of the kernel's
    top-level package) it reaches, across files; other libraries count by version, constants
    by value.

    Args:
        func: a kernel (decorated or not), a helper or any Python function.

    Returns:
        (sorted file paths, constant descriptions in walk order).
    """
    func = getattr(func, "py_func", func)
    top = (getattr(func, "__module__", "") or "").partition(".")[0]
    files: set[str] = set()
    data: list[str] = []
    _walk(func, _OWN_PACKAGES | {top}, set(), files, data)
    return sorted(files), data


def kernel_key(func: Callable[..., Any]) -> str:
    """The cache folder's name: a hash of what :func:`reached_files` finds and its sources."""
    files, data = reached_files(func)
    digest = hashlib.sha256()
    import numba

    for part in (f"numpy={np.__version__}", f"numba={numba.__version__}", *data):
        digest.update(part.encode() + b"\0")
    for name in files:
        digest.update(name.encode() + b"\0")
        try:
            digest.update(Path(name).read_bytes())
        except OSError:  # no source (an interactive function): its code object stands in
            digest.update(b"?")
    return digest.hexdigest()[:16]


def _cache_base(func: Callable[..., Any]) -> Path | None:
    """The writable folder that holds the kernel folders (module docstring), or None."""
    from numba.core import config

    # Outside _njit's lock numba's CACHE_DIR is the user's (NUMBA_CACHE_DIR), never ours.
    candidates = [Path(config.CACHE_DIR)] if config.CACHE_DIR else []
    source = func.__code__.co_filename
    candidates.append(Path(source).parent / "__pycache__" / "kernels")
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(Path(home) / "dp-experts-env" / "kernels")
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return None


def _njit(func: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """``numba.njit(cache=True, **options)(func)`` cached under :func:`kernel_key`'s folder."""
    import numba
    from numba.core import config

    with _CACHE_DIR_LOCK:
        base = _cache_base(func)
        if base is None:
            return numba.njit(cache=False, **options)(func)
        before = config.CACHE_DIR
        # numba's locator reads the folder once, when caching is enabled at decoration.
        config.CACHE_DIR = str(base / kernel_key(func))
        try:
            return numba.njit(cache=True, **options)(func)
        except RuntimeError:  # no usable cache location ("no locator available")
            return numba.njit(cache=False, **options)(func)
        finally:
            config.CACHE_DIR = before


_CACHE_DIR_LOCK = threading.Lock()  # _njit swaps numba's process-wide CACHE_DIR


def _compile(func: Callable[..., Any]) -> Callable[..., Any]:
    return _njit(func, nogil=True)


def helper(func: F | None = None, *, inline: bool = True) -> Any:
    """Mark a function kernels call: compiled with them, inlined unless ``inline=False``."""

    def mark(f: F) -> F:
        f._dp_helper = "always" if inline else "never"  # type: ignore[attr-defined]
        return f

    return mark if func is None else mark(func)


def _compile_helpers(func: Callable[..., Any], done: set[int] | None = None) -> None:
    """Replace the module globals of ``func`` marked by :func:`helper` by numba functions."""
    import numba

    names = func.__globals__
    done = set() if done is None else done
    done.add(id(names))
    for name, value in list(names.items()):
        how = getattr(value, "_dp_helper", None)
        if how is not None and not isinstance(value, numba.core.registry.CPUDispatcher):
            if id(value.__globals__) not in done:
                _compile_helpers(value, done)
            names[name] = _njit(value, inline=how)


def kernel(func: F) -> F:
    """Decorate a kernel: compiled (and cached) on first call when the JIT is enabled.

    The path is chosen at each call, so ``DP_EXPERTS_NO_JIT`` set by a test applies at once.
    Functions the kernel calls are marked with :func:`helper`.
    """
    compiled: list[Callable[..., Any]] = []

    @functools.wraps(func)
    def call(*args: Any) -> Any:
        if not jit_enabled():
            return func(*args)
        return (compiled[0] if compiled else compiled_form())(*args)

    def compiled_form() -> Callable[..., Any]:
        """The compiled form, compiled now if needed, without a path decision (jit_active)."""
        if not compiled:
            _compile_helpers(func)
            compiled.append(_compile(func))
        return compiled[0]

    def resolve() -> Callable[..., Any]:
        """What a call would run now: for a caller that calls a kernel every round."""
        return compiled_form() if jit_enabled() else func

    call.py_func = func  # type: ignore[attr-defined]
    call.resolve = resolve  # type: ignore[attr-defined]
    call.compiled = compiled_form  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
