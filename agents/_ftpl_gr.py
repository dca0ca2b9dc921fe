"""FTPL-GR's geometric resampling from per-run pages, and its K rounds in one compiled call.

Geometric resampling (:class:`agents.bandit_core.FtplGRCore`) redraws the perturbations until
the argmin hits the played arm, at most M times. Each run reads its redraws from its own
stream, one redraw (m Laplace variates) at a time, and stops at the first hit: a round costs
``min(G, M)`` redraws per run (``G`` geometric with the played arm's probability p), at most m
per round in expectation (``sum_i (1 - (1 - p_i)^M) <= m``) instead of all M. The law of
``M_n`` is the paper's (capped at M); only the realisation moved off the agent's main stream,
which keeps its fixed m draws per round (the play's perturbations). A batch still equals its
single runs bit for bit: a run's reads depend on its own data only.

:class:`ResamplePages` holds each run's stream as a page of ``PAGE_REDRAWS`` redraws of
standard Laplace variates (:func:`dp_experts_env.samplers.laplace` of the run's uniforms, drawn
when a run needs a redraw and its page is used up) and a cursor; a redraw at scale s is
``s * z`` (the same doubles as ``samplers.laplace(u, s)``: the sign and the scale multiply
exactly). The state after a round (page, cursor) is a function of the redraws made so far, so
``act`` (:func:`resample_counts`, numpy, in chunks of redraws per run) and the block kernel
(:func:`ftpl_rounds`, one redraw at a time, returning to Python to turn a page) hold the same
arrays and draw the same Laplace variates.

The kernel plays ``ftpl-gr`` over the arms (a fixed rate); the adaptive rate of the batched
conversions and ``over="experts"`` play through ``act``, as does ``DP_EXPERTS_NO_JIT``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled, kernel
from dp_experts_env.batch_rng import BatchRNG, seeded_generators

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
        self._generators = seeded_generators(rng.seeds, rng.stream, RESAMPLE_KEY)
        self.width = int(width)
        size = PAGE_REDRAWS * self.width
        self.page = np.zeros((rng.num_runs, size))
        self.cursor = np.full(rng.num_runs, size, dtype=np.int64)

    def turn(self, runs: Iterable[int]) -> None:
        """Give each run in ``runs`` its next page (its next uniforms, as standard Laplace)."""
        size = self.page.shape[1]
        for r in runs:
            self.page[r] = samplers.laplace(self._generators[r].random(size), 1.0)
            self.cursor[r] = 0


# The attribute of a BatchRNG holding its resampling streams, by width. They live on the rng
# object, not in a registry: copy.deepcopy and pickle copy them with the main stream (their memo
# keeps a core's ``pages`` the very object its copied rng holds), so a copy goes on as the
# original would; a new rng (a seeded reset) starts new ones.
_PAGES_ATTR = "resample_pages"


def pages_for(rng: BatchRNG, width: int) -> ResamplePages:
    """The resampling streams that go with ``rng`` (m = ``width`` variates per redraw).

    An owner's ``reset()`` without a seed keeps its ``rng`` and builds a fresh core: the core's
    resampling streams go on from where they were, as ``rng`` does (a new episode sees fresh
    redraws), in a deep copy or an unpickled owner too; a new ``rng`` (a seeded reset, a new
    learner) starts new ones from its seeds.
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

    Round i of run b: when it learns (``i > 0`` or ``learn_first``), redraw from the run's page
    until the argmin of ``cum + scale * z`` is the previous choice (at most ``cap`` redraws;
    ``M_n`` the count), then ``cum[choice] += y * M_n`` with y the previous round's loss
    (``loss0`` for round 0); then play ``argmin(cum + play_noise[i, b])``. When a run needs a
    redraw and its page is used up, the kernel saves where it stands (``next_round``,
    ``tries_done``) and returns the run: the caller turns its page and calls again.

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
        learn_first: True when round 0 learns (the agent played before the block).
        scale: the Laplace scale ``1 / eta``.
        cap: M.
        choice: (B,) int64 the current choice (updated in place).
        actions: (K, B) int64 the actions (written).
        next_round: (B,) int64 the first round each run still has to play.
        tries_done: (B,) int64 redraws already made in a resampling cut short by a page turn.

    Returns:
        The run whose page must turn, or -1 when every run played its K rounds.
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

    Args:
        core: the :class:`~agents.bandit_core.FtplGRCore` (fixed rate; updated in place).
        choice: (B,) int64 the current choice (updated in place).
        losses: (K, S, m) the block's losses.
        rows: (B,) the loss stream of each run.
        loss0: (B,) the loss observed before the block (unused unless ``learn_first``).
        learn_first: True when round 0 learns.
        compiled: run the compiled kernel (False: its Python form, for tests).

    Returns:
        (K, B) int64 actions.
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
