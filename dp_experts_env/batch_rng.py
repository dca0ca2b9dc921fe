"""Per-run random streams for batched simulation.

Each run owns a :class:`numpy.random.Generator` (run ``b`` equals a single run seeded
``seeds[b]``), read in chunks. The contract: every call consumes the same number of uniforms from
every run, set by the call's shape only (draw for all runs, then mask).
"""

from __future__ import annotations

import gc
import math
import sys
from collections.abc import Sequence

import numpy as np

from dp_experts_env import samplers
from dp_experts_env._jit import jit_active

# Re-exported from dp_experts_env.samplers for callers that import them from here.
from dp_experts_env.samplers import (  # noqa: F401
    LAPLACE_TAPS,
    OPEN_HIGH,
    OPEN_LOW,
    laplace_tap,
    tap_laplace,
)

__all__ = [
    "ARRAY_FROM_RUNS",
    "LAPLACE_TAPS",
    "BatchRNG",
    "fill_rows",
    "laplace_tap",
    "run_seeds",
    "seeded_generators",
    "seeded_streams",
    "stream_states",
    "tap_laplace",
]

# Refill size per run: <= 4096 doubles, <= 4 M across a batch, >= 64 (streams do not depend on it).
_BUFFER_DOUBLES = 1 << 22
_MAX_CHUNK = 4096
_MIN_CHUNK = 64
#: Runs from which the streams are one compiled array (:func:`seeded_streams`).
ARRAY_FROM_RUNS = 32
# The first refill reads at most this many per run, each later one _FILL_GROWTH times the last, up
# to the chunk: a learner that draws a few uniforms per run (an audit builds thousands of them)
# no longer pays for a whole chunk; a long reader pays two or three extra refills.
_FIRST_FILL = 256
_FILL_GROWTH = 4
# References to the buffer when no view is alive: the attribute, _take's local, getrefcount's.
_UNSHARED = 3


def run_seeds(seed: int | Sequence[int] | None, num_runs: int) -> list[int]:
    """One seed per run: ``s, s+1, ..., s+B-1`` for an integer, a sequence as is, None fresh."""
    if seed is None:
        base = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(2))
        return [base + b for b in range(num_runs)]
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return [int(seed) + b for b in range(num_runs)]
    if isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, (str, bytes)):
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in seed):
            raise TypeError("seed must be None, an int or a sequence of ints")
        seeds = [int(s) for s in seed]
        if len(seeds) != num_runs:
            raise ValueError(f"seed must hold one seed per run ({num_runs}), got {len(seeds)}")
        if any(s < 0 for s in seeds):
            raise ValueError("seed values must be non-negative integers")
        return seeds
    raise TypeError(f"seed must be None, an int or a sequence of ints, got {type(seed).__name__}")


