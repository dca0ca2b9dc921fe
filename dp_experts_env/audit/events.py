"""Event families of an audit: which sets of outputs the selection tries.

docs/privacy.md, "Views and events", lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["EventFamily", "families_for", "release_families", "sequence_families"]

_N_CUTS = 120  # threshold events tried for real outputs
_MAX_GRID = 17  # time points delimiting blocks of rounds in agent audits
_CHUNK = 1 << 22  # elements per temporary when counting per-round events
_MAX_CODES = 4096  # largest alphabet of a window of joint actions (k ** length)
_RUNS_PER_CODE = 16  # selection runs per side per joint-window value (fewer: the order is noise)


class EventFamily:
    """Candidate events over samples of shape (n, ...): counted in bulk, evaluated one by one."""

    size: int

    def counts(self, samples: np.ndarray) -> np.ndarray:
        """(size,) how many runs of ``samples`` each event holds."""
        raise NotImplementedError

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        """(n,) bool: whether each run's output is in event ``i``."""
        raise NotImplementedError

    def describe(self, i: int) -> str:
        """Event ``i`` in words."""
        raise NotImplementedError


class _Values(EventFamily):
    """{out = v} for each value v seen in the selection runs (1-D discrete outputs)."""

    def __init__(self, values: np.ndarray, label: str = "output") -> None:
        self.values = np.unique(values)
        self.size = len(self.values)
        self.label = label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        pos = np.clip(np.searchsorted(self.values, samples), 0, self.size - 1)
        hit = self.values[pos] == samples
        return np.bincount(pos[hit], minlength=self.size)

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples == self.values[i]

    def describe(self, i: int) -> str:
        return f"{self.label} == {self.values[i]:g}"


class _RatioSets(EventFamily):
    """{out in S_k}: the k values most favoured by one side in the selection runs."""

    def __init__(self, values: _Values, sel_a: np.ndarray, sel_b: np.ndarray) -> None:
        ca, cb = values.counts(sel_a), values.counts(sel_b)
        order = np.argsort(-np.log((ca + 1.0) / (cb + 1.0)), kind="stable")
        self.ordered = values.values[order]
        self.size = max(len(self.ordered) - 1, 0)
        self._values = values
        self._order = order

    def counts(self, samples: np.ndarray) -> np.ndarray:
        per_value = self._values.counts(samples)[self._order]
        return np.cumsum(per_value)[: self.size]

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return np.isin(samples, self.ordered[: i + 1])

    def describe(self, i: int) -> str:
        shown = ", ".join(f"{v:g}" for v in self.ordered[: min(i + 1, 8)])
        more = ", ..." if i + 1 > 8 else ""
        return f"{self._values.label} in {{{shown}{more}}} ({i + 1} values)"


