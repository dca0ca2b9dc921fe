"""Reference arrays of the behaviour locks: how they are stored and how they are compared.

The env lock (``_env_lock.py``) and the learner lock (``_learner_lock.py``) record what they
observe as named arrays and compare them with a reference stored in ``tests/data/*.npz``:

* integers, booleans and strings must be **equal** (actions of discrete learners, rounds,
  segments, flags, the env's attributes);
* floats must agree to a relative tolerance of :data:`RTOL` = 1e-9, with an absolute floor of
  :data:`RTOL` times the largest magnitude in the same array (``|x - ref| <= 1e-9 (|ref| +
  max|ref|)``), so values that cancel to near zero (a regret of 0 computed as a difference of
  two sums of hundreds) are not held to 1e-9 of themselves.

Why a tolerance: the same code on another CPU may differ in the last bits of a float (numpy's
transcendental functions have CPU-specific SIMD kernels, one per instruction set; the OpenBLAS
kernel chosen for the CPU orders its sums differently). On one machine every value is bit for bit
reproducible; the exact SHA-256 of the bytes is kept beside the arrays as an informational check:
a lock case whose bytes differ while its values pass is added to :data:`BYTE_REPORT`, which the
suite prints at the end of the run (it reports, never fails).

Stored floats are rounded to :data:`KEEP_BITS` bits of mantissa (relative error <= 2^-41,
4.5e-13, far inside the tolerance), which keeps the xz-compressed reference files small;
integers, booleans and strings are stored as they are (see :func:`save`).
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

RTOL = 1e-9
KEEP_BITS = 40  # of the 52 bits of a float64 mantissa
#: Lock cases ("case (path)") equal within the tolerance but not byte for byte the reference
#: machine's; printed in the run's summary by tests/conftest.py.
BYTE_REPORT: set[str] = set()


def _round_mantissa(values: np.ndarray) -> np.ndarray:
    """Round float64 values to :data:`KEEP_BITS` mantissa bits (ties away from zero)."""
    bits = np.ascontiguousarray(values, dtype="<f8").view("<u8")
    drop = np.uint64(52 - KEEP_BITS)
    half = np.uint64(1) << (drop - np.uint64(1))
    mask = ~((np.uint64(1) << drop) - np.uint64(1))
    # Adding half a unit carries into the exponent when needed, which is the correct rounding.
    rounded = np.where(np.isfinite(values), (bits + half) & mask, bits)
    return rounded.view("<f8")


def _stored(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype.kind == "f":
        return _round_mantissa(value.astype(np.float64))
    return np.ascontiguousarray(value)


def save(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    base_of: Callable[[str], str | None] = lambda key: None,
) -> None:
    """Write named arrays to one xz-compressed file (floats rounded to :data:`KEEP_BITS` bits).

    ``base_of(key)`` may name another array of the same shape and dtype that this one mostly
    repeats (the env lock's neighbouring episode repeats the plain one): the array is then
    stored as the XOR of its bytes with the base's, which compresses to almost nothing where
    they agree. The format: one JSON line ``[[key, dtype, shape, base or null], ...]``, then the
    arrays' bytes in that order (bases first).
    """
    stored = {key: _stored(value) for key, value in arrays.items()}
    bases = {}
    for key, value in stored.items():
        base = base_of(key)
        if (
            base in stored
            and stored[base].shape == value.shape
            and (stored[base].dtype == value.dtype)
        ):
            bases[key] = base
    order = sorted(k for k in stored if k not in bases) + sorted(bases)
    index, chunks = [], []
    for key in order:
        value = stored[key]
        raw = value.tobytes()
        if key in bases:
            raw = (value.view(np.uint8) ^ stored[bases[key]].view(np.uint8)).tobytes()
        index.append([key, value.dtype.str, list(value.shape), bases.get(key)])
        chunks.append(raw)
    header = json.dumps(index, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(lzma.compress(header + b"".join(chunks), preset=9))


def load(path: Path) -> dict[str, np.ndarray]:
    """Read what :func:`save` wrote."""
    data = lzma.decompress(path.read_bytes())
    header, _, body = data.partition(b"\n")
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for key, dtype, shape, base in json.loads(header):
        dt = np.dtype(dtype)
        nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        raw = np.frombuffer(body, dtype=np.uint8, count=nbytes, offset=offset)
        offset += nbytes
        if base is not None:
            raw = raw ^ arrays[base].view(np.uint8).reshape(-1)
        arrays[key] = raw.copy().view(dt).reshape(shape)
    return arrays


def _where(shape: tuple[int, ...], flat_index: int) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape))) if shape else "()"


def compare(actual: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray]) -> list[str]:
    """The differences between recorded and reference arrays, one readable line each.

    Empty when every array matches (see the module docstring for what "matches" means).
    """
    problems = []
    for key in sorted(set(reference) - set(actual)):
        problems.append(f"{key}: missing (the reference has it)")
    for key in sorted(set(actual) - set(reference)):
        problems.append(f"{key}: new array (not in the reference)")
    for key in sorted(set(actual) & set(reference)):
        got, ref = np.asarray(actual[key]), np.asarray(reference[key])
        if (ref.dtype.kind == "f") != (got.dtype.kind == "f"):
            problems.append(f"{key}: dtype {got.dtype} where the reference has {ref.dtype}")
            continue
        if got.shape != ref.shape:
            problems.append(f"{key}: shape {got.shape} where the reference has {ref.shape}")
            continue
        if ref.dtype.kind != "f":
            if got.dtype != ref.dtype and not (got.dtype.kind == ref.dtype.kind == "U"):
                problems.append(f"{key}: dtype {got.dtype} where the reference has {ref.dtype}")
                continue
            bad = np.flatnonzero(got.reshape(-1) != ref.reshape(-1))
            if bad.size:
                i = int(bad[0])
                problems.append(
                    f"{key}: {bad.size} of {ref.size} values differ (must be equal); first at "
                    f"{_where(ref.shape, i)}: {got.reshape(-1)[i].item()!r} vs reference "
                    f"{ref.reshape(-1)[i].item()!r}"
                )
            continue
        got64, ref64 = got.astype(np.float64).reshape(-1), ref.astype(np.float64).reshape(-1)
        same_special = (np.isnan(got64) & np.isnan(ref64)) | (np.isinf(ref64) & (got64 == ref64))
        finite_ref = ref64[np.isfinite(ref64)]
        scale = float(np.abs(finite_ref).max()) if finite_ref.size else 0.0
        with np.errstate(invalid="ignore"):
            close = np.abs(got64 - ref64) <= RTOL * (np.abs(ref64) + scale)
        bad = np.flatnonzero(~(close | same_special))
        if bad.size:
            i = int(bad[0])
            diff = np.abs(got64[bad] - ref64[bad])
            problems.append(
                f"{key}: {bad.size} of {ref.size} values differ by more than rtol {RTOL:g} "
                f"(largest difference {float(np.nanmax(diff)) if diff.size else 0.0:.3g}, "
                f"array scale {scale:.3g}); first at {_where(ref.shape, i)}: "
                f"{float(got64[i])!r} vs reference {float(ref64[i])!r}"
            )
    return problems


def split_cases(arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """``{"case|path": array}`` grouped as ``{case: {path: array}}``."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, value in arrays.items():
        case, _, path = key.partition("|")
        out.setdefault(case, {})[path] = value
    return out


def join_cases(cases: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The inverse of :func:`split_cases`."""
    return {f"{case}|{path}": v for case, paths in cases.items() for path, v in paths.items()}
