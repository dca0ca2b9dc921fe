"""The switch between compiled kernels (numba) and the numpy reference path.

Kernels are plain Python functions written in the subset numba compiles; :func:`kernel` returns
the compiled form when the JIT is enabled and the function itself otherwise (so the kernels run,
slowly, as Python when numba is missing: their tests run on both paths). Callers that have a
numpy path (the per-round ``act`` of the learners, the numpy regret update) use it whenever
:func:`jit_enabled` is False: that path is the reference, and the compiled one must equal it bit
for bit.

Kernels only use operations whose IEEE result does not depend on the implementation (``+ - * /``,
``min``, ``max``, comparisons, ``sqrt``) in the order numpy applies them; numpy's own ``exp`` and
``log`` (SIMD code on AVX-512 machines) differ from the C library's in the last bit for a few
percent of inputs, so transcendental functions are evaluated by numpy, vectorised over a block,
and handed to the kernels.

Environment:

* ``DP_EXPERTS_NO_JIT=1`` (or the older ``DP_EXPERTS_NUMBA=0``) forces the numpy path.
* :func:`numpy_path` forces it for a block of code: a grid too small to pay for importing numba
  and loading its cached kernels (~0.4 s of CPU) plays without them
  (:func:`dp_experts_env.evaluation.backends.execute`); results are the same either way.
* Compiled kernels are cached on disk (numba ``cache=True``: next to the source, or numba's
  user-wide cache directory when the source tree is read-only; ``NUMBA_CACHE_DIR`` overrides).
  Where no cache location is writable, kernels are compiled in memory instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["helper", "jit_enabled", "kernel", "numba_available", "numpy_path"]

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

    At import, ``numba.np.arraymath`` tries ``scipy.linalg.cython_blas`` (~0.3 s of CPU: it
    imports ``scipy.linalg``) only to decide whether ``np.correlate``/``np.convolve`` compile to
    a BLAS dot or to a plain loop; no kernel of the suite calls either. The import is refused
    while that module loads (``sys.modules[name] = None`` makes ``import name`` raise
    ImportError) and allowed again at once, so numba's BLAS-backed functions (``np.dot``, ``@``,
    ``np.linalg``), which import it when they are compiled, still work in this process (tested
    in tests/test_fixed_cost.py). A process that already imported either module is left alone.
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


def jit_enabled() -> bool:
    """True when compiled kernels are used (numba importable and not switched off)."""
    if _NUMPY_ONLY[0]:
        return False
    if os.environ.get("DP_EXPERTS_NO_JIT", "0") not in ("", "0"):
        return False
    if os.environ.get("DP_EXPERTS_NUMBA", "1") == "0":
        return False
    return numba_available()


def _compile(func: Callable[..., Any]) -> Callable[..., Any]:
    import numba

    try:
        return numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # no writable cache location ("no locator available")
        return numba.njit(cache=False, nogil=True)(func)


def helper(func: F | None = None, *, inline: bool = True) -> Any:
    """Mark a function a kernel calls: compiled along with the kernels that call it.

    Until then it is the Python function, so kernels run as Python without numba. Inlined
    unless ``inline=False`` (a recursive helper cannot be inlined).
    """

    def mark(f: F) -> F:
        f._dp_helper = "always" if inline else "never"  # type: ignore[attr-defined]
        return f

    return mark if func is None else mark(func)


def _compile_helpers(func: Callable[..., Any]) -> None:
    """Replace the module globals of ``func`` marked by :func:`helper` by numba functions."""
    import numba

    names = func.__globals__
    for name, value in list(names.items()):
        how = getattr(value, "_dp_helper", None)
        if how is not None and not isinstance(value, numba.core.registry.CPUDispatcher):
            names[name] = numba.njit(inline=how, cache=True)(value)


def kernel(func: F) -> F:
    """Decorate a kernel: compiled (and cached) on first call when the JIT is enabled.

    The choice is made at each call (cheap), so ``DP_EXPERTS_NO_JIT`` set by a test applies at
    once; the compiled dispatcher is built once per process. Functions the kernel calls are
    marked with :func:`helper` (module-level, in the kernel's module).
    """
    compiled: list[Callable[..., Any]] = []

    @functools.wraps(func)
    def call(*args: Any) -> Any:
        if not jit_enabled():
            return func(*args)
        if not compiled:
            _compile_helpers(func)
            compiled.append(_compile(func))
        return compiled[0](*args)

    def resolve() -> Callable[..., Any]:
        """What a call would run now: for a caller that calls a kernel every round."""
        if not jit_enabled():
            return func
        if not compiled:
            _compile_helpers(func)
            compiled.append(_compile(func))
        return compiled[0]

    call.py_func = func  # type: ignore[attr-defined]
    call.resolve = resolve  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
