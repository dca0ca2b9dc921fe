"""FTPL-GR's geometric resampling from per-run pages, and its K rounds in one compiled call.

Each run reads its redraws from its own stream, in pages of standard Laplace variates, up to
the first hit (docs/algorithms.md, "Random streams and batching"); a redraw at scale s is
``s * z``, the same doubles as ``samplers.laplace(u, s)``. ``act`` (:func:`resample_counts`) and
the kernel (:func:`ftpl_rounds`, ``ftpl-gr`` over the arms at a fixed rate) read the same
variates.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled, kernel
from dp_experts_env.batch_rng import BatchRNG, fill_rows, seeded_streams

__all__ = [
    "PAGE_REDRAWS",
    "RESAMPLE_KEY",
    "ResamplePages",
    "ftpl_ready",
    "ftpl_rounds",
    "pages_for",
    "resample_counts",
    "run_ftpl_block",
]

#: The third word of a run's resampling seed, ``SeedSequence([seed, stream, RESAMPLE_KEY])``
#: (svt-restart's selection streams use 1).
RESAMPLE_KEY = 2
#: Redraws per page (memory: ``PAGE_REDRAWS * m`` doubles per run).
PAGE_REDRAWS = 256
# act's redraws per run and step of its loop: a few first (most rounds hit early), then more.
_FIRST_CHUNK, _MAX_CHUNK = 4, 64


def ftpl_ready() -> bool:
    """True when the compiled block kernel runs (the JIT is on)."""
    return jit_enabled()


class ResamplePages:
    """Each run's resampling stream: a page of standard Laplace redraws and a cursor.

    Args:
        rng: the core's BatchRNG (its ``seeds`` and ``stream`` seed the pages' generators).
        width: m, the variates of one redraw.

    Attributes:
        page: (B, PAGE_REDRAWS * m) each run's current page (zeros before its first turn).
        cursor: (B,) int64 the next unread variate of each run's page (the page's width when
            used up: the next redraw turns it).
    """

    def __init__(self, rng: BatchRNG, width: int) -> None:
        self._streams = seeded_streams(rng.seeds, rng.stream, RESAMPLE_KEY)
        self.width = int(width)
        size = PAGE_REDRAWS * self.width
        self.page = np.zeros((rng.num_runs, size))
        self.cursor = np.full(rng.num_runs, size, dtype=np.int64)

    def turn(self, runs: Iterable[int]) -> None:
        """Give each run in ``runs`` its next page (its next uniforms, as standard Laplace)."""
        uniforms = np.empty((1, self.page.shape[1]))
        for r in runs:
            fill_rows(self._streams[r : r + 1], uniforms, 0)  # run r's stream, in place
            self.page[r] = samplers.laplace(uniforms[0], 1.0)
            self.cursor[r] = 0


# The BatchRNG attribute holding its resampling streams by width: on the rng, so deepcopy and
# pickle copy them with the main stream (and a seeded reset's new rng starts new ones).
_PAGES_ATTR = "resample_pages"


def pages_for(rng: BatchRNG, width: int) -> ResamplePages:
    """The resampling streams that go with ``rng`` (m = ``width`` variates per redraw).

    They go on as ``rng`` does (an unseeded reset's fresh core continues them).
    """
    by_width = vars(rng).setdefault(_PAGES_ATTR, {})
    if width not in by_width:
        by_width[width] = ResamplePages(rng, width)
    return by_width[width]


def resample_counts(
    pages: ResamplePages, cum: np.ndarray, arms: np.ndarray, scale: Any, cap: int
) -> np.ndarray:
    """(B,) ``M_n``: the first redraw whose argmin is ``arms``, or ``cap`` (numpy, all runs).

    Args:
        pages: the runs' resampling streams (advanced by the redraws made).
        cum: (B, m) the pre-update cumulative estimates.
        arms: (B,) the played arms.
        scale: the Laplace scale, a float or (B,) per run.
        cap: M.
    """
    runs, m = cum.shape
    size = pages.page.shape[1]
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64).reshape(-1), (runs,))
    tries = np.zeros(runs, dtype=np.int64)
    first = np.full(runs, cap, dtype=np.int64)
    active = np.arange(runs)
    chunk = _FIRST_CHUNK
    while active.size:
        pages.turn(active[pages.cursor[active] == size].tolist())
        cur = pages.cursor[active]
        n = np.minimum(np.minimum((size - cur) // m, cap - tries[active]), chunk)
        cols = np.minimum(cur[:, None] + np.arange(chunk * m), size - 1)
        z = pages.page[active[:, None], cols].reshape(active.size, chunk, m)
        values = cum[active][:, None, :] + scales[active][:, None, None] * z
        hits = np.argmin(values, axis=2) == arms[active][:, None]
        hits &= np.arange(chunk) < n[:, None]
        found = hits.any(axis=1)
        used = np.where(found, np.argmax(hits, axis=1) + 1, n)
        pages.cursor[active] += used * m
        tries[active] += used
        first[active[found]] = tries[active[found]]
        active = active[~found & (tries[active] < cap)]
        chunk = min(2 * chunk, _MAX_CHUNK)
    return first


@kernel
def ftpl_rounds(  # noqa: ANN201, PLR0913
    cum, n_updates, last_resamples, page, cursor, play_noise, losses, rows, loss0, learn_first,
    scale, cap, choice, actions, next_round, tries_done,
):  # noqa: ANN001
    """FTPL-GR's K rounds (``act``'s update, then its play), run by run, resumable.

    Returns -1 when every run played its K rounds, else the first run whose page is used up
    (its place saved in ``next_round``, ``tries_done``): the caller turns the page, calls again.

    Args:
        cum: (B, m) cumulative estimates (updated in place).
        n_updates: (B,) int64 the core's clock (updated in place).
        last_resamples: (B,) int64 the last ``M_n`` (updated in place).
        page: (B, P) the runs' pages of standard Laplace redraws.
        cursor: (B,) int64 the pages' cursors (advanced in place).
        play_noise: (K, B, m) the rounds' play perturbations (at scale).
        losses: (K, S, m) the block's losses (read at the played arms only).
        rows: (B,) int64 the loss stream of each run.
        loss0: (B,) the loss observed before the block.
        learn_first: round 0 learns (the agent played before the block).
        scale: the Laplace scale ``1 / eta``.
        cap: M.
        choice: (B,) int64 the current choice (updated in place).
        actions: (K, B) int64 the actions (written).
        next_round: (B,) int64 the first round each run still has to play.
        tries_done: (B,) int64 redraws made before a page turn cut a resampling short.
    """
    rounds, runs, m = play_noise.shape
    size = page.shape[1]
    for b in range(runs):
        for i in range(next_round[b], rounds):
            if i > 0 or learn_first:
                arm = choice[b]
                tries = tries_done[b]
                while tries < cap:
                    c = cursor[b]
                    if c == size:
                        next_round[b] = i
                        tries_done[b] = tries
                        return b
                    best = 0
                    top = cum[b, 0] + scale * page[b, c]
                    for j in range(1, m):
                        value = cum[b, j] + scale * page[b, c + j]
                        if value < top:
                            top = value
                            best = j
                    cursor[b] = c + m
                    tries += 1
                    if best == arm:
                        break
                y = loss0[b] if i == 0 else losses[i - 1, rows[b], actions[i - 1, b]]
                cum[b, arm] = cum[b, arm] + y * tries
                n_updates[b] += 1
                last_resamples[b] = tries
                tries_done[b] = 0
            best = 0
            top = cum[b, 0] + play_noise[i, b, 0]
            for j in range(1, m):
                value = cum[b, j] + play_noise[i, b, j]
                if value < top:
                    top = value
                    best = j
            choice[b] = best
            actions[i, b] = best
        next_round[b] = rounds
    return -1


def run_ftpl_block(
    core: Any,
    *,
    choice: np.ndarray,
    losses: np.ndarray,
    rows: np.ndarray,
    loss0: np.ndarray,
    learn_first: bool,
    compiled: bool = True,
) -> np.ndarray:
    """Draw the block's play noise, run :func:`ftpl_rounds` to the end turning pages as asked.

    Arguments as :func:`ftpl_rounds`, with ``core`` the fixed-rate
    :class:`~agents.bandit_core.FtplGRCore` (updated in place) and ``compiled`` False for the
    kernel's Python form. Returns the (K, B) int64 actions.
    """
    if core.adaptive is not None:
        raise ValueError("the FTPL-GR block kernel plays a fixed rate only (adaptive: use act)")
    k = len(losses)
    runs, m = core.cum_estimate.shape
    scale = 1.0 / core.eta
    # act draws each round's m play perturbations from the main stream: K rounds in one read.
    noise = np.ascontiguousarray(core.rng.laplace(scale, (k, m)).transpose(1, 0, 2))
    actions = np.empty((k, runs), dtype=np.int64)
    next_round = np.zeros(runs, dtype=np.int64)
    tries = np.zeros(runs, dtype=np.int64)
    run = ftpl_rounds.resolve() if compiled else ftpl_rounds.py_func
    pages = core.pages
    last = np.array(core.last_resamples, dtype=np.int64)
    args = (
        np.asarray(losses, dtype=np.float64), np.asarray(rows, dtype=np.int64),
        np.ascontiguousarray(loss0, dtype=np.float64), bool(learn_first), scale,
        int(core.max_resamples), choice, actions, next_round, tries,
    )
    while True:
        b = run(core.cum_estimate, core.n_updates, last, pages.page, pages.cursor, noise, *args)
        if b < 0:
            break
        pages.turn([b])
    core.last_resamples = last
    return actions
