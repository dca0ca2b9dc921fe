"""numpy's PCG64 for many streams at once, compiled: the batched random streams' fast form.

A :class:`~dp_experts_env.batch_rng.BatchRNG` of B runs is B ``Generator(PCG64)`` streams. Made
one object at a time, their construction dominated an audit's learner builds; filled
one row at a time, each refill is a Python loop over the runs. Here the streams are rows of a
(B, 4) uint64 array -- state high and low words, increment high and low -- seeded and advanced
by one compiled loop each, with numpy's arithmetic (``pcg64.h``: the 128-bit LCG step with
``PCG_DEFAULT_MULTIPLIER_128``, the XSL-RR output, ``(x >> 11) * 2**-53`` doubles), so every
stream gives the bits of its ``Generator(PCG64)``: tests/test_pcg64.py compares them on many
seeds, widths and refill patterns, and plays every learner lock on the array form.

Only integer arithmetic is involved, so the two forms cannot differ by a compiler's choices;
choosing between them is therefore not a path decision (:func:`dp_experts_env._jit.jit_active`).
This module is compiled-only (its 64 x 64 -> 128-bit product is an LLVM instruction, as numpy's
``__uint128_t``): :class:`~dp_experts_env.batch_rng.BatchRNG` imports it only when the JIT is
active, so importing the package still imports no numba.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from dp_experts_env._jit import helper, kernel

__all__ = ["fill", "seed_states"]

_MULT_HIGH = np.uint64(2549297995355413924)  # PCG_DEFAULT_MULTIPLIER_128, high word
_MULT_LOW = np.uint64(4865540595714422341)  # and low word
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_DOUBLE_SHIFT = np.uint64(11)
_ROT_SHIFT = np.uint64(58)
_MASK63 = np.uint64(63)
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53


@intrinsic
def _mul_full(typingctx, a, b):  # noqa: ANN001, ANN202, ARG001
    """(high, low) words of the 128-bit product of two uint64 (one LLVM ``mul i128``)."""
    signature = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        wide, word = ir.IntType(128), ir.IntType(64)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), word)
        return context.make_tuple(builder, sig.return_type, (high, builder.trunc(product, word)))

    return signature, codegen


@helper
def _step(hi, lo, inc_hi, inc_lo):  # noqa: ANN001, ANN202
    """One LCG step: (hi, lo) * multiplier + increment, modulo 2**128."""
    prod_hi, prod_lo = _mul_full(lo, _MULT_LOW)
    prod_hi = prod_hi + lo * _MULT_HIGH + hi * _MULT_LOW
    new_lo = prod_lo + inc_lo
    carry = _ONE if new_lo < prod_lo else _ZERO
    return prod_hi + inc_hi + carry, new_lo


@helper
def _output(hi, lo):  # noqa: ANN001, ANN202
    """XSL-RR: the 64-bit output of a state."""
    rot = hi >> _ROT_SHIFT
    x = hi ^ lo
    return (x >> rot) | (x << ((_ZERO - rot) & _MASK63))


@kernel
def seed_states(words):  # noqa: ANN001, ANN202
    """(B, 4) streams from (B, 4) ``SeedSequence.generate_state(4, uint64)`` rows.

    numpy's ``pcg64_set_seed``: words 0-1 are the initial state (high, low), words 2-3 the
    sequence, whose increment is ``2 * sequence + 1``; the state starts at 0, steps, adds the
    initial state and steps again.
    """
    out = np.empty((words.shape[0], 4), np.uint64)
    for b in range(words.shape[0]):
        inc_hi = (words[b, 2] << _ONE) | (words[b, 3] >> _MASK63)
        inc_lo = (words[b, 3] << _ONE) | _ONE
        hi, lo = _step(_ZERO, _ZERO, inc_hi, inc_lo)
        new_lo = lo + words[b, 1]
        carry = _ONE if new_lo < lo else _ZERO
        hi, lo = _step(hi + words[b, 0] + carry, new_lo, inc_hi, inc_lo)
        out[b, 0] = hi
        out[b, 1] = lo
        out[b, 2] = inc_hi
        out[b, 3] = inc_lo
    return out


@kernel
def fill(streams, out, start):  # noqa: ANN001, ANN202
    """Fill ``out[b, start:]`` with stream b's next doubles on [0, 1), for every row b."""
    for b in range(out.shape[0]):
        hi = streams[b, 0]
        lo = streams[b, 1]
        inc_hi = streams[b, 2]
        inc_lo = streams[b, 3]
        for j in range(start, out.shape[1]):
            hi, lo = _step(hi, lo, inc_hi, inc_lo)
            out[b, j] = (_output(hi, lo) >> _DOUBLE_SHIFT) * _TO_DOUBLE
        streams[b, 0] = hi
        streams[b, 1] = lo
