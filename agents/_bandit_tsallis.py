"""Block play of the Tsallis-INF (HTINF) learners: K rounds of ``act`` in one compiled call.

For ``tsallis-inf`` over the arms and :mod:`agents.private_bandit`'s conversions with the
HTINF core and ``fast`` noise. Bit for bit the per-round path (tests/test_tsallis_block.py):
the block's uniforms are one read in the rounds' order (release, draw, play from the advice);
:func:`agents.bandit_core.tsallis_inf_weights` is repeated with numpy's pairwise sums, ``** 2``
as a product and ``x ** 1.5`` through numpy's own ``power`` loop (:mod:`agents._numpy_loops`;
its SIMD ``pow`` differs from libm's). Otherwise the learners keep their per-round path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents._kernels import numpy_sum
from agents._numpy_loops import power_scalar_into, register, ufunc_loop
from dp_experts_env import samplers
from dp_experts_env._jit import helper, jit_enabled, kernel

__all__ = ["power_loop", "tsallis_ready", "tsallis_rounds", "run_tsallis_block"]

_OVERLOADS: list[bool] = []
#: :func:`agents.bandit_core.tsallis_inf_weights`' defaults (its stopping rule).
_TOL, _MAX_ITER = 1e-12, 200


def power_loop() -> np.ndarray | None:
    """The float64 ``power`` loop numpy runs for ``x ** y`` (x contiguous, y a scalar), or None."""
    return ufunc_loop(np.power, (8, 0, 8))


def tsallis_ready() -> bool:
    """True when the compiled block kernel runs (JIT on, numpy's power loop available)."""
    return jit_enabled() and power_loop() is not None


def _register() -> None:
    """Compile the loop calls (once per process; numpy_sum's helpers compile with the kernel)."""
    if not _OVERLOADS:
        register()
        _OVERLOADS.append(True)


@helper(inline=False)
def _weights(cum: np.ndarray, m: int, beta: float, x: np.ndarray, pw: np.ndarray,
             exponent: np.ndarray, loop: np.ndarray) -> None:
    """``x[:m]`` = :func:`agents.bandit_core.tsallis_inf_weights` of one run's ``cum``."""
    lo = cum[0]
    for j in range(1, m):
        lo = min(lo, cum[j])
    nu = beta - lo
    for _ in range(_MAX_ITER):
        for j in range(m):
            d = beta / (cum[j] + nu)
            x[j] = d * d
        total = numpy_sum(x, 0, m)
        if not total - 1.0 > _TOL:
            break
        power_scalar_into(x, exponent, pw, m, loop)
        slope = 2.0 * numpy_sum(pw, 0, m) / beta
        nu = nu + (total - 1.0) / slope
    for j in range(m):
        d = beta / (cum[j] + nu)
        x[j] = d * d
    total = numpy_sum(x, 0, m)
    for j in range(m):
        x[j] = x[j] / total


@helper(inline=False)
def _draw(p: np.ndarray, m: int, u: float, cdf: np.ndarray) -> int:
    """:meth:`BatchRNG.categorical` of one row ``p[:m]`` with its uniform ``u``."""
    running = 0.0
    for a in range(m):
        running = running + p[a] if a else p[a]
        cdf[a] = running
    scaled = u * cdf[m - 1]
    chosen = 0
    for a in range(m):
        if cdf[a] <= scaled:
            chosen += 1
    return min(chosen, m - 1)


@kernel
def tsallis_rounds(  # noqa: ANN201, PLR0913
    cum, n_updates, n_skipped, skipped, choice, batch_sum, x_last, sigma, theta, skip,
    learns, releases, samples, col_lap, col_sample, col_play, u, lap, private, tau,
    losses, rows, loss0, first_advice, block_advice, over_experts, exponent, loop,
):  # noqa: ANN001
    """K rounds of a Tsallis-INF learner, run by run: (K, B) int64 actions (state updated).

    Args:
        cum: (B, m) the core's cumulative estimates.
        n_updates: (B,) int64 the core's clock.
        n_skipped: (B,) int64 the core's skip counter.
        skipped: (B,) bool whether the last update was skipped.
        choice: (B,) int64 the current choice (the batch's arm or expert).
        batch_sum: (B,) the running batch sum (private only).
        x_last: (B, m) the law of each run's last draw (written).
        sigma: the core's heavy-tail scale.
        theta: HTINF's skipping constant.
        skip: apply the skipping threshold.
        learns: (K,) bool, the rounds that learn.
        releases: (K,) bool, the rounds that release a batch (private).
        samples: (K,) bool, the rounds that draw a new choice.
        col_lap: (K,) int64 the column of ``lap`` of each release (-1: no noise).
        col_sample: (K,) int64 the column of ``u`` of each draw.
        col_play: (K,) int64 the column of ``u`` of each play from the advice.
        u: (B, D) the block's uniforms.
        lap: (B, L) the releases' noise.
        private: the batched conversion (clip, batch sum, releases).
        tau: the batch length (private).
        losses: (K, S, A) the block's losses, read at the played arms only.
        rows: (B,) stream of each run.
        loss0: (B,) the observed loss before the block.
        first_advice: (B, N, A) round 0's advice.
        block_advice: (K, B, N, A), or (0, ...) when every round's is ``first_advice``.
        over_experts: play from the chosen expert's advice.
        exponent: (1,) 1.5, the Newton slope's power.
        loop: numpy's power loop (:func:`power_loop`).
    """
    rounds = learns.shape[0]
    runs, m = cum.shape
    arms = first_advice.shape[2]
    shared = block_advice.shape[0] == 0
    actions = np.empty((rounds, runs), dtype=np.int64)
    x = np.empty(m)
    pw = np.empty(m)
    cdf = np.empty(max(m, arms))
    for b in range(runs):
        valid = False  # x holds the law of the current state
        for k in range(rounds):
            if learns[k]:
                if k == 0:
                    y = loss0[b]
                else:
                    y = losses[k - 1, rows[b], actions[k - 1, b]]
                update = True
                if private:
                    y = y if y > 0.0 else 0.0  # np.clip(y, 0, 1): max first, then min
                    y = y if y < 1.0 else 1.0
                    batch_sum[b] = batch_sum[b] + y
                    update = releases[k]
                    if update:
                        y = batch_sum[b] / tau
                        if col_lap[k] >= 0:
                            y = y + lap[b, col_lap[k]]
                        batch_sum[b] = 0.0
                if update:
                    beta = sigma * np.sqrt(float(n_updates[b] + 1))
                    if not valid:
                        _weights(cum[b], m, beta, x, pw, exponent, loop)
                    arm = choice[b]
                    xa = x[arm]
                    kept = True
                    if skip:
                        kept = abs(y) <= theta * beta * np.sqrt(xa)
                    estimate = (y if kept else 0.0) / xa
                    cum[b, arm] = cum[b, arm] + estimate
                    n_updates[b] += 1
                    skipped[b] = not kept
                    if not kept:
                        n_skipped[b] += 1
                    valid = False
            if samples[k]:
                if not valid:
                    beta = sigma * np.sqrt(float(n_updates[b] + 1))
                    _weights(cum[b], m, beta, x, pw, exponent, loop)
                    valid = True
                choice[b] = _draw(x, m, u[b, col_sample[k]], cdf)
                for j in range(m):
                    x_last[b, j] = x[j]
            if over_experts:
                adv = first_advice[b] if k == 0 or shared else block_advice[k, b]
                actions[k, b] = _draw(adv[choice[b]], arms, u[b, col_play[k]], cdf)
            else:
                actions[k, b] = choice[b]
    return actions


def run_tsallis_block(
    core: Any,
    rng: Any,
    *,
    choice: np.ndarray,
    batch_sum: np.ndarray,
    learns: np.ndarray,
    releases: np.ndarray,
    samples: np.ndarray,
    scale: float,
    private: bool,
    tau: int,
    losses: np.ndarray,
    rows: np.ndarray,
    loss0: np.ndarray,
    first_advice: np.ndarray | None,
    block_advice: np.ndarray | None,
    compiled: bool = True,
) -> np.ndarray:
    """Draw the block's uniforms and noise, run :func:`tsallis_rounds`, store the core's state.

    Arguments as :func:`tsallis_rounds`, except: ``core`` the
    :class:`~agents.bandit_core.TsallisInfCore` (updated in place), ``rng`` its BatchRNG,
    ``scale`` a release's Laplace scale (0: no noise), ``first_advice`` None unless playing
    over experts, ``block_advice`` None when every round's is round 0's, ``compiled`` False for
    the kernel's Python form. Returns the (K, B) int64 actions.
    """
    k = len(learns)
    runs, m = core.cum_estimate.shape
    noisy = releases & (scale != 0.0)
    over = first_advice is not None
    per_round = noisy.astype(np.int64) + samples + over
    ends = np.cumsum(per_round)
    starts = ends - per_round
    col_lap = np.where(noisy, starts, -1)
    col_sample = np.where(samples, starts + noisy, -1)
    col_play = np.where(over, starts + noisy + samples, -1) if over else np.full(k, -1)
    drawn = int(ends[-1]) if k else 0
    u = np.ascontiguousarray(rng.random((drawn,)))
    lap = np.empty((runs, 0))
    lap_cols = col_lap[noisy]
    if lap_cols.size:
        lap = np.ascontiguousarray(samplers.laplace(u[:, lap_cols], scale))
        col_lap = np.where(noisy, np.cumsum(noisy) - 1, -1)
    if over:
        assert first_advice is not None
        adv0 = np.ascontiguousarray(first_advice, dtype=np.float64)
        block = (
            np.empty((0, 1, 1, 1))
            if block_advice is None
            else np.ascontiguousarray(block_advice, dtype=np.float64)
        )
    else:
        adv0, block = np.empty((1, 1, 1)), np.empty((0, 1, 1, 1))
    skipped = np.array(getattr(core, "_skipped", np.zeros(runs, dtype=bool)), dtype=np.bool_)
    x_last = np.empty((runs, m))
    run = tsallis_rounds if compiled else tsallis_rounds.py_func  # type: ignore[attr-defined]
    # The Python form too gets the real loop: once compiled, its helpers are numba functions.
    loop = power_loop()
    if loop is None:
        loop = np.zeros(3, dtype=np.int64)
    if compiled:
        _register()
    from agents.bandit_core import THETA_2

    actions = run(
        core.cum_estimate, core.n_updates, core.n_skipped, skipped, choice, batch_sum, x_last,
        float(core.sigma), THETA_2, bool(core.skip), learns, releases, samples, col_lap,
        col_sample, col_play, u, lap, private, float(tau),
        np.ascontiguousarray(losses, dtype=np.float64), np.ascontiguousarray(rows, np.int64),
        np.asarray(loss0, dtype=np.float64), adv0, block, over, np.array([1.5]), loop,
    )
    updated = np.flatnonzero(releases if private else learns)
    drawn_at = np.flatnonzero(samples)
    if updated.size:
        core._skipped = skipped
    if drawn_at.size and (not updated.size or drawn_at[-1] >= updated[-1]):
        core._cache = x_last  # the law of the last draw, as distribution() cached it
    elif updated.size:
        core._cache = None
    return actions