class BatchRNG:
    """B independent uniform streams, served batch-first.

    Args:
        seeds: one non-negative integer per run.
        stream: a small integer naming the purpose of the stream (data, structure, agent, ...), so
            one seed can feed several independent streams without overlap.
    """

    def __init__(self, seeds: Sequence[int], stream: int = 0) -> None:
        seeds = [int(s) for s in seeds]
        if not seeds:
            raise ValueError("seeds must hold at least one seed")
        self.num_runs = len(seeds)
        self.seeds = tuple(seeds)
        self.stream = int(stream)
        self._run_streams = seeded_streams(seeds, self.stream)
        self._chunk = max(_MIN_CHUNK, min(_MAX_CHUNK, _BUFFER_DOUBLES // self.num_runs))
        self._fill = min(self._chunk, _FIRST_FILL)
        self._buffer = np.empty((self.num_runs, 0))
        self._cursor = 0

    def _take(self, count: int) -> np.ndarray:
        """Return the next ``count`` uniforms of every run as a (B, count) array."""
        cursor = self._cursor
        buffer = self._buffer
        available = buffer.shape[1] - cursor
        if count > available:
            # Once the fill reaches the chunk, the buffer keeps one width (leftover + fresh
            # draws), so it can be reused.
            size = max(min(self._fill, self._chunk), count) - available
            self._fill = min(self._chunk, _FILL_GROWTH * self._fill)
            # In place when no view is alive (fresh allocations cost page faults), else fresh.
            if buffer.shape[1] == available + size and sys.getrefcount(buffer) <= _UNSHARED:
                if available:
                    buffer[:, :available] = buffer[:, cursor:].copy()
                fresh = buffer
            else:
                fresh = np.empty((self.num_runs, available + size))
                fresh[:, :available] = buffer[:, cursor:]
            fill_rows(self._run_streams, fresh, available)
            self._buffer = fresh
            cursor = 0
        self._cursor = cursor + count
        return self._buffer[:, cursor : cursor + count]

    def random(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniforms on [0, 1) of shape ``(B, *shape)``."""
        shape = tuple(int(s) for s in shape)
        return self._take(math.prod(shape)).reshape((self.num_runs, *shape))

    def open_uniform(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniforms on the open interval (0, 1): safe for logarithms at both ends."""
        return samplers.open_interval(self.random(shape))

    def gumbel(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Standard Gumbel variates of shape ``(B, *shape)`` (:func:`samplers.gumbel`)."""
        return samplers.gumbel(self.random(shape))

    def exponential(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Standard exponential variates of shape ``(B, *shape)``."""
        return samplers.exponential(self.random(shape))

    def laplace(self, scale: float | np.ndarray, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Laplace(0, scale) variates (:func:`samplers.laplace`, one uniform each)."""
        return samplers.laplace(self.random(shape), scale)

    def normal(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Standard normal variates by Box-Muller: all first uniforms, then all second ones."""
        u1 = self.random(shape)
        return samplers.normal(u1, self.random(shape))

    def bernoulli(self, p: np.ndarray | float, shape: tuple[int, ...] = ()) -> np.ndarray:
        """0/1 float variates with success probability ``p`` (broadcast to ``(B, *shape)``)."""
        return (self.random(shape) < p).astype(np.float64)

    def integers(self, high: int | np.ndarray, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (``high`` may vary per run, broadcast)."""
        high_arr = np.asarray(high)
        draws = np.floor(self.random(shape) * high_arr).astype(np.int64)
        # Guards the measure-zero rounding case u * high == high.
        return np.minimum(draws, high_arr - 1)

    def categorical(self, probs: np.ndarray) -> np.ndarray:
        """One inverse-CDF draw per run from the rows of ``probs`` (B, K); (B,) int64."""
        probs = np.asarray(probs, dtype=np.float64)
        cdf = np.cumsum(probs, axis=-1)
        # probs.shape[0] is the run axis, which self.random adds itself.
        u = self.random(probs.shape[1:-1])[..., None] * cdf[..., -1:]
        idx = np.sum(cdf <= u, axis=-1)
        return np.minimum(idx, probs.shape[-1] - 1).astype(np.int64)


def seeded_generators(seeds: Sequence[int], *key: int) -> list[np.random.Generator]:
    """``Generator(PCG64(SeedSequence([s, *key])))`` for each seed, hashed for all seeds at once.

    Bit for bit numpy's own construction (tests/test_batch_rng.py checks seeds of one to three
    32-bit words against it): ``SeedSequence``'s entropy mixing and state generation run as
    uint32 array arithmetic over the seeds, grouped by word count, and each ``PCG64`` is seeded
    from its row through numpy's own seeding path: seeding one generator at a time was most of
    the construction of a learner with an audit's run count. Their ``bit_generator.seed_seq``
    is one placeholder shared by the batch (PCG64 reads its state once, when made): it cannot
    ``spawn`` (no caller spawns).
    """
    return _generators(_seed_words(seeds, key))


def seeded_streams(seeds: Sequence[int], *key: int) -> np.ndarray | list[np.random.Generator]:
    """The streams of :func:`seeded_generators`, as a (B, 4) array when the JIT is active.

    The array form (:mod:`dp_experts_env._pcg64`) gives each generator's doubles bit for bit,
    is built by one compiled loop and refilled by another; without the JIT, and for fewer than
    :data:`ARRAY_FROM_RUNS` runs (where a process need not import numba for them), the
    generators. :func:`fill_rows` refills either form.
    """
    words = _seed_words(seeds, key)
    if len(words) < ARRAY_FROM_RUNS or not jit_active():
        return _generators(words)
    from dp_experts_env import _pcg64

    return _pcg64.seed_states.compiled()(words)


def fill_rows(streams: np.ndarray | list[np.random.Generator], out: np.ndarray, start: int) -> None:
    """Fill ``out[b, start:]`` with stream b's next uniforms on [0, 1), for every row b.

    Args:
        streams: what :func:`seeded_streams` returned, or a slice of it (advanced in place).
        out: a C-contiguous (B, W) float64 array, one row per stream.
        start: the first column to fill, 0 <= start <= W.

    Raises:
        TypeError: ``out`` is not a float64 array, or ``start`` not an integer.
        ValueError: ``out`` is not C-contiguous and two-dimensional, its row count is not the
            streams', or ``start`` is outside [0, W].
    """
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        raise TypeError(f"out must be a float64 numpy array, got {getattr(out, 'dtype', out)!r}")
    if out.ndim != 2 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous 2-D array, got shape {out.shape}")
    if len(streams) != out.shape[0]:
        raise ValueError(f"out must have one row per stream ({len(streams)}), got {out.shape[0]}")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
        raise TypeError(f"start must be an integer, got {type(start).__name__}")
    if not 0 <= start <= out.shape[1]:
        raise ValueError(f"start must be in [0, {out.shape[1]}], got {start!r}")
    if isinstance(streams, np.ndarray):
        if streams.dtype != np.uint64 or streams.shape != (out.shape[0], 4):
            raise ValueError(f"streams must be a (B, 4) uint64 array, got {streams.shape}")
        if jit_active():
            from dp_experts_env import _pcg64

            _pcg64.fill.compiled()(streams, out, int(start))
            return
        # The array form met with the JIT off (switched off since, or unpickled where numba is
        # missing): the same draws from generators holding the states, written back after.
        generators = _generators_at(streams)
        fill_rows(generators, out, start)
        streams[:] = stream_states(generators)
        return
    rows = out if start == 0 else out[:, start:]  # whole rows when possible: no view per run
    for row, g in zip(rows, streams, strict=True):
        g.random(out=row)


def _generators_at(streams: np.ndarray) -> list[np.random.Generator]:
    """Generators in the states of a (B, 4) stream array (:func:`stream_states`'s layout)."""
    out = []
    for hi, lo, inc_hi, inc_lo in streams.tolist():
        bit_generator = np.random.PCG64()
        bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": (hi << 64) | lo, "inc": (inc_hi << 64) | inc_lo},
            "has_uint32": 0,
            "uinteger": 0,
        }
        out.append(np.random.Generator(bit_generator))
    return out


def stream_states(streams: np.ndarray | list[np.random.Generator]) -> np.ndarray:
    """(B, 4) uint64 PCG64 states (state high, low, increment high, low) of either form."""
    if isinstance(streams, np.ndarray):
        return streams.copy()
    out = np.empty((len(streams), 4), np.uint64)
    mask = (1 << 64) - 1
    for b, g in enumerate(streams):
        state, inc = (g.bit_generator.state["state"][k] for k in ("state", "inc"))
        out[b] = (state >> 64, state & mask, inc >> 64, inc & mask)
    return out


def _seed_words(seeds: Sequence[int], key: tuple[int, ...]) -> np.ndarray:
    """(B, 4) uint64 ``SeedSequence([s, *key]).generate_state(4, uint64)`` rows, input order."""
    tail = [w for part in key for w in _words(part)]
    groups = _word_groups(seeds)
    if groups is None:  # seeds of 2^64 and wider, or refused: one by one (their errors)
        rows: dict[int, list[int]] = {}
        for i, s in enumerate(seeds):
            rows.setdefault(len(_words(s)), []).append(i)
        groups = [
            (np.array(idx), np.array([_words(seeds[i]) for i in idx], np.uint32))
            for idx in rows.values()
        ]
    if len(groups) == 1:  # in input order
        return _pcg_states(_with_tail(groups[0][1], tail))
    out = np.empty((len(seeds), 4), np.uint64)
    for idx, words in groups:
        out[idx] = _pcg_states(_with_tail(words, tail))
    return out


def _with_tail(words: np.ndarray, tail: list[int]) -> np.ndarray:
    """(B, L + len(tail)) uint32 entropy: each row's seed words, then the key's."""
    entropy = np.empty((words.shape[0], words.shape[1] + len(tail)), np.uint32)
    entropy[:, : words.shape[1]] = words
    entropy[:, words.shape[1] :] = np.array(tail, np.uint32)
    return entropy


def _word_groups(seeds: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Seeds below 2^64 split into their 32-bit words as arrays, grouped by word count.

    Each group is (indices, (m, 1 or 2) uint32 words, least significant first), in input order
    within a group. None (the seeds go one by one through :func:`_words`) unless the seeds are
    all non-negative integers below 2^64: wider seeds, and the errors of negative and
    non-integer ones. An array of integer dtype holds exactly the seeds' values.
    """
    if isinstance(seeds, np.ndarray):
        if type(seeds) is not np.ndarray:  # a masked array or other subclass: one by one
            return None
    elif not all(type(s) in (int, bool) or isinstance(s, np.integer) for s in seeds):
        return None  # what _words refuses (np.bool_, 0-d arrays, floats) it refuses one by one
    try:
        arr = np.asarray(seeds)
    except (OverflowError, TypeError, ValueError):
        return None
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        return None
    if arr.dtype.kind == "i" and arr.min() < 0:
        return None
    u = arr.astype(np.uint64)
    low = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (u >> np.uint64(32)).astype(np.uint32)
    wide = high != 0
    if not wide.any():
        return [(np.arange(arr.size), low[:, None])]
    if wide.all():
        return [(np.arange(arr.size), np.stack([low, high], axis=1))]
    one, two = np.flatnonzero(~wide), np.flatnonzero(wide)
    return [(one, low[one, None]), (two, np.stack([low[two], high[two]], axis=1))]


def _generators(states: np.ndarray) -> list[np.random.Generator]:
    """One ``Generator(PCG64)`` per row of (B, 4) uint64 states (constructors bound once).

    The cyclic garbage collector is paused meanwhile: the objects made form no cycles, and the
    collections their allocations would trigger traverse the whole heap again and again (in a
    process holding a million objects, most of the construction time).
    """
    generator, pcg64 = np.random.Generator, np.random.PCG64
    # One seed object for the batch, its state set before each PCG64 reads it (once, when made):
    # one garbage-collected object per run fewer for the collections to traverse.
    if len(states) == 0:
        return []
    seeded = _Precomputed(states[0])
    was_enabled = gc.isenabled()
    try:
        gc.disable()
        out = []
        for row in states:
            seeded._state = row
            out.append(generator(pcg64(seeded)))
        return out
    finally:
        if was_enabled:
            gc.enable()


def _words(n: int) -> list[int]:
    """A non-negative integer's 32-bit words, least significant first (``SeedSequence``'s)."""
    if not isinstance(n, (int, np.integer)):  # as SeedSequence: int() would truncate 2.5
        raise TypeError(f"seeds and key must be integers, got {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise ValueError(f"seeds must be non-negative, got {n}")
    out = [n & 0xFFFFFFFF]
    while n := n >> 32:
        out.append(n & 0xFFFFFFFF)
    return out


def _pcg_states(entropy: np.ndarray) -> np.ndarray:
    """``SeedSequence(row).generate_state(4, uint64)`` for each row of a (B, L) uint32 array."""
    u32 = np.uint32
    hash_a = [u32(0x43B0D7E5)]

    def hashmix(v: np.ndarray) -> np.ndarray:
        v = v ^ hash_a[0]
        hash_a[0] = hash_a[0] * u32(0x931E8875)
        v = v * hash_a[0]
        return v ^ (v >> u32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = u32(0xCA01F9DD) * x - u32(0x4973F715) * y
        return r ^ (r >> u32(16))

    n, width = entropy.shape
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as the C code's
        pool = [hashmix(entropy[:, i] if i < width else np.zeros(n, u32)) for i in range(4)]
        for src in range(4):
            for dst in range(4):
                if src != dst:
                    pool[dst] = mix(pool[dst], hashmix(pool[src]))
        for src in range(4, width):
            for dst in range(4):
                pool[dst] = mix(pool[dst], hashmix(entropy[:, src]))
        hash_b = u32(0x8B51F9DD)
        state = np.empty((n, 8), "<u4")
        for i in range(8):
            v = pool[i % 4] ^ hash_b
            hash_b = hash_b * u32(0x58F38DED)
            v = v * hash_b
            state[:, i] = v ^ (v >> u32(16))
    return state.view("<u8").astype(np.uint64)


class _Precomputed(np.random.bit_generator.ISeedSequence):
    """A seed sequence whose state is already computed (what ``PCG64`` asks it for)."""

    __slots__ = ("_state",)

    def __init__(self, state: np.ndarray) -> None:
        self._state = state

    def generate_state(self, n_words: int, dtype: type = np.uint32) -> np.ndarray:  # noqa: D102
        # PCG64's request, the only one made (``dtype is np.uint64`` spares building a dtype).
        if n_words != 4 or (dtype is not np.uint64 and np.dtype(dtype) != np.uint64):
            raise ValueError("a precomputed PCG64 seed holds 4 uint64 words only")
        return self._state
