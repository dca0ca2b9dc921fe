"""The lazy samplers' block of rounds in one compiled call, bit for bit ``act``.

:meth:`agents._lazy_sampler.LazySampler.play_block` hands the K rounds of a block to
:func:`lazy_rounds`, which runs, run by run and round by round, what ``act`` runs: the block sums
(``_block_sum += losses``, then ``/ batch`` and back to zero at each decision), the cumulative
losses (``cum_loss += block``), the held expert's block loss, the stay factor
``exp(-c held)``, the two coins, the budget, and -- only for the runs that move -- the
exponential mechanism's law over the experts and its inverse-CDF draw.

Exactness: every float is the one ``act`` computes.

* Sums are the same additions in the same order: ``+=`` per round into the carried arrays (the
  agent's own ``cum_loss`` and ``_block_sum``, updated in place), pairwise for the law's
  normalising sum (:func:`agents._kernels.numpy_sum`), sequential for its ``cumsum``.
* The stay factors of a decision (one per run, as ``act``'s (B,) ``np.exp``) and a moving run's
  (N,) weights are numpy's own ``exp``: the compiled kernel calls numpy's float64 loop
  (:func:`agents._numpy_loops.exp_into`), its Python form calls ``np.exp``. numba's ``exp``
  differs from numpy's in the last bit (:mod:`dp_experts_env._jit`).
* Products keep ``act``'s operand order: ``(-c) * held`` and ``(-T) * L`` with
  ``T = (2c / batch) / (2 (1 / batch))``, the exponential mechanism's temperature.

Before, the block learned round by round in Python and evaluated the stay factor and the law of
every expert, run and decision ((D, B, N) ``exp`` twice); the kernel needs one ``exp`` of B
values per decision and N per resample (resamples are rare: the budget caps them).
"""

from __future__ import annotations

import numpy as np

from agents._kernels import numpy_sum
from agents._numpy_loops import exp_into
from dp_experts_env._jit import helper, kernel

__all__ = ["lazy_rounds"]


@helper(inline=False)
def _row_total(row: np.ndarray, n: int) -> float:
    """``row[:n].sum()`` as numpy sums it (called, not inlined: the kernel compiles faster)."""
    return numpy_sum(row, 0, n)


@kernel
def lazy_rounds(  # noqa: ANN201, PLR0913
    x, t0, batch, block_sum, cum, held_loss, expert, resamples, switches, neg_c, neg_temp, p,
    max_resamples, u, loop,
):  # noqa: ANN001
    """The lazy samplers' K rounds after round 1 (``LazySampler._learn`` then ``_choose``).

    Args:
        x: (K, B, N) the block's clipped observations (row i: the feedback ``act`` learns at
            clock ``t0 + i``; unused at clock 0).
        t0: the agent's clock at the block's first round.
        batch: rounds per decision (1: every round decides on its own losses, undivided).
        block_sum: (B, N) the carried sum of the current decision block (updated in place).
        cum: (B, N) the cumulative block-averaged losses (updated in place).
        held_loss: (B,) the held expert's last block loss (updated in place).
        expert: (B,) the held experts (updated in place; set for clock 0 by the caller).
        resamples: (B,) resamples made (updated in place).
        switches: (B,) switch counters (updated in place).
        neg_c: (B,) minus the stay coin's rate ``c`` of each run.
        neg_temp: (B,) minus the exponential mechanism's temperature of each run.
        p: (B,) per-run forced-resample probability.
        max_resamples: (B,) per-run resample budget.
        u: (B, D, 3) each run's uniforms of the block's D decisions (the learner's
            ``DECISION_UNIFORMS``), in order: forced coin, stay coin, draw.
        loop: numpy's exp loop (:func:`agents._numpy_loops.ufunc_loop`; unused in Python).

    Returns:
        (K, B) actions.
    """
    rounds, runs, n = x.shape
    actions = np.empty((rounds, runs), dtype=np.int64)
    z = np.empty(runs)
    stay = np.empty(runs)
    logits = np.empty(n)
    w = np.empty(n)
    cdf = np.empty(n)
    d = 0  # decisions made in this block
    for i in range(rounds):
        t = t0 + i
        decides = t > 0 and t % batch == 0
        if t > 0:
            # _learn: the block's losses into the sums; at a decision, the block's average.
            for b in range(runs):
                if batch == 1:
                    for j in range(n):
                        cum[b, j] = cum[b, j] + x[i, b, j]
                    held_loss[b] = x[i, b, expert[b]]
                else:
                    for j in range(n):
                        block_sum[b, j] = block_sum[b, j] + x[i, b, j]
                    if decides:
                        for j in range(n):
                            value = block_sum[b, j] / batch
                            cum[b, j] = cum[b, j] + value
                            block_sum[b, j] = 0.0
                            if j == expert[b]:
                                held_loss[b] = value
        if decides:
            # _choose: the stay factors of every run (numpy's exp of a (B,) array, as act's).
            for b in range(runs):
                z[b] = neg_c[b] * held_loss[b]
            exp_into(z, stay, runs, loop)
            for b in range(runs):
                attempt = (u[b, d, 0] < p[b]) or (u[b, d, 1] >= stay[b])
                if attempt and resamples[b] < max_resamples[b]:
                    resamples[b] += 1
                    # The exponential mechanism's law exp(-T L) / sum, shifted by its max.
                    top = -np.inf
                    for j in range(n):
                        value = neg_temp[b] * cum[b, j]
                        logits[j] = value
                        if value > top:
                            top = value
                    for j in range(n):
                        logits[j] = logits[j] - top
                    exp_into(logits, w, n, loop)
                    total = _row_total(w, n)
                    running = 0.0
                    for j in range(n):
                        running = running + w[j] / total
                        cdf[j] = running
                    scaled = u[b, d, 2] * cdf[n - 1]
                    draw = 0
                    for j in range(n):
                        if cdf[j] <= scaled:
                            draw += 1
                    new = draw if draw < n - 1 else n - 1
                    if new != expert[b]:
                        switches[b] += 1
                    expert[b] = new
            d += 1
        for b in range(runs):
            actions[i, b] = expert[b]
    return actions
