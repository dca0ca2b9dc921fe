"""numpy's own float64 ufunc loops, called from compiled kernels through their function pointers.

numpy's SIMD ``exp``, ``log`` and ``power`` differ from libm's (numba's) in the last bit, so a
kernel that must give numpy's floats calls the very loop numpy runs: :func:`ufunc_loop` gets its
addresses (``ufunc._get_strided_loop``) and the ``*_into`` functions call it on contiguous rows
(their Python forms call the ufunc). No loop handed out: None, and the learners play per round.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = [
    "exp_into",
    "log_into",
    "power_scalar_into",
    "register",
    "ufunc_loop",
    "xlogy_into",
]

_CALL_INFO = b"numpy_1.24_ufunc_call_info"  # the capsule name numpy gives its call-info struct
_LOOPS: dict[tuple[str, tuple[int, ...]], tuple[Any, np.ndarray] | None] = {}
_REGISTERED: list[bool] = []


def ufunc_loop(ufunc: np.ufunc, strides: tuple[int, ...]) -> np.ndarray | None:
    """``[function, context, auxdata]`` of ``ufunc``'s all-float64 loop for these strides.

    Args:
        ufunc: a numpy (or scipy) ufunc with a float64 loop.
        strides: the byte strides of its inputs and output (8 contiguous, 0 a scalar).

    Returns:
        The three addresses (the loop's context is kept alive here for the process), or None
        when this numpy does not hand the loop out or the loop needs the interpreter.
    """
    key = (f"{type(ufunc).__module__}.{ufunc.__name__}", tuple(strides))
    if key in _LOOPS:
        found = _LOOPS[key]
        return None if found is None else found[1]
    result: tuple[Any, np.ndarray] | None = None
    try:
        float64 = np.dtype(np.float64)
        dtypes = (float64,) * ufunc.nin + (None,) * ufunc.nout
        _, info = ufunc._resolve_dtypes_and_context(dtypes)  # type: ignore[attr-defined]
        ufunc._get_strided_loop(info, fixed_strides=tuple(strides))  # type: ignore[attr-defined]
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.py_object, ctypes.c_char_p]
        address = get(info, _CALL_INFO)
        # struct {loop *strided_loop; context *context; NpyAuxData *auxdata; npy_bool
        # requires_pyapi; npy_bool no_floatingpoint_errors;}
        pointers = (ctypes.c_void_p * 3).from_address(address)
        requires_pyapi = ctypes.c_ubyte.from_address(address + 3 * ctypes.sizeof(ctypes.c_void_p))
        if pointers[0] and pointers[1] and not requires_pyapi.value:
            result = (info, np.array([pointers[0], pointers[1], pointers[2] or 0], np.int64))
    except (AttributeError, TypeError, ValueError, OSError):
        result = None
    _LOOPS[key] = result
    return None if result is None else result[1]


def exp_into(x: np.ndarray, out: np.ndarray, n: int, loop: np.ndarray) -> None:
    """``out[:n] = np.exp(x[:n])`` over C-contiguous arrays in memory order (compiled: ``loop``)."""
    np.exp(x.reshape(-1)[:n], out=out.reshape(-1)[:n])


def log_into(x: np.ndarray, out: np.ndarray, n: int, loop: np.ndarray) -> None:
    """``out[:n] = np.log(x[:n])`` (compiled: ``loop``, numpy's log loop, strides 8, 8)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        np.log(x[:n], out=out[:n])


def xlogy_into(
    x: np.ndarray, y: np.ndarray, out: np.ndarray, n: int, loop: np.ndarray
) -> None:
    """``out[:n] = scipy.special.xlogy(x[:n], y[:n])`` (compiled: ``loop``, strides 8, 8, 8)."""
    from scipy.special import xlogy

    xlogy(x[:n], y[:n], out=out[:n])


def power_scalar_into(
    x: np.ndarray, y: np.ndarray, out: np.ndarray, n: int, loop: np.ndarray
) -> None:
    """``out[:n] = x[:n] ** y[0]`` (compiled: numpy's ``power`` loop, strides 8, 0, 8)."""
    np.power(x[:n], y[0], out=out[:n])


def register() -> None:
    """Give the ``*_into`` functions their compiled forms (once per process; needs numba)."""
    if _REGISTERED:
        return
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def call_loop(typingctx, fn, ctx, data, dims, strides, aux):  # noqa: ANN001, ANN202, ARG001
        # int loop(PyArrayMethod_Context *, char *const *data, const npy_intp *dimensions,
        #          const npy_intp *strides, NpyAuxData *)
        sig = types.int32(types.int64, types.int64, types.int64, types.int64, types.int64,
                          types.int64)

        def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
            pointer = ir.IntType(8).as_pointer()
            function = ir.FunctionType(ir.IntType(32), [pointer] * 5)
            target = builder.inttoptr(args[0], function.as_pointer())
            return builder.call(target, [builder.inttoptr(a, pointer) for a in args[1:]])

        return sig, codegen

    def unary_impl(x, out, n, loop):  # noqa: ANN001, ANN202, ARG001
        def impl(x, out, n, loop):  # noqa: ANN001, ANN202
            data = np.empty(2, dtype=np.int64)
            sizes = np.empty(3, dtype=np.int64)  # the count, then the strides
            data[0] = x.ctypes.data
            data[1] = out.ctypes.data
            sizes[0] = n
            sizes[1] = 8
            sizes[2] = 8
            call_loop(loop[0], loop[1], data.ctypes.data, sizes.ctypes.data,
                      sizes.ctypes.data + 8, loop[2])

        return impl

    overload(exp_into)(unary_impl)
    overload(log_into)(unary_impl)

    def binary_impl(second_stride: int):  # noqa: ANN202
        # xlogy's y is an array (stride 8); power's exponent a scalar read in place (stride 0).
        def typer(x, y, out, n, loop):  # noqa: ANN001, ANN202, ARG001
            def impl(x, y, out, n, loop):  # noqa: ANN001, ANN202
                data = np.empty(3, dtype=np.int64)
                sizes = np.empty(4, dtype=np.int64)
                data[0] = x.ctypes.data
                data[1] = y.ctypes.data
                data[2] = out.ctypes.data
                sizes[0] = n
                sizes[1] = 8
                sizes[2] = second_stride
                sizes[3] = 8
                call_loop(loop[0], loop[1], data.ctypes.data, sizes.ctypes.data,
                          sizes.ctypes.data + 8, loop[2])

            return impl

        return typer

    overload(xlogy_into)(binary_impl(8))
    overload(power_scalar_into)(binary_impl(0))
    _REGISTERED.append(True)
