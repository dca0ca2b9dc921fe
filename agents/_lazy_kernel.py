"""The lazy samplers' block of rounds in one compiled call, bit for bit ``act``.

:func:`lazy_rounds` runs what ``LazySampler``'s ``act`` runs, with the same floats: the same
additions in order, numpy's pairwise normalising sum, numpy's own ``exp`` loop by pointer
(:func:`agents._numpy_loops.exp_into`; numba's differs in the last bit) and ``act``'s operand
order in products.
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
    """The lazy samplers' K rounds after round 1 (``_learn``, ``_choose``): (K, B) actions.

    Args:
        x: (K, B, N) the block's clipped observations (row i learned at clock ``t0 + i``).
        t0: the agent's clock at the block's first round.
        batch: rounds per decision.
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
        u: (B, D, 3) the D decisions' uniforms: forced coin, stay coin, draw.
        loop: numpy's exp loop (:func:`agents._numpy_loops.ufunc_loop`; unused in Python).
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
            # _learn
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
            # _choose: the stay factors as act's one (B,) np.exp
            for b in range(runs):
                z[b] = neg_c[b] * held_loss[b]
            exp_into(z, stay, runs, loop)
            for b in range(runs):
                attempt = (u[b, d, 0] < p[b]) or (u[b, d, 1] >= stay[b])
                if attempt and resamples[b] < max_resamples[b]:
                    resamples[b] += 1
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
