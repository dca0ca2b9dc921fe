"""Per-run uniform streams read only by the runs that draw (svt-restart's selections)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.base import AGENT_STREAM
from dp_experts_env.batch_rng import BatchRNG, fill_rows, seeded_streams

__all__ = ["RunsView", "SelectionStreams"]

#: uniforms buffered per run by the selection streams (refilled per run when used up)
_SELECTION_CHUNK = 256


class SelectionStreams:
    """One uniform stream per run, read only by the runs that select this round.

    Selections happen at run-dependent rounds; each run owns a stream (seeded from its agent seed,
    apart from the main stream) with its own cursor, so run b of a batch matches a single run seeded
    ``seeds[b]`` without drawing on the rounds nobody selects.
    """

    def __init__(self, seeds: Sequence[int]) -> None:
        self._run_streams = seeded_streams(seeds, AGENT_STREAM, 1)
        self._buffer = np.empty((len(seeds), _SELECTION_CHUNK))
        fill_rows(self._run_streams, self._buffer, 0)
        self._cursor = np.zeros(len(seeds), dtype=np.int64)

    def take(self, runs: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` uniforms of each run in ``runs`` (distinct indices): (len, count)."""
        width = self._buffer.shape[1]
        short = runs[self._cursor[runs] + count > width]
        if len(short):
            if count > width:  # a larger draw than the buffer: widen it (every row keeps place)
                wider = np.empty((self._buffer.shape[0], count + _SELECTION_CHUNK))
                wider[:, :width] = self._buffer
                fill_rows(self._run_streams, wider, width)
                self._buffer, width = wider, wider.shape[1]
                short = runs[self._cursor[runs] + count > width]
            for r in short:  # runs that used up their buffer: keep the rest, refill behind it
                cur = self._cursor[r]
                row = self._buffer[r : r + 1]
                left = width - cur
                row[0, :left] = row[0, cur:].copy()
                # A slice of either stream form advances run r's own stream in place.
                fill_rows(self._run_streams[r : r + 1], row, left)
                self._cursor[r] = 0
        cols = self._cursor[runs][:, None] + np.arange(count)
        self._cursor[runs] += count
        return self._buffer[runs[:, None], cols]

    def view(self, runs: np.ndarray) -> BatchRNG:
        """A :class:`BatchRNG` of ``len(runs)`` runs reading these runs' streams."""
        return RunsView(self, runs)


class RunsView(BatchRNG):
    """The runs ``runs`` of a :class:`SelectionStreams` as a BatchRNG drawing from their streams."""

    def __init__(self, streams: SelectionStreams, runs: np.ndarray) -> None:  # noqa: D107
        # No BatchRNG.__init__: the uniforms come from ``streams``, not from own generators.
        self.num_runs = len(runs)
        self._streams = streams
        self._runs = runs

    def _take(self, count: int) -> np.ndarray:
        return self._streams.take(self._runs, count)