class _Thresholds(EventFamily):
    """{out[:, col] > c} for cut points at quantiles of the pooled selection runs."""

    def __init__(self, pooled: np.ndarray, columns: int, label: str = "output") -> None:
        tail = np.logspace(-3.5, math.log10(0.5), _N_CUTS // 2)
        levels = np.unique(np.concatenate([tail, 1.0 - tail]))
        cuts = [np.unique(np.quantile(pooled[:, c], levels)) for c in range(columns)]
        self.col = np.concatenate([np.full(len(k), c) for c, k in enumerate(cuts)])
        self.cut = np.concatenate(cuts)
        self.columns = columns
        self.size = len(self.cut)
        self.label = label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.empty(self.size, dtype=np.int64)
        for c in range(self.columns):
            sel = self.col == c
            srt = np.sort(samples[:, c])
            out[sel] = len(srt) - np.searchsorted(srt, self.cut[sel], side="right")
        return out

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples[:, self.col[i]] > self.cut[i]

    def describe(self, i: int) -> str:
        where = f"{self.label}[{self.col[i]}]" if self.columns > 1 else self.label
        return f"{where} > {self.cut[i]:.6g}"


class _Mapped(EventFamily):
    """A family over a per-run statistic ``fn(samples)`` (post-processing of the output)."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], inner: EventFamily) -> None:
        self.fn, self.inner, self.size = fn, inner, inner.size

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return self.inner.counts(self.fn(samples))

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self.inner.indicator(self.fn(samples), i)

    def describe(self, i: int) -> str:
        return self.inner.describe(i)


def _discrete(
    fn: Callable[[np.ndarray], np.ndarray], sel_a: np.ndarray, sel_b: np.ndarray, label: str
) -> list[EventFamily]:
    """{stat = v} and likelihood-ordered unions of values, for a discrete per-run statistic."""
    fa, fb = fn(sel_a), fn(sel_b)
    values = _Values(np.concatenate([fa, fb]), label)
    return [_Mapped(fn, values), _Mapped(fn, _RatioSets(values, fa, fb))]


class _RoundValue(EventFamily):
    """{J_t = j} for each round t >= first and value j (sequence outputs, values in [0, k))."""

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        self.rounds, self.k, self.first, self.offset = rounds - first, k, first, offset
        self.size = self.rounds * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        step = max(1, _CHUNK // max(samples.shape[0], 1))  # bounded temporaries for long games
        for start in range(0, self.rounds, step):
            block = samples[:, self.first + start : self.first + start + step].astype(np.int64)
            flat = (np.arange(start, start + block.shape[1]) * self.k)[None, :] + block
            out += np.bincount(flat.ravel(), minlength=self.size)
        return out

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        t, j = divmod(i, self.k)
        return samples[:, self.first + t] == j

    def describe(self, i: int) -> str:
        t, j = divmod(i, self.k)
        return f"J_{t + self.first + self.offset} == {j}"


class _Moves(_RoundValue):
    """{J_t = j and J_t != J_{t-1}} (a switch into j at round t) and {J_t == J_{t-1}} (a stay)."""

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        super().__init__(rounds, k + 1, max(first, 1), offset)
        self.symbols = k

    @staticmethod
    def moves(samples: np.ndarray, k: int) -> np.ndarray:
        out = samples.astype(np.int64)
        out[:, 1:] = np.where(samples[:, 1:] != samples[:, :-1], out[:, 1:], k)
        return out

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return super().counts(self.moves(samples, self.symbols))

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return super().indicator(self.moves(samples, self.symbols), i)

    def describe(self, i: int) -> str:
        t, j = divmod(i, self.k)
        t += self.first + self.offset
        if j == self.symbols:
            return f"J_{t} == J_{t - 1} (a stay)"
        return f"a switch into {j} at J_{t}"


class _Blocks(EventFamily):
    """{J_t = j for every t in [a, b)} for blocks between grid points of the rounds >= first."""

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        n = rounds - first
        grid = np.unique(np.linspace(0, n, min(n + 1, _MAX_GRID)).round().astype(int))
        pairs = [(a, b) for i, a in enumerate(grid) for b in grid[i + 1 :] if b - a >= 2]
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.k, self.first, self.offset = k, first, offset
        self.size = len(self.pairs) * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros((self.k, len(self.pairs)), dtype=np.int64)
        if not len(self.pairs):
            return out.ravel()
        seq = samples[:, self.first :]
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        for j in range(self.k):
            c = np.zeros((seq.shape[0], seq.shape[1] + 1), dtype=np.int32)
            np.cumsum(seq == j, axis=1, out=c[:, 1:])
            out[j] = ((c[:, b] - c[:, a]) == (b - a)[None, :]).sum(axis=0)
        return out.ravel()

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p] + self.first
        return np.all(samples[:, a:b] == j, axis=1)

    def describe(self, i: int) -> str:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p] + self.first + self.offset
        return f"J_t == {j} for all rounds t in [{a}, {b})"


class _AtLeast(EventFamily):
    """{stat >= c} for c = 1 .. top, for an integer per-run statistic."""

    def __init__(self, top: int, label: str) -> None:
        self.size, self.label = max(top, 0), label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        hist = np.bincount(np.clip(samples, 0, self.size), minlength=self.size + 1)
        return np.cumsum(hist[::-1])[::-1][1 : self.size + 1]

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples >= i + 1

    def describe(self, i: int) -> str:
        return f"{self.label} >= {i + 1}"


def _switch_count(first: int) -> Callable[[np.ndarray], np.ndarray]:
    lo = max(first - 1, 0)
    return lambda s: np.count_nonzero(s[:, lo + 1 :] != s[:, lo:-1], axis=1)


def _play_count(first: int, j: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda s: np.count_nonzero(s[:, first:] == j, axis=1)


def _first_switch(first: int) -> Callable[[np.ndarray], np.ndarray]:
    """Index of the first round t >= first with J_t != J_{t-1} (T if none)."""

    def fn(s: np.ndarray) -> np.ndarray:
        lo = max(first, 1)
        moved = s[:, lo:] != s[:, lo - 1 : -1]
        any_move = moved.any(axis=1)
        return np.where(any_move, lo + np.argmax(moved, axis=1), s.shape[1])

    return fn


def _window_code(start: int, length: int, k: int) -> Callable[[np.ndarray], np.ndarray]:
    weights = k ** np.arange(length, dtype=np.int64)
    return lambda s: s[:, start : start + length].astype(np.int64) @ weights


def sequence_families(
    sel_a: np.ndarray, sel_b: np.ndarray, *, k: int, first: int, offset: int = 0
) -> list[EventFamily]:
    """Candidate events over action sequences ``(n, T)`` with values in ``[0, k)``.

    Per-round values, switches and stays from round ``first``; constant blocks; joint windows
    starting at ``first - 2 .. first`` (``k^L <= min(4096, n / 16)``); switch and play counts and
    the first switch. Rounds before ``first`` enter joint events only. ``offset`` is added to round
    indices in the descriptions.
    """
    rounds = sel_a.shape[1]
    fams: list[EventFamily] = []
    if rounds - first <= 0:
        return fams
    fams += [_RoundValue(rounds, k, first, offset), _Blocks(rounds, k, first, offset)]
    if rounds > max(first, 1):
        fams.append(_Moves(rounds, k, first, offset))
    codes = min(_MAX_CODES, sel_a.shape[0] // _RUNS_PER_CODE)
    length = int(math.floor(math.log(max(codes, 1)) / math.log(max(k, 2)) + 1e-9))
    for start in sorted({max(first - 2, 0), max(first - 1, 0), first}):
        span = min(length, rounds - start)
        if span < 2 or start + span <= first:
            continue
        label = f"(J_{start + offset}..J_{start + span - 1 + offset}) as base-{k} digits"
        fams += _discrete(_window_code(start, span, k), sel_a, sel_b, label)
    span = rounds - max(first - 1, 0) - 1
    fams.append(_Mapped(_switch_count(first), _AtLeast(span, "number of switches")))
    for j in range(k):
        fams.append(
            _Mapped(
                _play_count(first, j),
                _AtLeast(rounds - first, f"plays of {j} from round {first + offset}"),
            )
        )
    fams += _discrete(
        _first_switch(first), sel_a, sel_b, f"first switch at or after round {first + offset}"
    )
    return fams


class _LaplaceContrast(EventFamily):
    """Thresholds on the Laplace likelihood-ratio statistic of recorded releases.

    Samples ``(n, 2, 1 + D)``: column 0 a discrete key (the changed round's action), columns 1..
    each coordinate's exact input (channel 0) and noisy output (channel 1). Centres and scales are
    fitted on the selection runs; the statistic
    ``sum_i sign(c_a - c_b) clip(y_i - (c_a + c_b)/2, +-|c_a - c_b|/2) / b_i`` is the most powerful
    for Laplace noise and a valid event for any. With ``grouped``, centres are fitted per key
    (keys seen fewer than 20 times on a side add nothing).
    """

    def __init__(self, sel_a: np.ndarray, sel_b: np.ndarray, *, grouped: bool = False) -> None:
        keys = np.concatenate([sel_a[:, 0, 0], sel_b[:, 0, 0]])
        self.groups = np.unique(keys) if grouped else np.zeros(1)
        if len(self.groups) > 64:  # too many keys to fit centres per key
            self.groups = np.zeros(1)
        self.grouped = len(self.groups) > 1 or grouped
        g_a, g_b = self._group(sel_a), self._group(sel_b)
        xa, xb = sel_a[:, :, 1:], sel_b[:, :, 1:]
        dim, n_g = xa.shape[-1], len(self.groups) + 1  # the last group: unseen keys
        ca, cb = np.zeros((n_g, dim)), np.zeros((n_g, dim))
        for g in range(n_g - 1):
            in_a, in_b = g_a == g, g_b == g
            if in_a.sum() >= 20 and in_b.sum() >= 20:
                ca[g], cb[g] = xa[in_a, 0].mean(axis=0), xb[in_b, 0].mean(axis=0)
        diff = ca - cb
        self.keep = np.flatnonzero(np.any(diff != 0, axis=0))
        self.mid = 0.5 * (ca + cb)[:, self.keep]
        self.half = 0.5 * np.abs(diff[:, self.keep])
        self.sign = np.sign(diff[:, self.keep])
        noise = np.concatenate([xa[:, 1] - xa[:, 0], xb[:, 1] - xb[:, 0]])[:, self.keep]
        scale = np.mean(np.abs(noise), axis=0) if len(self.keep) else np.ones(0)
        self.scale = np.maximum(scale, 1e-12 * np.maximum(self.half.max(axis=0), 1e-300))
        pooled = np.concatenate([self.statistic(sel_a), self.statistic(sel_b)])[:, None]
        label = "Laplace likelihood-ratio statistic of the releases"
        if grouped:
            label += " (centres fitted per action of the changed round)"
        self._cuts = _Thresholds(pooled, 1, label)
        self.size = self._cuts.size if len(self.keep) else 0

    def _group(self, samples: np.ndarray) -> np.ndarray:
        keys = samples[:, 0, 0]
        pos = np.clip(np.searchsorted(self.groups, keys), 0, len(self.groups) - 1)
        return np.where(self.groups[pos] == keys, pos, len(self.groups))

    def statistic(self, samples: np.ndarray) -> np.ndarray:
        g = self._group(samples)
        y = samples[:, 1, 1:][:, self.keep]
        z = np.clip(y - self.mid[g], -self.half[g], self.half[g]) * self.sign[g] / self.scale
        return z.sum(axis=1)

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return self._cuts.counts(self.statistic(samples)[:, None])

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self._cuts.indicator(self.statistic(samples)[:, None], i)

    def describe(self, i: int) -> str:
        return f"{self._cuts.describe(i)} ({len(self.keep)} released coordinates)"


class _ExactDifferences(EventFamily):
    """Joint release events: ``{y_i - y_j = d}`` for two released coordinates i, j.

    Fresh noise makes such an event probability 0; noise reused across calls makes it
    ``x_i - x_j``, which differs between the sides. Pairs and ``d`` are fitted on the selection
    runs (first :data:`_MAX_DIFF_COLUMNS` coordinates).
    """

    def __init__(self, sel_a: np.ndarray, sel_b: np.ndarray) -> None:
        cols = slice(1, 1 + _MAX_DIFF_COLUMNS)
        xa, xb = sel_a[:, :, cols], sel_b[:, :, cols]
        noise = np.concatenate([xa[:, 1] - xa[:, 0], xb[:, 1] - xb[:, 0]])
        self.events: list[tuple[int, int, float, str]] = []
        for i in range(noise.shape[1] - 1):
            same = (noise[:, i + 1 :] == noise[:, i : i + 1]).mean(axis=0)
            for j in i + 1 + np.flatnonzero(same > 0.5):
                for side, x in (("input", xa), ("neighbour", xb)):
                    vals, counts = np.unique(x[:, 0, i] - x[:, 0, j], return_counts=True)
                    self.events.append((i, int(j), float(vals[np.argmax(counts)]), side))
                if len(self.events) >= 2 * _MAX_DIFF_PAIRS:
                    break
        self.size = len(self.events)

    def _hit(self, samples: np.ndarray, e: tuple[int, int, float, str]) -> np.ndarray:
        i, j, d, _ = e
        y = samples[:, 1, 1 : 1 + _MAX_DIFF_COLUMNS]
        return np.abs(y[:, i] - y[:, j] - d) <= 1e-9 * (1.0 + abs(d))

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return np.array([self._hit(samples, e).sum() for e in self.events], dtype=np.int64)

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self._hit(samples, self.events[i])

    def describe(self, i: int) -> str:
        a, b, d, side = self.events[i]
        return (
            f"released coordinates {a} and {b} differ by exactly {d:g} (the {side}'s exact "
            "difference: noise reused)"
        )


#: released coordinates examined for exact differences, and pairs kept
_MAX_DIFF_COLUMNS = 64
_MAX_DIFF_PAIRS = 32


def release_families(sel_a: np.ndarray, sel_b: np.ndarray) -> list[EventFamily]:
    """Candidate events over recorded releases ``(n, 2, 1 + D)`` (contrasts, exact differences)."""
    if sel_a.shape[-1] <= 1:
        return []
    fams = [
        _LaplaceContrast(sel_a, sel_b),
        _LaplaceContrast(sel_a, sel_b, grouped=True),
        _ExactDifferences(sel_a, sel_b),
    ]
    return [f for f in fams if f.size]


def families_for(
    kind: str, sel_a: np.ndarray, sel_b: np.ndarray, **info: Any
) -> list[EventFamily]:
    """The families of an output kind (``discrete``, ``real``, ``sequence``) on selection runs."""
    if kind == "real":
        pooled = np.concatenate([sel_a, sel_b]).reshape(len(sel_a) + len(sel_b), -1)
        return [_Thresholds(pooled, pooled.shape[1])]
    if kind == "discrete":
        values = _Values(np.concatenate([sel_a, sel_b]))
        return [values, _RatioSets(values, sel_a, sel_b)]
    return sequence_families(
        sel_a, sel_b, k=info["k"], first=info.get("first", 0), offset=info.get("offset", 0)
    )
