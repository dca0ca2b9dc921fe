"""The env lock's feeder (``_env_lock._feed``, ``Recorder``) against the recursive one it replaced.

``tests/data/env_hashes.json`` holds SHA-256 digests of the bytes the first feeder wrote (kept
below verbatim as the reference, ``_old_feed`` and ``_OldRecorder``). The faster feeder must give
the same digest and the same recorded arrays (dtype, shape and bytes) for every value it can be
fed: nested dicts, lists and tuples, arrays of every dtype (0-d, empty, non-contiguous,
big-endian), Python and numpy scalars, -0.0 and NaN payloads, ints past int64, strings, None;
and for real env episodes. The controls: a feeder writing an array's bytes in memory order is
caught (a transposed array), one writing a Python float through a numpy scalar passes.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict, namedtuple
from typing import Any

import _env_lock
import numpy as np
import pytest
from _env_lock import Recorder, _feed, _stacked, record_case


def _old_feed(h: Any, value: Any, path: str = "", leaves: dict | None = None) -> None:
    """The recursive feeder the hashes in tests/data were taken with (verbatim)."""
    if isinstance(value, dict):
        h.update(b"{")
        for key in sorted(value):
            h.update(repr(key).encode())
            _old_feed(h, value[key], f"{path}/{key}", leaves)
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for i, item in enumerate(value):
            _old_feed(h, item, f"{path}/{i}", leaves)
        h.update(b"]")
    else:
        arr = np.asarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
        if leaves is not None:
            leaves.setdefault(path, []).append(arr.copy())


class _OldRecorder:
    """The first ``Recorder`` (verbatim but for the feeder's name)."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self._leaves: dict[str, list[np.ndarray]] = {}

    def feed(self, path: str, value: Any, names: tuple[str, ...] | None = None) -> None:
        if names is None:
            _old_feed(self.digest, value, path, self._leaves)
            return
        if len(names) != len(value):
            raise ValueError(f"{path}: {len(value)} items, expected {names}")
        self.digest.update(b"[")
        for name, item in zip(names, value, strict=True):
            _old_feed(self.digest, item, f"{path}/{name}", self._leaves)
        self.digest.update(b"]")

    def arrays(self) -> dict[str, np.ndarray]:
        out = {}
        for path, leaves in self._leaves.items():
            shapes = {leaf.shape for leaf in leaves}
            if len(shapes) != 1:
                raise ValueError(f"{path}: leaves of different shapes {sorted(shapes)}")
            out[path.lstrip("/")] = np.stack(leaves)
        return out


def _nan(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


DTYPES = [
    "?", "i1", "i2", "<i4", ">i4", "<i8", ">i8", "u1", "<u2", "<u4", "<u8", ">u8", "<f2", "<f4",
    ">f4", "<f8", ">f8", "g", "<c8", "<c16", ">c16", "G", "<U3", ">U2", "S4", "<M8[s]", "<m8[ms]",
    "V3", [("a", "<i2"), ("b", ">f8")], "O",
]  # fmt: skip


def _arrays_of_every_dtype(rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for dtype in DTYPES:
        raw = rng.integers(0, 256, size=24 * np.dtype(dtype).itemsize, dtype=np.uint8)
        if dtype == "O":
            base = np.array([1, "a", None, 2.5, (1,), -0.0] * 4, dtype=object).reshape(4, 6)
        elif np.dtype(dtype).kind == "U":  # valid code points (the BMP below the surrogates)
            base = (raw.view(np.uint32) % 0xD800).view(dtype).reshape(4, 6)
        else:
            base = raw.view(dtype).reshape(4, 6)
        out += [base, base[::2, 1::3], base.T, np.asfortranarray(base)]
        if dtype not in ("g", "G"):  # a long double scalar: see _scalars
            out.append(base[0, 0])
        out += [np.asarray(base[1, 2]), base[:0], base.reshape(2, 3, 4)[:, ::-1, 1:]]
    return out


def _scalars() -> list[Any]:
    # No long double scalars: np.asarray leaves their padding bytes uninitialised, so the old
    # feeder's digest of one is not a function of its value (arrays of dtypes g and G are).
    payloads = [_nan(0x7FF8000000000001), _nan(0xFFF0000000000123), _nan(0x7FF4000000000000)]
    return [
        0.0, -0.0, 1.5, float("inf"), -float("inf"), float("nan"), *payloads, 5e-324,
        0, -1, 2**63 - 1, -(2**63), 2**63, 2**64, -(2**63) - 1, True, False,
        np.float64(-0.0), np.float64(payloads[0]), np.float32(2.5), np.float16(-0.0),
        np.int64(-3), np.int8(7), np.uint64(2**64 - 1), np.bool_(True), np.bool_(False),
        np.complex128(1 - 2j), np.datetime64("2024-06-11"),
        np.timedelta64(3, "h"), np.str_("ab"), np.bytes_(b"x"),
        "", "a", "a\x00", "\U0001f600b", b"", b"xy\x00", None,
    ]  # fmt: skip


def _values() -> list[Any]:
    rng = np.random.default_rng(11)
    arrays, scalars = _arrays_of_every_dtype(rng), _scalars()
    point = namedtuple("point", "x y")
    nested = {
        "b": [1.0, (True, np.arange(3)), {"z": -0.0, "a": {"deep": [[], (), {}]}}],
        "a": (np.float64(2.0), "round", None),
        "c": OrderedDict([("y", 1), ("x", np.ones((2, 2))[:, 0])]),
    }
    return [
        *arrays, *scalars, nested, list(scalars), tuple(arrays[:9]), point(1.0, np.zeros(2)),
        {1: "one", 0: "zero"}, {"1": 1, "0": 0.5}, {(1, 2): 3.0, (0, 5): 4.0}, {True: 1.0},
        {1.5: [2], -0.5: [3]}, {}, [], (), [[np.arange(4.0).reshape(2, 2).T]],
    ]  # fmt: skip


def _same_arrays(new: dict[str, np.ndarray], old: dict[str, np.ndarray]) -> list[str]:
    """The paths where the two feeders' recorded arrays differ in dtype, shape or bytes."""
    bad = sorted(set(new) ^ set(old))
    for path in sorted(set(new) & set(old)):
        a, b = new[path], old[path]
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            bad.append(f"{path}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    return bad


def _differences(values: list[Any], feed=_feed) -> list[str]:
    """Each value (alone, and the list of all of them as one round) fed by ``feed`` and by
    ``_old_feed``: where the digests or the recorded leaves differ."""
    found = []
    for i, value in enumerate([*values, values]):
        new_h, old_h = hashlib.sha256(), hashlib.sha256()
        new_leaves: dict = {}
        old_leaves: dict = {}
        feed(new_h, value, "v", new_leaves)
        _old_feed(old_h, value, "v", old_leaves)
        if new_h.digest() != old_h.digest():
            found.append(f"value {i} ({type(value).__name__}): digests differ")
        stacked = {p.lstrip("/"): _stacked(p, leaves) for p, leaves in new_leaves.items()}
        old = _OldRecorder()
        old._leaves = old_leaves
        found += [f"value {i}: {p}" for p in _same_arrays(stacked, old.arrays())]
    return found


def test_the_feeder_gives_the_old_digests_and_leaves_for_every_kind_of_value() -> None:
    assert _differences(_values()) == []


def test_rounds_of_leaves_stack_as_the_old_recorder_stacked_them() -> None:
    """Several rounds through ``Recorder.feed`` (named items and plain values): scalar leaves of
    one type, of mixed types (int then float, bool then int, Python then numpy), ints past int64,
    arrays; the same digest and arrays as the old recorder, and the same refusals."""
    rounds = [
        (0.5, True, 3, {"r": 1, "s": 2.0, "m": np.int64(4), "x": np.arange(2.0)}),
        (-0.0, False, -7, {"r": 2.5, "s": 2, "m": 5, "x": np.arange(2.0)[::-1]}),
        (_nan(0x7FF8000000000007), True, 2**63, {"r": True, "s": 1, "m": 6.0, "x": np.ones(2)}),
    ]
    new, old = Recorder(), _OldRecorder()
    for recorder in (new, old):
        for step in rounds:
            recorder.feed("step", step, ("a", "b", "c", "info"))
            recorder.feed("plain", [step[0], {"k": step[2]}])
    assert new.digest.hexdigest() == old.digest.hexdigest()
    assert new.arrays().keys() == old.arrays().keys()
    assert _same_arrays(new.arrays(), old.arrays()) == []
    assert new.arrays()["step/info/r"].dtype == np.float64  # int, float and bool promoted
    with pytest.raises(ValueError, match="expected"):
        new.feed("step", (1.0, 2.0), ("a", "b", "c"))
    for recorder in (new, old):
        recorder.feed("step", (1.0, True, 1, {"r": 1, "s": 2, "m": 3, "x": np.ones(3)}), None)
        recorder.feed("shapes", np.ones(2))
        recorder.feed("shapes", 1.0)
    for recorder in (new, old):
        with pytest.raises(ValueError, match=r"shapes: leaves of different shapes \[\(\), \(2,"):
            recorder.arrays()


def test_the_recorded_arrays_are_copies_read_only_and_recomputed_after_a_feed() -> None:
    rec = Recorder()
    rec.feed("x", np.arange(3.0))
    first = rec.arrays()
    with pytest.raises(ValueError):
        first["x"][0] = 1.0
    assert rec.arrays()["x"] is first["x"]  # the shared recording is stacked once
    rec.feed("x", np.arange(3.0))
    assert rec.arrays()["x"].shape == (2, 3)
    buffer = np.zeros(2)  # an env may write its next observation into the same array
    rec.feed("buffer", {"obs": buffer})
    buffer += 1.0
    rec.feed("buffer", {"obs": buffer})
    assert rec.arrays()["buffer/obs"].tolist() == [[0.0, 0.0], [1.0, 1.0]]


@pytest.mark.parametrize(
    ("env_id", "family"),
    [
        ("DPExperts-Oblivious-v0", "replay"),
        ("DPExperts-OCO-v0", "replay"),
        ("DPExperts-Bandit-v0", "replay"),
        ("DPExperts-BanditAdvice-v0", "replay"),
        ("DPExperts-Stochastic-v0", "uniform_means"),
        ("DPExperts-Adaptive-v0", "sign_estimation"),
    ],
)
def test_an_env_episode_feeds_the_old_digest_and_arrays(env_id, family, monkeypatch) -> None:
    """A real case recorded by both recorders from the same values (dict observations, vector
    steps, info dicts): the same digest and arrays. On the machine that took the references,
    every case's digest also equals ``env_hashes.json`` (``python tests/_env_lock.py``)."""
    olds = []

    class Tee(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.old = _OldRecorder()
            olds.append(self.old)

        def feed(self, path, value, names=None) -> None:
            super().feed(path, value, names)
            self.old.feed(path, value, names)

    monkeypatch.setattr(_env_lock, "Recorder", Tee)
    rec = record_case(env_id, family)
    (old,) = olds
    assert rec.digest.hexdigest() == old.digest.hexdigest()
    assert _same_arrays(rec.arrays(), old.arrays()) == []


def test_a_feeder_writing_memory_order_is_caught_and_a_harmless_one_passes() -> None:
    """Controls of the comparison: bytes in memory order (not C order) differ on a transposed
    array (caught); a Python float written as its numpy scalar's bytes is the same (passes)."""

    def memory_order(h, value, path="", leaves=None):
        if type(value) is np.ndarray:
            h.update(f"{value.dtype.str}{value.shape}".encode() + value.tobytes(order="A"))
            return None if leaves is None else leaves.setdefault(path, []).append(value.copy())
        return _feed(h, value, path, leaves)

    def via_numpy(h, value, path="", leaves=None):
        if type(value) is float:
            value = np.float64(value)
        return _feed(h, value, path, leaves)

    transposed = np.arange(6.0).reshape(2, 3).T
    assert _differences([transposed], memory_order) != []
    assert _differences([np.arange(6.0)], memory_order) == []
    assert _differences([1.5, -0.0, _nan(0x7FF8000000000001), {"a": 2.0}], via_numpy) == []
