"""Limited updates restarted by a sparse-vector shift detector (shifting-stochastic losses).

Source: Algorithm 2 and Theorem 3.6 (Section 3.2) of Asi, Raman & Saha 2025, "Tracking the Best
Expert Privately".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import AGENT_STREAM, PrivacyClaim, clip_unit
from agents.limited_updates import (
    SELECTORS,
    is_power_of_two,
    private_select,
    selection,
    selection_scale,
)
from agents.private import PrivateAgent
from agents.registry import register
from dp_experts_env._jit import helper, jit_enabled, kernel
from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.declaration import (
    Mechanism,
    Parallel,
    Sequential,
    SparseVector,
    account,
)
from dp_experts_env.privacy.guarantee import Guarantee
from dp_experts_env.privacy.mechanisms import (
    AboveThreshold,
    exponential_mechanism_runs,
    report_noisy_min_runs,
)
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = [
    "SVTRestart",
    "WINDOW_GRIDS",
    "BOUNDARIES",
    "DYADIC_STARTS",
    "DEFAULT_FALSE_ALARM",
    "THRESHOLD_SCALE_RANGE",
    "BERNSTEIN_LAMBDAS",
    "bernstein_query_sensitivity",
    "betting_boundary",
    "betting_coefficients",
    "betting_query_sensitivity",
]

WINDOW_GRIDS = ("dyadic", "all")
#: calibrated boundaries: the betting boundary in each window's negative part (default since
#: #29's fourth revision), the empirical-Bernstein one in its second moment, or the n-only
#: normal mixture (the first revision)
BOUNDARIES = ("betting", "bernstein", "normal-mixture")
#: the lambda grid of the empirical-Bernstein boundary: 0.5 * 2^(-k/2), k = 0..7 (0.5 down to
#: 0.044: the optimal lambda ~ sqrt(2 L / V) for second moments V from ~100 to T = 10^4 at
#: L ~ 15; lambda <= 1/2 keeps the boundary's slope in V below 1/2, see _bernstein)
BERNSTEIN_LAMBDAS = tuple(0.5 * 2.0 ** (-k / 2.0) for k in range(8))
#: the accepted threshold_scale, [min, max]: far from float overflow in the betting query's
#: ``(1 - a_k) / threshold_scale`` (1e-310 made it inf and the detector never fired) and in
#: the noise scales, which grow like threshold_scale
THRESHOLD_SCALE_RANGE = (1e-100, 1e100)
#: window starts kept per dyadic level: the last DYADIC_STARTS multiples of 2^k
DYADIC_STARTS = 8
# The de-duplicated dyadic storage below relies on ring slot parity = parity of u / 2^k.
assert DYADIC_STARTS % 2 == 0
#: calibrated tuning's per-epoch level beta (the three tail bounds of the slack each hold at
#: beta / 4 at finite epsilon; docs/algorithms.md says what is and is not proven)
DEFAULT_FALSE_ALARM = 0.05
#: rho of the normal-mixture boundary: where (in window length) it is tightest, roughly
MIXTURE_RHO = 16.0
#: refuse window_grid="all" when its prefix-sum history would exceed this many bytes
_ALL_GRID_MAX_BYTES = 1 << 30
# ndarray.max without its Python wrapper layers (the same values).
_max_reduce = np.maximum.reduce
#: uniforms buffered per run by the selection streams (refilled per run when used up)
_SELECTION_CHUNK = 256


def _bernstein_slopes() -> np.ndarray:
    """``psi(lambda)/lambda`` on :data:`BERNSTEIN_LAMBDAS`, ``psi(l) = -ln(1 - l) - l``."""
    lam = np.array(BERNSTEIN_LAMBDAS)
    return (-np.log1p(-lam) - lam) / lam


def bernstein_boundary(
    second_moment: np.ndarray, level_log: float, counts: np.ndarray | None = None
) -> np.ndarray:
    """``min_k (level_log + psi(lambda_k) V) / lambda_k``: the empirical-Bernstein boundary.

    For a window difference with increments ``X_s`` in [-1, 1] and conditional means mu_s,
    ``exp(lambda (sum X_s - mu_s) - psi(lambda) sum X_s^2)`` is a non-negative
    supermartingale for every lambda in [0, 1) (Fan et al.'s ``e^(l y - psi(l) y^2) <= 1 + l y``
    for ``y = X_s >= -1``, then ``1 + l mu_s <= e^(l mu_s)``), so by Ville's inequality and a
    union over the K lambdas of :data:`BERNSTEIN_LAMBDAS`, with ``level_log = ln(K / a)`` the
    martingale part stays below this boundary at every window length at once with probability
    ``1 - a``. ``V`` = ``second_moment`` = the window's observed ``sum X_s^2``. Elementwise;
    concave and piecewise linear in V with slopes in (0, 0.39). ``counts`` (broadcastable to V):
    use only the first ``counts`` lambdas (largest first) for each element.
    """
    v = np.asarray(second_moment, dtype=np.float64)
    out = None
    slopes = _bernstein_slopes().tolist()
    for k, (lam, slope) in enumerate(zip(BERNSTEIN_LAMBDAS, slopes, strict=True)):
        term = level_log / lam + slope * v
        if out is None:
            out = term
        elif counts is None:
            out = np.minimum(out, term)
        else:
            out = np.where(k < counts, np.minimum(out, term), out)
    return out


def bernstein_query_sensitivity(c: float) -> float:
    """``max_{d in [0, 2]} d (1 + c (2 - d))``: 2 if ``c <= 1/2``, else ``1 + c + 1/(4 c)``.

    The L1 sensitivity of a window query ``D_j - threshold_scale b(V_j) - const`` when b is
    kappa-Lipschitz and ``c = threshold_scale kappa``: one replaced round moves the window's
    increment ``x = l(I) - l(j)`` in [-1, 1] to x', so D_j by ``d = |x' - x|`` and
    ``V_j = sum x^2`` by ``d |x' + x|``, and ``|x' + x| + |x' - x| = 2 max(|x|, |x'|) <= 2``.
    The maximiser is ``d = 2`` while ``c <= 1/2``, else ``d = 1 + 1/(2 c)``.
    """
    c = check_float("c", c, minimum=0.0)
    return 2.0 if c <= 0.5 else 1.0 + c + 1.0 / (4.0 * c)


def betting_coefficients() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(c_k, a_k, s_k)`` of the betting boundary on :data:`BERNSTEIN_LAMBDAS`.

    ``r_k = ln((1 + lam)/(1 - lam))`` (the range of one round's log-wealth),
    ``c_k = 2 / r_k`` (normalises every lambda's query to sensitivity 2),
    ``a_k = c_k ln(1 + lam)`` (the window difference's coefficient, < 1) and
    ``s_k = -c_k ln(1 - lam^2)`` (the negative part's); ``2 a_k + s_k = 2`` exactly.
    """
    lam = np.array(BERNSTEIN_LAMBDAS)
    r = np.log1p(lam) - np.log1p(-lam)
    c = 2.0 / r
    return c, c * np.log1p(lam), -c * np.log1p(-lam * lam)


def betting_boundary(
    negative: np.ndarray,
    difference: np.ndarray,
    level_log: float,
    threshold_scale: float = 1.0,
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """``min_k (c_k L + s_k N + (1 - a_k) D / threshold_scale)``: the betting boundary.

    For a window difference with increments ``X_s`` in [-1, 1] and conditional means mu_s,
    ``N = sum max(-X_s, 0)`` (the window's negative part), ``D = sum X_s`` and
    ``L = level_log``. ``g(x) = lam x - ln(1 + lam x)`` is convex with ``g(0) = 0``, so on
    [0, 1] it lies below its chord ``(lam - ln(1 + lam)) x`` and on [-1, 0] below
    ``(-lam - ln(1 - lam)) |x|``; with ``f`` these chords, ``exp(lam x - f(x)) <= 1 + lam x``
    on [-1, 1], so ``exp(lam (D - sum mu_s) - sum f(X_s))`` is a non-negative
    supermartingale (equal to the betting wealth ``prod (1 + lam X_s)`` times
    ``exp(-lam sum mu_s)`` when every ``X_s`` is in {-1, 0, 1}). Its log is
    ``ln(1 + lam) D + ln(1 - lam^2) N - lam sum mu_s``; Ville's inequality and a union over the
    lambdas (``level_log = ln(K / a)``) bound the chance it ever reaches L by a. The query
    ``D - threshold_scale (boundary + const)`` is then ``max_k (a_k D - threshold_scale (c_k L
    + s_k N + const))``: ``c_k`` times the log-wealth above L at ``threshold_scale = 1``.
    Elementwise; ``counts`` as in :func:`bernstein_boundary`. ``threshold_scale`` is not
    checked here (a hot path); :class:`SVTRestart` accepts it only in
    :data:`THRESHOLD_SCALE_RANGE`, since a subnormal one overflows ``(1 - a_k)/threshold_scale``.
    """
    c, a, s = (x.tolist() for x in betting_coefficients())
    neg = np.asarray(negative, dtype=np.float64)
    diff = np.asarray(difference, dtype=np.float64)
    out = None
    for k in range(len(c)):
        term = c[k] * level_log + s[k] * neg + ((1.0 - a[k]) / threshold_scale) * diff
        if out is None:
            out = term
        elif counts is None:
            out = np.minimum(out, term)
        else:
            out = np.where(k < counts, np.minimum(out, term), out)
    return out


def betting_query_sensitivity(threshold_scale: float) -> float:
    """``max_k (2 a_k + threshold_scale s_k) = max_k (2 + (threshold_scale - 1) s_k)``.

    Each lambda's query ``a_k D - threshold_scale (s_k N + const)`` is a sum over the window's
    rounds of ``h(x) = a_k x - threshold_scale s_k max(-x, 0)``, increasing on [-1, 1], so one
    replaced round moves it by at most ``h(1) - h(-1) = 2 a_k + threshold_scale s_k``; the
    maximum over lambdas, windows and experts moves by at most the largest. 2 at the default
    ``threshold_scale = 1`` (``2 a_k + s_k = 2``).
    """
    ts = check_float("threshold_scale", threshold_scale, minimum=0.0, min_inclusive=False)
    _, _, s = betting_coefficients()
    if ts == 1.0:
        return 2.0
    extreme = float(s.max()) if ts > 1.0 else float(s.min())
    return 2.0 + (ts - 1.0) * extreme


@helper
def _window_bound(
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    count: int,
    v: float,
    d: float,
    with_d: bool,
) -> float:
    """One element's boundary ``min_{k < count} (offsets[k] + slopes[k] v [+ dslopes[k] d])``.

    Shared by the per-round query kernel and svt-restart's block kernel
    (:mod:`agents._svt_kernels`), so both compute the same floats in the same order.
    """
    b = offsets[0] + slopes[0] * v
    if with_d:
        b = b + dslopes[0] * d
    for k in range(1, count):
        term = offsets[k] + slopes[k] * v
        if with_d:
            term = term + dslopes[k] * d
        if term < b:
            b = term
    return b


@kernel
def _bernstein_query_kernel(  # pragma: no cover - compiled; its Python form runs in the tests
    cum: np.ndarray,
    cum_sq: np.ndarray,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    empty: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    slopes: np.ndarray,
    dslopes: np.ndarray,
    with_d: bool,
    const: np.ndarray,
    scale: float,
    out: np.ndarray,
) -> None:
    """:meth:`SVTRestart._bernstein_query` (dyadic grid) in one pass: the same floats.

    Every element is computed with the numpy path's operations in its order (``+ - *``,
    ``min``, ``max`` only, so compiled and numpy agree bit for bit): ``V = max(cum_sq -
    snap_sq, 0)`` (the betting boundary: the negative part N), ``d = learner - expert``,
    ``b = min_{k < counts[q]} (offsets[k] + slopes[k] V [+ dslopes[k] d if with_d])``, query
    ``d - scale (b + const[r])``; ``out[r]`` = the largest query of run r's non-empty columns
    (-inf when all are empty).
    """
    runs, n, cols = snap_experts.shape
    learner = np.empty(cols)
    for r in range(runs):
        best = -np.inf
        c = const[r]
        for q in range(cols):
            learner[q] = cum[r, n] - snap_learner[r, q]
        for j in range(n):
            cj, sj = cum[r, j], cum_sq[r, j]
            for q in range(cols):
                if empty[r, q]:
                    continue
                expert = cj - snap_experts[r, j, q]
                d = learner[q] - expert
                v = sj - snap_sq[r, j, q]
                if v < 0.0:
                    v = 0.0
                b = _window_bound(offsets, slopes, dslopes, counts[q], v, d, with_d)
                query = d - scale * (b + c)
                if query > best:
                    best = query
        out[r] = best


@kernel
def _push_snapshots_kernel(  # pragma: no cover - compiled; its Python form runs in the tests
    tau: np.ndarray,
    mask: np.ndarray,
    t: int,
    pow2: np.ndarray,
    store_index: np.ndarray,
    cum: np.ndarray,
    cum_sq: np.ndarray,
    with_sq: bool,
    snap_experts: np.ndarray,
    snap_learner: np.ndarray,
    snap_sq: np.ndarray,
    col_time: np.ndarray,
    col_empty: np.ndarray,
    snap_time: np.ndarray,
    snap_count: np.ndarray,
) -> None:
    """:meth:`SVTRestart._push_snapshots` run by run (copies only: the same values)."""
    runs, n, _ = snap_experts.shape
    levels, slots = store_index.shape
    for r in range(runs):
        if not mask[r]:
            continue
        for lev in range(levels):
            if tau[r] % pow2[lev] != 0:
                continue
            slot = snap_count[r, lev] % slots
            col = store_index[lev, slot]
            if col >= 0:
                for j in range(n):
                    snap_experts[r, j, col] = cum[r, j]
                snap_learner[r, col] = cum[r, n]
                if with_sq:
                    for j in range(n):
                        snap_sq[r, j, col] = cum_sq[r, j]
                col_time[r, col] = t
                col_empty[r, col] = False
            snap_time[r, lev, slot] = t
            snap_count[r, lev] += 1


class _SelectionStreams:
    """One uniform stream per run, read only by the runs that select this round.

    A selection (or an epoch's uniform first expert) happens at run-dependent rounds, about
    log2(T) times per epoch, so drawing its noise every round for every run (to keep the draw
    count the same for all runs of a batch) wasted most of it. Here each run owns a stream
    (seeded from its agent seed, apart from the agent's main stream) with its own cursor: a
    draw consumes uniforms from the runs that draw only, so run b of a batch still matches a
    single run seeded ``seeds[b]``, without any draw on the rounds nobody selects.
    """

    def __init__(self, seeds: Sequence[int]) -> None:
        self._generators = [
            np.random.Generator(np.random.PCG64(np.random.SeedSequence([s, AGENT_STREAM, 1])))
            for s in seeds
        ]
        self._buffer = np.empty((len(self._generators), _SELECTION_CHUNK))
        for row, g in zip(self._buffer, self._generators, strict=True):
            g.random(out=row)
        self._cursor = np.zeros(len(self._generators), dtype=np.int64)

    def take(self, runs: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` uniforms of each run in ``runs`` (distinct indices): (len, count)."""
        width = self._buffer.shape[1]
        short = runs[self._cursor[runs] + count > width]
        if len(short):
            if count > width:  # a larger draw than the buffer: widen it (every row keeps place)
                wider = np.empty((len(self._generators), count + _SELECTION_CHUNK))
                wider[:, :width] = self._buffer
                for row, g in zip(wider, self._generators, strict=True):
                    g.random(out=row[width:])
                self._buffer, width = wider, wider.shape[1]
                short = runs[self._cursor[runs] + count > width]
            for r in short:  # runs that used up their buffer: keep the rest, refill behind it
                cur = self._cursor[r]
                row = self._buffer[r]
                left = width - cur
                row[:left] = row[cur:].copy()
                self._generators[r].random(out=row[left:])
                self._cursor[r] = 0
        cols = self._cursor[runs][:, None] + np.arange(count)
        self._cursor[runs] += count
        return self._buffer[runs[:, None], cols]

    def view(self, runs: np.ndarray) -> BatchRNG:
        """A :class:`BatchRNG` of ``len(runs)`` runs reading these runs' streams."""
        return _RunsView(self, runs)


class _RunsView(BatchRNG):
    """The runs ``runs`` of a :class:`_SelectionStreams` as a BatchRNG (for the mechanisms).

    Every BatchRNG law (Laplace, Gumbel, integers, ...) is a transform of ``_take``, so the
    mechanisms draw exactly as from a BatchRNG, only from these runs' selection streams.
    """

    def __init__(self, streams: _SelectionStreams, runs: np.ndarray) -> None:  # noqa: D107
        # No BatchRNG.__init__: the uniforms come from ``streams``, not from own generators.
        self.num_runs = len(runs)
        self._streams = streams
        self._runs = runs

    def _take(self, count: int) -> np.ndarray:
        return self._streams.take(self._runs, count)


@register(
    "svt-restart",
    private=True,
    summary="limited updates + sparse-vector restarts on detected shifts (ARS Algorithm 2)",
)
class SVTRestart(PrivateAgent):
    """Limited updates (eps/2) restarted whenever AboveThreshold (eps/2) detects window regret.

    Source: Algorithm 2, Lemmas 3.4–3.5 and Theorem 3.6 (Section 3.2) of Asi, Raman & Saha 2025,
    "Tracking the Best Expert Privately".
    Built for shifting-stochastic adversaries (i.i.d. losses between change points).

    An epoch runs a fresh :class:`~agents.limited_updates.LimitedUpdates` instance on a local
    clock (uniform first expert, private selections at local times 2, 4, 8, ... at budget
    ``epsilon/2``) together with a fresh AboveThreshold instance at budget ``epsilon/2``. After
    every round ``t`` the detector asks AboveThreshold (threshold 0) one query,

        Q_t = max over windows [u+1, t] inside the epoch, experts j and lambdas k of
              a_k D_j - threshold_scale (s_k N_j + c_k L + c0 + alpha + 1)   (default, betting)
        with D_j = learner's window loss - expert j's, N_j = the window's negative part
        sum max(l_s(j) - l_s(I_s), 0) and L = ln(N S/term_beta) (``threshold_scale`` does not
        scale the ``(1 - a_k) D_j`` part; :func:`betting_boundary`); with ``boundary="bernstein"``
        or ``"normal-mixture"`` (and ``tuning="paper"``)
              max_j D_j - threshold_scale * slack,   slack = Reg(n - 1) + alpha + 1,
        n = t - u the window length (Bernstein: Reg also reads the window's second moment V_j).

    When it fires, both parts restart: a new limited-updates instance and a new detector with a
    fresh noisy threshold. ``max_restarts`` caps restarts; after the cap the last epoch's
    limited-updates instance continues with no detector (erratum E-ARS-10).

    Privacy claim: pure ``epsilon``-DP against adaptive adversaries. Accountant: selections are
    report-noisy-min / exponential mechanism at ``epsilon/2`` on disjoint windows; the detector is
    AboveThreshold at ``epsilon/2`` with threshold noise ``Lap(2 D/(eps/2))`` and query noise
    ``Lap(4 D/(eps/2))`` for queries of sensitivity D (erratum E-ARS-6: one replaced loss
    vector moves the learner's window loss by 1 and expert j's by 1, so every window difference
    moves by at most 2; with the default betting boundary each lambda's query
    ``a_k D_j - threshold_scale (s_k N_j + c_k L + const)`` is a sum over the window's rounds of
    an increasing function of that round's difference x, whose range on [-1, 1] is
    ``2 a_k + threshold_scale s_k``, so ``D = max_k (2 + (threshold_scale - 1) s_k)``: 2 at the
    default threshold_scale 1 (:func:`betting_query_sensitivity`); with
    ``boundary="bernstein"`` the slack also reads the window's
    second moment V_j through a function of slope at most ``kappa = 2 ln 2 - 1``, and a change
    ``d`` of the window difference moves V_j by at most ``d (2 - d)``, so
    ``D = max_d d (1 + c (2 - d))`` with ``c = threshold_scale kappa``: 2 while ``c <= 1/2``
    (threshold_scale <= 1.29, the default included), else ``1 + c + 1/(4 c)``
    (:func:`bernstein_query_sensitivity`); with ``boundary="normal-mixture"`` D = 2; the
    maximum Q_t has the same sensitivity; the plays
    inside the queries are released outputs of the selection half, adaptive composition);
    epochs are data-disjoint (the new epoch starts at
    ``t + 1``, erratum E-ARS-7) with boundaries that are released outputs, so each loss meets one
    selection and one detector instance; basic composition of the two halves.

    Modes (privacy):
        * ``mode="strict"`` (default): D as above (2 at the default) and the next epoch starts
          at ``t + 1`` (E-ARS-6, E-ARS-7); the inner bound Reg uses the inner budget
          ``epsilon/2`` and alpha is computed from the detector's own parameters (E-ARS-4,
          E-ARS-5).
        * ``mode="paper"``: noise for D = 1 and the next epoch starts at ``t`` (round t reused
          by the next selection and detector); with ``tuning="paper"`` the paper's Reg
          (``epsilon``) and alpha, with the default calibrated tuning the calibrated slack.
          Not certified: the queries' true sensitivity D (2 at the default) makes each detector
          spend ``D epsilon/2``, and a restart round's loss meets the old detector, the new one
          and the new epoch's first selection: ``D eps/2 + D eps/2 + eps/2``, so only
          ``(D + 1/2) epsilon`` (2.5 epsilon at the default) is certified (the claim's note).

    Thresholds (never affect privacy, only the noise scales do), with ``beta`` (default ``1/T`` for
    the paper tuning, the stated false-alarm level 0.05 for the calibrated one),
    ``eps1 = epsilon/2`` (strict) or ``epsilon`` (paper) and ``k = T`` the number of queries one
    detector may answer:
        * ``tuning="paper"``: Theorem 3.1 / Algorithm 2 constants,
          ``Reg(w) = 16 log(NT/beta)/eps1 + 9 sqrt(w log(TN/beta))``; ``alpha =
          8 D (log k + log(2 T/beta))/(eps/2)`` (strict: Lemma 2.4 with the detector's own
          parameters, E-ARS-5) or ``16 (2 log T + log(2/beta))/eps`` (paper, as printed).
        * ``tuning="calibrated"`` (default): three terms of the slack (the boundary, the query
          noise and the threshold noise) are tail bounds, at level ``term_beta`` (beta / 4 at
          finite epsilon, so their union is at most 3 beta / 4 <= beta per epoch; beta at
          epsilon = inf, where only the boundary term is non-zero; written beta below), of the
          quantity each must cover while losses are stationary (the martingale part of the
          window difference and the detector's noise). The fourth, the selection-noise term
          c0 below, is a heuristic allowance for the learner's in-window pseudo-regret (the
          window difference's compensator), which no term bounds (docs/algorithms.md); it is
          computed at the same level but backs no step of the false-alarm argument.
          ``boundary="betting"`` (default since #29's fourth revision): per window and
          expert j and lambda_k (the same grid and per-start subsets as below), the log-wealth
          ``ln(1 + lam_k) D_j + ln(1 - lam_k^2) N_j`` of betting a fraction lam_k on each
          round's difference, ``N_j = sum max(l_s(j) - l_s(I_s), 0)`` the window's negative
          part (:func:`betting_boundary`: ``ln(1 + lam x) >= `` its chords on [-1, 0] and
          [0, 1], exact on {-1, 0, 1}, so Ville's inequality applies as below), against
          ``ln(N S/beta)``; the query of lambda k is ``c_k`` times the log-wealth above that
          level (``c_k = 2 / ln((1 + lam_k)/(1 - lam_k))``, so every lambda's query has
          sensitivity 2) minus ``threshold_scale`` times the constant terms. On Bernoulli losses
          it is the Bernstein boundary's supermartingale without Fan's slack at x = +1 (a
          shift of gap 0.3 fires after ~145 rounds instead of ~204, N = 10, T = 10^4,
          epsilon = inf); on continuous losses it reads |x| where Bernstein reads x^2.
          ``boundary="bernstein"``: per window and expert j,
          ``b = min_{k < K_u} (ln(N S/beta) + psi(lam_k) V_j)/lam_k``
          (:func:`bernstein_boundary`, lam_k = 0.5 2^(-k/2), k < 8,
          ``psi(l) = -ln(1 - l) - l``) at the window's observed second moment
          ``V_j = sum (l_s(I_s) - l_s(j))^2`` (Fan et al.'s inequality with centre 0, Ville's
          inequality, a union over lam); a start u uses the K_u largest lambdas its tested
          lengths need (:meth:`_level_lambdas`) and ``S = union_size`` = sum of K_u over the
          counted starts (1,874 at N = 10, T = 10^4). It replaces b(n) below, whose variance
          proxy 1 is the worst case; ``slack(n, second_moment)`` evaluates it at
          ``V = second_moment n`` with all 8 lambdas. ``boundary="normal-mixture"``:
          ``Reg(n - 1) = b(n) + 2 s1 log(N J/beta)`` with the time-uniform
          normal-mixture boundary ``b(n) = sqrt((n + rho) (ln((n + rho)/rho) + 2 ln(N U/beta)))``
          (``rho`` = :data:`MIXTURE_RHO` = 16) -- by Ville's inequality, for one window start
          and one expert the [-1, 1]-valued window differences (a martingale part with
          variance proxy 1) stay below b(n) at every length n at once with probability
          ``1 - beta/(N U)``; a union over the N experts and the U window starts an epoch may
          test at a length where a window can fire (:meth:`_count_window_starts`: T / 8 in the
          dyadic grid at N = 10, T = 10^4; T in the "all" grid) gives level beta per epoch,
          with no union over the
          rounds at which a window is examined (the previous tuning took a fixed-length
          Hoeffding bound with a union over all (expert, window, round) triples) -- plus
          the heuristic allowance ``c0 = 2 s1 log(N J/beta)``, the largest noise advantage
          report-noisy-min (scale ``s1``) can give a worse expert in one of the
          ``J = floor(log2 T)`` selections of an epoch (in the previous window's losses, so
          not a bound on the compensator);
          and ``alpha = sq log(k/(2 beta)) + sr log(1/(2 beta))``, the Laplace tails of the query
          noise (scale ``sq``, k queries) and of the threshold noise (scale ``sr``). From
          (N, T, epsilon, beta) only; a shift that makes the played expert ``gap`` worse fires
          after about :meth:`detection_length` ``(gap)`` rounds (normal mixture: 333 at gap
          0.3, N = 10, T = 10^4, epsilon = inf; 3,048 at gap 0.1; Bernstein at second moment
          1/2, two independent fair coins: 204 and 1,479).
        * ``threshold_scale`` (default 1 = as derived; accepted in
          :data:`THRESHOLD_SCALE_RANGE` = [1e-100, 1e100]) multiplies the slack's terms: with
          the betting boundary ``s_k N_j + c_k L + const`` (not the ``a_k D_j`` part, so the
          query's sensitivity becomes ``2 + (threshold_scale - 1) s_k``), otherwise the whole
          slack.

    ``epsilon=math.inf``: both mechanisms lose their noise (exact argmin, exact threshold
    comparison: a window regret must exceed its slack, a tie does not fire); the claim is "not
    private". Otherwise the claim is the basic composition of
    the selections' and the detector's guarantees (docs/algorithms.md, Calibration).

    Window grids (``window_grid=``):
        * ``"dyadic"`` (default; a deviation from the paper, E-ARS-9): windows start at the last
          ``DYADIC_STARTS`` = 8 multiples of ``2^k`` (local time) for every level k, i.e. at most
          8 (log2 T + 1) queries per round with O(N log T) memory; any window inside the epoch
          contains a tested window of more than 3/4 of its length. Makes T = 10^5 practical.
        * ``"all"``: every window ``w = 0..t - t_i`` as in the paper; O(N t) time per round and
          O(N T) memory per run (refused above 1 GiB).

    Deviations: the default betting boundary (a data-dependent slack inside the queries, paid
    for by their sensitivity, 2 at the default) instead of the paper's n-only Reg; one
    AboveThreshold query per round, the maximum of the window queries, instead of
    one query per window with fresh noise each (erratum E-ARS-9): the maximum of 2-sensitive queries
    is 2-sensitive, so privacy is unchanged and the detector answers k = T queries instead of
    ~T^2/2, which lowers alpha; argmin, not argmax (E-ARS-1); play before receiving the loss and run
    all T rounds (E-ARS-8); a new epoch's first expert is uniform (E-ARS-2); losses are clipped to
    [0, 1] before use; the dyadic grid (above) is the default.

    Randomness: the detector's query and threshold noise come from the agent's main stream
    every round; a selection's noise (and an epoch's uniform first expert) comes from a second
    per-run stream that is read only when that run selects, about log2(T) times per epoch
    (:class:`_SelectionStreams`). The noise laws, and so the privacy claim, are those of the
    mechanisms; only which uniforms feed them differs from drawing a selection every round.

    Per-round cost: O(N log T) (dyadic) or O(N t) (all) time per run. With the JIT (the
    ``fast`` extra) the dyadic query (betting or Bernstein: one kernel) and the snapshot pushes
    run as compiled kernels of ``+ - *``, min and max only (bit-exact with the numpy path,
    ``DP_EXPERTS_NO_JIT=1``). Agent alone (``act`` on pre-drawn Bernoulli losses, N = 10,
    T = 10^4, B = 16, epsilon 1, ``play_block`` of 1,000 rounds, compiled): betting ~4.9 us,
    Bernstein ~4.5 us per run-round (second repetition, load 8.7); with the env in the loop
    (epsilon 8; docs/algorithms.md, Calibration) 8.3 vs 6.1 us; the numpy path ~15 us
    (benchmarks/README.md, measured with the Bernstein query).

    Floating point: the computed query can move by slightly more than D under one replaced
    loss vector (rounding in the cumulative sums and in the ``(1 - a_k)/threshold_scale``
    round trip): measured 5.7e-14 above D = 2 at threshold_scale 1, 1.0e-12 at 10, 7e-11
    (1.3e-12 relative) at 100 (T = 200, N = 3). ``noise="grid"`` covers it:
    ``effective_sensitivity`` adds 2^-20 ~ 9.5e-7, far above this excess at the settings run
    here (threshold_scale <= 3, T <= 10^5). ``noise="fast"`` does not: its noise is calibrated to
    exactly D, so its certificate holds for the ideal mechanism in exact arithmetic (where the
    move is at most D), as for every ``fast`` claim (the float sampler is not exactly private
    anyway; docs/privacy.md, Noise backends).

    Attributes (the parameters actually used):
        selection_scale, query_sensitivity, threshold_noise_scale, query_noise_scale, alpha,
        beta, term_beta (each tail term's level), boundary, union_size (S),
        queries_per_instance (k), windows_per_round, window_starts (U), detector (the
        AboveThreshold), restarts (B,) (restarts so far per run; the evaluation writes the final
        count into the grid rows as ``restarts``), epoch_start (B,) (the global round of the
        current epoch's local round 1).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "exposed": {"threshold_scale": 1e-3},
        "variants": [{"selector": "em"}],
    }

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        selector: str = "rnm",
        threshold_scale: float = 1.0,
        window_grid: str = "dyadic",
        boundary: str = "betting",
        max_restarts: int | None = None,
        beta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(
            n_experts,
            horizon,
            epsilon=epsilon,
            delta=delta,
            mode=mode,
            tuning=tuning,
            noise=noise,
            num_envs=num_envs,
            seed=seed,
        )
        n, t_max = self.n_experts, self.horizon
        self.selector = check_choice("selector", selector, SELECTORS)
        self.window_grid = check_choice("window_grid", window_grid, WINDOW_GRIDS)
        self.boundary = check_choice("boundary", boundary, BOUNDARIES)
        # The paper tuning keeps Theorem 3.1's n-only Reg; the boundary applies to calibrated.
        # _bernstein: the query reads a second per-window statistic (the Bernstein boundary's
        # second moment, or the betting boundary's negative part; same storage and path).
        self._betting = self.boundary == "betting" and self.tuning == "calibrated"
        self._bernstein = self.boundary in ("bernstein", "betting") and self.tuning == "calibrated"
        # The betting query's stored slopes are (1 - a_k) / threshold_scale: a subnormal scale
        # overflows them to inf and the query to nan, which would silently never fire.
        self.threshold_scale = check_float("threshold_scale", threshold_scale)
        low, high = THRESHOLD_SCALE_RANGE
        if not low <= self.threshold_scale <= high:
            raise ValueError(
                f"threshold_scale must be in [{low:g}, {high:g}] (smaller values overflow the "
                f"betting query's slopes), got {self.threshold_scale!r}"
            )
        self.max_restarts = (
            None if max_restarts is None else check_int("max_restarts", max_restarts, minimum=0)
        )
        if beta is None and self.tuning == "paper":
            # Theorem 3.6's beta = 1/T; T = 1 would give log(1/beta) = 0, so cap it at 1/2.
            self.beta = min(1.0 / t_max, 0.5)
        elif beta is None:
            self.beta = DEFAULT_FALSE_ALARM
        else:
            # beta > 1/2 would turn the threshold tail sr ln(1/(2 beta)) negative
            self.beta = check_float(
                "beta", beta, minimum=0.0, maximum=0.5, min_inclusive=False, max_inclusive=True
            )
        if self.window_grid == "all":
            need = self.num_envs * (t_max + 1) * (2 * n + 1 if self._bernstein else n + 1) * 8
            if need > _ALL_GRID_MAX_BYTES:
                raise ValueError(
                    f"window_grid='all' needs {need / 2**30:.1f} GiB of prefix sums for "
                    f"num_envs={self.num_envs}, horizon={t_max}, n_experts={n} (limit 1 GiB); "
                    "use window_grid='dyadic'"
                )

        # --- privacy parameters (the only ones that matter for the claim)
        # Erratum E-ARS-6: a replaced loss vector moves each window difference D_j by <= 2
        # (paper: 1). The Bernstein slack is threshold_scale times a kappa-Lipschitz function of
        # the window's second moment V_j (kappa = the largest slope psi(lambda)/lambda of
        # bernstein_boundary); the replaced term x -> x' moves D_j by d = |x' - x| and V_j by
        # |x'^2 - x^2| = d |x' + x| <= d (2 - d), so each query, and their maximum, moves by at
        # most max over d in [0, 2] of d (1 + c (2 - d)), c = threshold_scale kappa
        # (bernstein_query_sensitivity; docs/algorithms.md, Calibration).
        # Paper mode keeps the paper's D = 1 (its accounting, uncertified, E-ARS-6).
        # The betting boundary's queries are sums of per-round terms whose range is 2 at
        # threshold_scale = 1 (betting_query_sensitivity; docs/algorithms.md, Calibration).
        slope = float(_bernstein_slopes().max()) if self._bernstein else 0.0
        # The queries' true sensitivity in both modes; paper mode's noise assumes 1 (uncertified)
        if self._betting:
            self._true_sensitivity = betting_query_sensitivity(self.threshold_scale)
        else:
            self._true_sensitivity = bernstein_query_sensitivity(self.threshold_scale * slope)
        self.query_sensitivity = self._true_sensitivity if self.mode == "strict" else 1.0
        (
            self.selection_epsilon,
            self.detector_epsilon,
            self.selection_scale,
            self.threshold_noise_scale,
            self.query_noise_scale,
        ) = self._noise_parameters(self.epsilon)
        # Per-run values after set_run_epsilons: selection and detector epsilons (B,), and the
        # slack's epsilon-dependent terms (B, 1); None while every run plays self.epsilon.
        self._runs: dict[str, np.ndarray] | None = None

        # --- the query grid
        self._levels = max(1, math.ceil(math.log2(t_max)) + 1) if t_max > 1 else 1
        self._pow2 = 2 ** np.arange(self._levels, dtype=np.int64)
        self._dedup_grid()
        self.queries_per_instance = t_max
        if self.window_grid == "dyadic":
            self.windows_per_round = self._levels * DYADIC_STARTS
        else:
            self.windows_per_round = t_max

        # Each tail term of the calibrated slack at level term_beta: beta / 4 at finite epsilon
        # for the boundary, query-noise and threshold-noise tails (union <= 3 beta / 4 <= beta;
        # the selection-noise allowance c0 is computed at this level too, but is a heuristic
        # allowance, not a tail bound of the argument); at epsilon = inf only the boundary is
        # non-zero and takes beta.
        finite = math.isfinite(self.epsilon)
        self.term_beta = self.beta / 4.0 if self.tuning == "calibrated" and finite else self.beta
        # Window starts one epoch may test at a length where a window can fire at all (the
        # union of the time-uniform boundary; see _count_window_starts).
        self.window_starts = self._count_window_starts()
        # Bernstein, dyadic grid: how many lambdas each stored start column uses.
        self._col_lambdas = (
            self._level_lambdas()[self._stored_level]
            if self._bernstein and self.window_grid == "dyadic"
            else None
        )
        self._exact_detector = math.isinf(self.detector_epsilon)

        # --- thresholds (public constants)
        self._set_thresholds()
        self.reset(seed)

    def _dedup_grid(self) -> None:
        """Which (level, slot) window starts get their sums stored and queried.

        Level k's ring slot ``c % DYADIC_STARTS`` holds the start ``u = c 2^k`` (local time), so
        an even slot holds a multiple of ``2^(k+1)``, which level k+1 also holds (its ring spans
        twice the time) with the same snapshot. Below the top level only the odd slots are new;
        querying them plus the whole top level covers the same windows with the same values,
        about half of ``levels * DYADIC_STARTS``.
        """
        top, half = self._levels - 1, DYADIC_STARTS // 2
        index = np.full((self._levels, DYADIC_STARTS), -1, dtype=np.int64)
        index[:top, 1::2] = np.arange(top * half).reshape(top, half)
        index[top] = top * half + np.arange(DYADIC_STARTS)
        self._store_index = index  # (L, m) -> column of the stored sums, -1 = not stored
        self._stored_level, self._stored_slot = np.nonzero(index >= 0)  # row-major = columns
        self._stored = top * half + DYADIC_STARTS

    # ----------------------------------------------------------------- thresholds
    def _noise_parameters(self, epsilon: float) -> tuple[float, float, float, float, float]:
        """Selection and detector epsilons, selection scale, threshold and query noise scales."""
        selection_epsilon = epsilon / 2.0
        detector_epsilon = epsilon / 2.0
        d_eff = self.noise.effective_sensitivity(self.query_sensitivity, dim=1)
        return (
            selection_epsilon,
            detector_epsilon,
            selection_scale(self.selector, selection_epsilon, self.noise),
            2.0 * d_eff / detector_epsilon,
            4.0 * d_eff / detector_epsilon,
        )

    def _level_lambdas(self) -> np.ndarray:
        """K_v: how many of :data:`BERNSTEIN_LAMBDAS` (largest first) a level-v start uses.

        A dyadic start of level v < top is tested at lengths up to ``n_max = DYADIC_STARTS 2^v``
        only (see :meth:`_count_window_starts`), so its second moment is at most that, and the
        small lambdas (optimal only for larger V) add to the union without lowering its
        boundary: it keeps the lambdas ``>= sqrt(L / n_max)``, ``L = ln(N T K / beta')`` (a
        public reference level; the optimum ``sqrt(2 L / V)`` at ``V = n_max``, one grid step
        below), at least one. The top level (the epoch origin, tested at every length) keeps
        all K. Which lambdas a start uses is public, so the union stays valid.
        """
        lam = np.array(BERNSTEIN_LAMBDAS)
        top = self._levels - 1
        ref = math.log(self.n_experts * self.horizon * len(lam) / self.term_beta)
        n_max = DYADIC_STARTS * 2.0 ** np.arange(self._levels)
        counts = np.array([max(1, int(np.sum(lam >= math.sqrt(ref / m)))) for m in n_max])
        counts[top] = len(lam)
        return counts

    def _union_size(self, v0: int) -> int:
        """Starts (times lambdas, Bernstein) of the dyadic levels >= ``v0`` in one epoch."""
        t_max, top = self.horizon, self._levels - 1
        per_level = [
            -(-t_max // 2**v) - (-(-t_max // 2 ** (v + 1)) if v < top else 0)
            for v in range(self._levels)
        ]
        weights = self._level_lambdas() if self._bernstein else np.ones(self._levels, int)
        return int(sum(per_level[v] * int(weights[v]) for v in range(v0, self._levels)))

    def _count_window_starts(self) -> int:
        """U: the window starts an epoch may test at a length where a window can fire.

        A window of n rounds has regret at most n and fires (on the detector's good noise
        event, at ``threshold_scale >= 1``) only if its regret exceeds ``b(n) + 1``, so lengths
        with ``n <= b(n) + 1`` never fire, and a start tested only at such lengths needs no
        share of beta. In the dyadic grid a start u whose largest power-of-two divisor is
        ``2^v`` (v below the top level) is tested at lengths up to and including
        ``DYADIC_STARTS 2^v``: the query of round ``t = u + DYADIC_STARTS 2^v`` runs before that
        round's snapshot evicts u from level v's ring (the epoch origin stays at the top level).
        With ``n_min`` the least length that can fire, only the ``ceil(T / 2^v0)`` multiples of
        ``2^v0``, ``v0 = ceil(log2(n_min / DYADIC_STARTS))`` (the excluded levels have
        ``DYADIC_STARTS 2^v < n_min``), count (``self.lowest_level`` = v0). ``n_min`` depends on
        U through b; the largest self-consistent v0 is taken, U = T (every local time) the
        fallback when none is, and always at ``threshold_scale < 1`` (the step above then
        fails). The paper tuning and the "all" grid count every local time. Sets
        ``self.union_size``: the events of the union (per expert): U, or with the Bernstein
        boundary the sum over the counted starts of the lambdas each uses
        (:meth:`_level_lambdas`; the "all" grid: U K).
        """
        t_max = self.horizon
        self.lowest_level = 0
        if self.tuning == "paper" or self.window_grid == "all":
            self.union_size = t_max * (len(BERNSTEIN_LAMBDAS) if self._bernstein else 1)
            return t_max

        def first_firing(v0: int) -> int | None:
            n = np.arange(1, t_max + 1, dtype=np.float64)
            union = self._union_size(v0)
            if self._betting:
                # On the noise event a window fires only if a_k D - s_k N - c_k L > 1 for some
                # k (threshold_scale >= 1, c0, alpha >= 0), and D <= n - 2 N (sum |X_s| <= n),
                # so a_k D - s_k N <= a_k n: it fires only if a_k n - c_k L > 1 for some k
                # (all lambdas: the lowest of all starts, conservative here).
                c, a, _ = betting_coefficients()
                level = math.log(self.n_experts * union / self.term_beta)
                reach = (a[:, None] * n[None, :] - (c * level)[:, None]).max(axis=0)
                ok = np.flatnonzero(reach > 1.0)
                return int(ok[0]) + 1 if len(ok) else None
            if self._bernstein:
                # A window of n rounds has D_j <= sum |X_s| <= sqrt(n V) (Cauchy-Schwarz) and
                # sqrt(n V) - b(V) increases in V on [0, n] (its slope is >= 1/2 - 0.39), so it
                # fires only if n > b(n) + 1, as for the n-only boundary. The full lambda grid
                # gives the lowest boundary of any start (a lower bound: conservative here).
                b = bernstein_boundary(n, math.log(self.n_experts * union / self.term_beta))
            else:
                c1 = 2.0 * math.log(self.n_experts * union / self.term_beta)
                b = np.sqrt((n + MIXTURE_RHO) * (np.log((n + MIXTURE_RHO) / MIXTURE_RHO) + c1))
            ok = np.flatnonzero(n > b + 1.0)
            return int(ok[0]) + 1 if len(ok) else None

        def lowest_level(n_min: int) -> int:
            # The least v whose starts reach length n_min: DYADIC_STARTS 2^v >= n_min (a start
            # of level v is tested up to and including DYADIC_STARTS 2^v rounds).
            return max(0, math.ceil(math.log2(n_min / DYADIC_STARTS)))

        self.union_size = self._union_size(0)
        self.lowest_level = 0
        if self.threshold_scale < 1.0:
            # Below 1 the slack s (b + c0 + alpha + 1) may undercut b(n) + 1 (and the noise
            # tails), so the "fires only above b(n) + 1" step fails: count every start.
            return t_max
        # The largest self-consistent v0 (the smallest union): with the starts of the levels
        # >= v0 in the union, the least firing length n_min must exceed every tested length
        # of the levels below (DYADIC_STARTS 2^(v0 - 1) < n_min). Any such v0 is valid.
        for v1 in range(self._levels - 1, 0, -1):
            n1 = first_firing(v1)
            if n1 is not None and lowest_level(n1) >= v1:
                self.union_size = self._union_size(v1)
                self.lowest_level = v1
                return -(-t_max // 2**v1)
        return t_max

    def _bernstein_level_log(self) -> float:
        """``ln(N union_size / beta')``: the union over experts, starts and their lambdas."""
        return math.log(self.n_experts * self.union_size / self.term_beta)

    def _set_thresholds(self) -> None:
        self.alpha, self._reg = self._thresholds(self.epsilon)

    def _thresholds(self, epsilon: float) -> tuple[float, tuple[float, float, float]]:
        """``alpha`` and ``Reg(w) = c0 + c1 sqrt(w + shift)`` as ``(c0, c1, shift)`` at epsilon."""
        n, t_max, beta = self.n_experts, self.horizon, self.beta
        k = self.queries_per_instance
        eps = epsilon
        sel_eps, det_eps, sel_scale, thr_scale, query_scale = self._noise_parameters(epsilon)
        log = math.log
        if self.tuning == "paper":
            eps1 = sel_eps if self.mode == "strict" else eps
            reg_const = 16.0 * log(n * t_max / beta) / eps1
            reg_coef = 9.0 * math.sqrt(log(t_max * n / beta))
            if self.mode == "strict":
                beta_svt = beta / t_max
                alpha = (8.0 * self.query_sensitivity * (log(k) + log(2.0 / beta_svt))) / det_eps
            else:
                alpha = 16.0 * (2.0 * log(t_max) + log(2.0 / beta)) / eps
            return alpha, (reg_const, reg_coef, 0.0)
        selections = max(1, int(math.log2(t_max)))  # selections one epoch can make
        beta = self.term_beta
        # Heuristic allowance for the learner's in-window pseudo-regret (not a tail bound).
        reg_const = 2.0 * sel_scale * log(n * selections / beta)
        alpha = query_scale * log(k / (2.0 * beta))
        alpha += thr_scale * log(1.0 / (2.0 * beta))
        # The time-uniform part (_deviation) is epsilon-free: c1 and shift carry its level
        # term (2 ln(N U / beta) and rho; Bernstein: ln(N U K / beta), no shift).
        if self._bernstein:
            return alpha, (reg_const, self._bernstein_level_log(), 0.0)
        return alpha, (reg_const, 2.0 * log(n * self.window_starts / beta), MIXTURE_RHO)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon; True when applied (False: nothing changed).

        Run b then selects, tests and restarts as an agent built with ``epsilon=epsilons[b]``
        and the same seed (its selection and detector noise, thresholds and slack, the same
        floats), so an evaluation can play this learner's epsilons as one batch.
        :attr:`privacy` then refuses to state one claim; build an agent at each epsilon to
        read its claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None or not math.isfinite(self.epsilon):
            # Built at epsilon = inf: exact detector and term_beta = beta; finite runs differ.
            return False
        found = {e: (self._noise_parameters(e), self._thresholds(e)) for e in dict.fromkeys(values)}
        self._run_epsilons = values
        self._runs = {
            "selection": np.array([found[e][0][0] for e in values]),
            "detector": np.array([found[e][0][1] for e in values]),
            "c0": np.array([found[e][1][1][0] for e in values])[:, None],
            "alpha": np.array([found[e][1][0] for e in values])[:, None],
        }
        self._slack_cache = None
        # A new episode from the same seeds: the detector's first threshold noise is drawn
        # again, now at each run's scale (as an agent built at that epsilon draws it).
        self.reset(list(self.rng.seeds))
        return True

    def _deviation(self, length: np.ndarray, second_moment: float = 1.0) -> np.ndarray:
        """The epsilon-free part of ``Reg(n - 1)`` for windows of ``length`` n rounds.

        ``tuning="paper"``: Theorem 3.1's ``9 sqrt((n - 1) log(TN/beta))``. Calibrated,
        ``boundary="normal-mixture"``: the time-uniform normal-mixture boundary
        ``sqrt((n + rho) (ln((n + rho)/rho) + 2 ln(N U/beta)))`` (level ``beta / (N U)`` per
        window start and expert). ``boundary="bernstein"``: :func:`bernstein_boundary` at
        ``V = second_moment * n`` (the detector itself uses each window's observed V).
        """
        _, c1, shift = self._reg
        n = np.asarray(length, dtype=np.float64)
        if self.tuning == "paper":
            return c1 * np.sqrt(n - 1.0 + shift)
        if self._bernstein:
            return bernstein_boundary(second_moment * n, c1)
        return np.sqrt((n + shift) * (np.log((n + shift) / shift) + c1))

    def slack(self, length: np.ndarray | int, second_moment: float = 1.0) -> np.ndarray:
        """The slack a window of ``length`` n rounds must exceed, as a window difference D.

        Normal mixture / paper tuning: ``threshold_scale * (Reg(n - 1) + alpha + 1)``.
        Bernstein: the same with ``Reg`` at the second moment ``V = second_moment n``.
        Betting (default): the D that ternary streams (differences in {-1, 0, 1}, so
        ``N = (V - D)/2``) need for some lambda's query to be positive
        (:meth:`_betting_slack`; the betting query's slack depends on the window's negative
        part N, not on n alone).

        ``second_moment`` (Bernstein and betting boundaries): the window's ``V / n``, the mean of
        ``(l_s(I_s) - l_s(j))^2``; 1 is the largest (any [0, 1] losses), 1/2 that of two
        independent fair coins.
        """
        second_moment = check_float("second_moment", second_moment, minimum=0.0, maximum=1.0)
        c0 = self._reg[0]
        if self._betting:
            return self._betting_slack(np.asarray(length, dtype=np.float64), second_moment)
        dev = self._deviation(np.asarray(length, dtype=np.float64), second_moment)
        return self.threshold_scale * (c0 + dev + self.alpha + 1.0)

    def _betting_slack(self, n: np.ndarray, second_moment: float) -> np.ndarray:
        """The window difference D the betting boundary needs at n rounds, V = second_moment n.

        For differences in {-1, 0, 1} (Bernoulli losses) the negative part is
        ``N = (V - D) / 2``, so the query ``a_k D - ts (s_k N + c_k L + const)`` is positive iff
        ``D > ts (s_k V / 2 + c_k L + const) / (a_k + ts s_k / 2)``; the least over lambdas.
        Other [0, 1] streams have ``N >= (V - D) / 2`` (``x^2 <= |x|``) and need more.
        """
        c, a, s = betting_coefficients()
        ts, const = self.threshold_scale, self._reg[0] + self.alpha + 1.0
        v = second_moment * n[..., None]
        need = ts * (s * v / 2.0 + c * self._reg[1] + const) / (a + ts * s / 2.0)
        return need.min(axis=-1)

    def detection_length(self, gap: float, second_moment: float = 1.0) -> int | None:
        """The shortest window a shift of ``gap`` can make fire in expectation, or None.

        The least n <= T with ``gap * n > slack(n)`` (the slack at this learner's epsilon, its
        noise terms included): after a shift that makes the played expert ``gap`` worse per
        round than the best one, a window of n post-shift rounds has expected regret
        ``gap * n``, so a segment shorter than this cannot be detected in expectation. None when
        no n <= T qualifies.
        """
        gap = check_float("gap", gap, minimum=0.0, min_inclusive=False)
        n = np.arange(1, self.horizon + 1, dtype=np.float64)
        ok = np.flatnonzero(gap * n > self.slack(n, second_moment))
        return int(ok[0]) + 1 if len(ok) else None

    def _slack_table(self, t: int) -> np.ndarray:
        """``slack(n)`` for n = 0..>=t (entry 0 unused), grown by doubling up to T.

        The slack depends on the window length only, so it is computed once per length, not
        for every window every round: the same floats as :meth:`slack`, elementwise.
        """
        table = getattr(self, "_slack_cache", None)
        if table is None or table.shape[-1] <= t:
            size = min(max(2 * (t + 1), 64), self.horizon + 1)
            if self._runs is None:
                table = np.zeros(size)
                table[1:] = self.slack(np.arange(1, size))
            else:
                # (B, size): slack's arithmetic with each run's c0 and alpha, elementwise.
                dev = self._deviation(np.arange(1, size, dtype=np.float64))
                c0_runs, alpha_runs = self._runs["c0"], self._runs["alpha"]
                table = np.zeros((self.num_envs, size))
                table[:, 1:] = self.threshold_scale * (c0_runs + dev + alpha_runs + 1.0)
                # Run b's row starts at b * size in the flat table (for one fancy index).
                self._slack_offsets = (np.arange(self.num_envs) * size)[:, None]
            self._slack_cache = table
        return table

    # ----------------------------------------------------------------- claim
    @property
    def declaration(self) -> Mechanism:
        """Per epoch: selections on disjoint windows + one sparse-vector detector; epochs disjoint.

        In paper mode the detector's noise is calibrated to sensitivity 1 while its queries are
        2-sensitive, and a restart round is read by two epochs (errata E-ARS-6, E-ARS-7): the
        declaration then states the paper's accounting, which the claim marks uncertified.
        """
        detector = self.detector
        epoch = Sequential(
            (
                Parallel(
                    selection(
                        self.selector,
                        self.n_experts,
                        selection_scale(self.selector, self.selection_epsilon, self.noise),
                        self.noise,
                    ),
                    "the disjoint windows of an epoch",
                ),
                SparseVector(
                    "shift queries (the learner's window loss minus an expert's, times a_k, "
                    "minus the slack; the betting boundary reads the window's negative part: "
                    "sensitivity max_k (2 a_k + threshold_scale s_k), 2 at threshold_scale 1)"
                    if self._betting and self.mode == "strict"
                    else "shift queries (the learner's window loss minus an expert's, minus the "
                    "slack; with the Bernstein boundary the slack reads the window's second "
                    "moment: sensitivity max_d d (1 + threshold_scale kappa (2 - d)))"
                    if self._bernstein and self.mode == "strict"
                    else "shift queries (the learner's window loss minus the best expert's, "
                    "minus the slack)",
                    sensitivity=self.noise.effective_sensitivity(detector.sensitivity, 1),
                    threshold_scale=float(np.min(detector.sigma)),
                    query_scale=2.0 * float(np.min(detector.sigma)),
                    positives=detector.max_tops,
                    delta=detector.delta,
                    # a threshold at the start, then each round one query and one fresh
                    # threshold (restart draws for every run: fixed consumption)
                    draws=2 * self.horizon - 1,
                ),
            ),
            what="selections + detector",
        )
        return Parallel(epoch, "data-disjoint epochs (a restart starts a new epoch)")

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP: eps/2 selections + eps/2 AboveThreshold, data-disjoint epochs."""
        self._check_one_epsilon()
        if self.mode == "paper":
            stated = account(self.declaration)
            # Noise for sensitivity 1 on queries of sensitivity D: each detector spends
            # D eps/2; a restart round meets two detectors and one selection (eps/2).
            true_d = self._true_sensitivity
            return self._claim(
                Guarantee(self.epsilon, 0.0, "paper: " + stated.accountant),
                certified=False,
                notes=f"erratum E-ARS-6: queries have sensitivity {true_d:g}, so the detector "
                f"spends {true_d:g}*eps/2, not eps/2; erratum E-ARS-7: the restart round is "
                "reused by the next epoch (its loss meets two detectors and one selection); "
                f"certified only up to {true_d + 0.5:g}*epsilon",
            )
        return self._declared_claim(
            source="Asi, Raman & Saha 2025, Alg. 2 with errata E-ARS-6, E-ARS-7"
        )

    # ----------------------------------------------------------------- state
    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self._window = np.zeros((b, n))
        self._expert = np.zeros(b, dtype=np.int64)
        self._cum = np.zeros((b, n + 1))  # running sums since round 1: experts, then learner
        # Bernstein boundary: running sums of (l_s(I_s) - l_s(j))^2 per expert j (else unused).
        self._cum_sq = np.zeros((b, n))
        self.epoch_start = np.ones(b, dtype=np.int64)
        self._run_index = np.arange(b)
        # Global round of each run's next possible selection (or epoch start); a lower bound
        # is enough (rounds before the earliest one skip the selection bookkeeping).
        self._next_event = np.ones(b, dtype=np.int64)
        self._next_min = 1
        self.restarts = np.zeros(b, dtype=np.int64)
        self._active = np.ones(b, dtype=bool) if self.max_restarts != 0 else np.zeros(b, bool)
        if self.window_grid == "dyadic":
            shape = (b, self._levels, DYADIC_STARTS)
            # Expert sums with the expert axis before the window axis, so the min over experts
            # is an elementwise minimum of rows (fast at large B) rather than a reduction over a
            # short trailing axis; the learner's sums apart. Values are those of self._cum.
            # Only the de-duplicated starts (_dedup_grid) keep sums; _snap_time and _snap_count
            # still describe every (level, slot) start.
            self._snap_experts = np.zeros((b, n, self._stored))
            self._snap_learner = np.zeros((b, self._stored))
            self._snap_sq = np.zeros((b, n, self._stored)) if self._bernstein else None
            self._snap_time = np.zeros(shape, dtype=np.int64)
            self._snap_count = np.zeros((b, self._levels), dtype=np.int64)
            # Per stored column: its snapshot's time and whether it holds one yet (what the
            # (level, slot) tables say, kept per column so a query reads them directly).
            self._col_time = np.zeros((b, self._stored), dtype=np.int64)
            self._col_empty = np.ones((b, self._stored), dtype=bool)
            self._diff_buf = np.zeros((b, n, self._stored))
            if self._bernstein:
                self._init_query_tables()
            self._reset_windows(
                np.ones(b, dtype=bool), self._cum, np.zeros(b, dtype=np.int64), self._cum_sq
            )
        else:
            self._prefix = np.zeros((b, self.horizon + 1, n + 1))
            self._prefix_sq = np.zeros((b, self.horizon + 1, n)) if self._bernstein else None
        if getattr(self, "_selection_of", None) is not self.rng:
            # New streams with a new main stream (a seeded reset); a reset(None) continues both.
            self._selection = _SelectionStreams(self.rng.seeds)
            self._selection_of = self.rng
        self.detector = AboveThreshold(
            epsilon=self.detector_epsilon if self._runs is None else self._runs["detector"],
            sensitivity=self.query_sensitivity,
            rng=self.rng,
            threshold=0.0,
            noise=self.noise,
        )

    def _init_query_tables(self) -> None:
        """Public pieces and buffers of the dyadic Bernstein query (:meth:`_bernstein_query`).

        ``level_log / lambda_k`` and the slopes are the floats :func:`bernstein_boundary`
        computes (Python scalars, the same division).
        """
        b, n, q = self.num_envs, self.n_experts, self._stored
        level_log = self._reg[1]
        if self._betting:
            # The floats betting_boundary computes: c_k L, s_k and (1 - a_k) / threshold_scale.
            c, a, s = (x.tolist() for x in betting_coefficients())
            self._lambda_offsets = np.array([ck * level_log for ck in c])
            self._lambda_slopes = np.array(s)
            self._lambda_dslopes = np.array([(1.0 - ak) / self.threshold_scale for ak in a])
        else:
            self._lambda_offsets = np.array([level_log / lam for lam in BERNSTEIN_LAMBDAS])
            self._lambda_slopes = np.array(_bernstein_slopes().tolist())
            self._lambda_dslopes = np.zeros(len(BERNSTEIN_LAMBDAS))
        counts = self._col_lambdas
        self._col_counts = np.ascontiguousarray(counts, dtype=np.int64)
        # Per lambda k, its offset on the columns that use it (k < K_u) and +inf on the others:
        # inf + s v = inf never lowers the min, and a used column adds the same two floats.
        lambdas = np.arange(len(BERNSTEIN_LAMBDAS))[:, None]
        self._column_offsets = np.where(
            lambdas < counts[None, :], self._lambda_offsets[:, None], np.inf
        )
        self._lambdas_used = int(counts.max())
        # Scratch (zeros, not empty: a state compared across paths holds no garbage).
        self._second_buf = np.zeros((b, n, q))
        self._bound_buf = np.zeros((b, n, q))
        self._term_buf = np.zeros((b, n, q))
        self._window_buf = np.zeros((b, n, q)) if self._betting else None
        self._dterm_buf = np.zeros((b, n, q)) if self._betting else None
        self._query_out = np.zeros(b)
        # The kernel's per-run constant (the float _query_const gives each run) and scale.
        const = np.asarray(self._query_const(), dtype=np.float64).reshape(-1)
        self._const_runs = np.broadcast_to(const, (b,)).copy()  # writable: one signature
        self._scale = float(self.threshold_scale)

    def _push_snapshots(self, tau: np.ndarray, mask: np.ndarray, t: int) -> None:
        """Record the running sums after global round ``t`` (local time ``tau``) as window starts.

        A start is kept at every level k with ``tau % 2^k == 0`` (runs in ``mask`` only).
        """
        if jit_enabled():
            _push_snapshots_kernel(
                tau,
                mask,
                t,
                self._pow2,
                self._store_index,
                self._cum,
                self._cum_sq,
                self._bernstein,
                self._snap_experts,
                self._snap_learner,
                self._snap_experts if self._snap_sq is None else self._snap_sq,
                self._col_time,
                self._col_empty,
                self._snap_time,
                self._snap_count,
            )
            return
        levels = mask[:, None] & (tau[:, None] % self._pow2[None, :] == 0)
        runs, lev = np.nonzero(levels)
        slot = self._snap_count[runs, lev] % DYADIC_STARTS
        col = self._store_index[lev, slot]
        keep = col >= 0
        runs_kept, col = runs[keep], col[keep]
        self._snap_experts[runs_kept, :, col] = self._cum[runs_kept, :-1]
        self._snap_learner[runs_kept, col] = self._cum[runs_kept, -1]
        if self._bernstein:
            self._snap_sq[runs_kept, :, col] = self._cum_sq[runs_kept]
        self._col_time[runs_kept, col] = t
        self._col_empty[runs_kept, col] = False
        self._snap_time[runs, lev, slot] = t
        self._snap_count[runs, lev] += 1

    # ----------------------------------------------------------------- detector
    def _window_regret(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(B, Q) window regrets and window lengths at global round ``t`` (invalid: -inf)."""
        n = self.n_experts
        if self.window_grid == "dyadic":
            # Same arithmetic as (cum - snapshot) per expert and for the learner, then the min
            # over experts: every value is the same float as in a (B, Q, N+1) difference tensor.
            # Columns: the de-duplicated starts of _dedup_grid (duplicates add no new window).
            diff = np.subtract(self._cum[:, :n, None], self._snap_experts, out=self._diff_buf)
            best = np.minimum.reduce(diff, axis=1)  # (B, Q)
            regret = self._cum[:, n, None] - self._snap_learner
            regret -= best
            length = t - self._col_time
            np.putmask(regret, self._col_empty, -np.inf)
            return regret, length
        starts = np.arange(self.horizon)  # u = 0..T-1; window [u+1, t]
        diff = self._cum[:, None, :] - self._prefix[:, : self.horizon, :]
        regret = diff[..., n] - diff[..., :n].min(axis=-1)
        valid = (starts[None, :] < t) & (starts[None, :] >= self.epoch_start[:, None] - 1)
        regret = np.where(valid, regret, -np.inf)
        return regret, np.broadcast_to(t - starts[None, :], regret.shape)

    def _bernstein_query(self, t: int) -> np.ndarray:
        """(B,) max over windows and experts of ``D_j - slack(V_j)`` (Bernstein boundary).

        ``D_j`` = the learner's window loss minus expert j's, ``V_j`` = the window's sum of
        ``(l_s(I_s) - l_s(j))^2``; the slack is ``threshold_scale (c0 + b(V_j) + alpha + 1)``
        with b = :func:`bernstein_boundary` (per run: c0 and alpha at each run's epsilon).
        """
        if self.window_grid == "dyadic":
            return self._bernstein_query_dyadic()
        return self._bernstein_query_reference(t)

    def _query_const(self) -> np.ndarray | float:
        """The slack's constant ``c0 + alpha + 1``: a float, or (B, 1, 1) per run."""
        if self._runs is None:
            return self._reg[0] + self.alpha + 1.0
        return (self._runs["c0"] + self._runs["alpha"] + 1.0)[:, :, None]

    def _bernstein_query_dyadic(self) -> np.ndarray:
        """The dyadic query of :meth:`_bernstein_query_reference`, the same floats, faster.

        Compiled (one pass, :func:`_bernstein_query_kernel`) when the JIT is enabled; else
        numpy in place with buffers, the lambdas a column does not use masked by +inf offsets,
        and the empty columns masked after the (exact) max over experts.
        """
        n = self.n_experts
        const = self._query_const()
        if jit_enabled():
            _bernstein_query_kernel(
                self._cum,
                self._cum_sq,
                self._snap_experts,
                self._snap_learner,
                self._snap_sq,
                self._col_empty,
                self._col_counts,
                self._lambda_offsets,
                self._lambda_slopes,
                self._lambda_dslopes,
                self._betting,
                self._const_runs,
                self._scale,
                self._query_out,
            )
            return self._query_out.copy()
        diff = np.subtract(self._cum[:, :n, None], self._snap_experts, out=self._diff_buf)
        v = np.subtract(self._cum_sq[:, :, None], self._snap_sq, out=self._second_buf)
        np.maximum(v, 0.0, out=v)
        learner = self._cum[:, n, None] - self._snap_learner  # (B, Q)
        window = None
        if self._betting:  # the boundary reads the window difference d too
            window = np.subtract(learner[:, None, :], diff, out=self._window_buf)
            dterm = self._dterm_buf
        bound = np.multiply(v, self._lambda_slopes[0], out=self._bound_buf)
        bound += self._lambda_offsets[0]  # a + s v (IEEE addition commutes)
        if window is not None:
            bound += np.multiply(window, self._lambda_dslopes[0], out=dterm)
        term = self._term_buf
        for k in range(1, self._lambdas_used):
            # offsets[k] on the columns using lambda k, +inf (a term that never wins) elsewhere
            np.multiply(v, self._lambda_slopes[k], out=term)
            term += self._column_offsets[k]
            if window is not None:
                term += np.multiply(window, self._lambda_dslopes[k], out=dterm)
            np.minimum(bound, term, out=bound)
        bound += const
        if self.threshold_scale != 1.0:  # 1.0 * x is x: skip the product at the default
            bound *= self.threshold_scale
        if window is None:
            query = np.subtract(learner[:, None, :], diff, out=diff)
        else:
            query = window
        query -= bound
        per_col = np.maximum.reduce(query, axis=1)  # (B, Q): max is exact in any order
        np.putmask(per_col, self._col_empty, -np.inf)
        return _max_reduce(per_col, axis=1)

    def _bernstein_query_reference(self, t: int) -> np.ndarray:
        """The query as first written: one (B, N, Q) expression (the "all" grid's path)."""
        n = self.n_experts
        if self.window_grid == "dyadic":
            experts = self._cum[:, :n, None] - self._snap_experts  # (B, N, Q)
            learner = self._cum[:, n, None] - self._snap_learner  # (B, Q)
            second = self._cum_sq[:, :, None] - self._snap_sq
            empty = self._col_empty
        else:
            starts = np.arange(self.horizon)
            prefix, prefix_sq = self._prefix[:, : self.horizon], self._prefix_sq[:, : self.horizon]
            experts = np.swapaxes(self._cum[:, None, :n] - prefix[..., :n], 1, 2)
            learner = self._cum[:, None, n] - prefix[..., n]
            second = np.swapaxes(self._cum_sq[:, None, :] - prefix_sq, 1, 2)
            empty = ~((starts[None, :] < t) & (starts[None, :] >= self.epoch_start[:, None] - 1))
        counts = None if self._col_lambdas is None else self._col_lambdas[None, None, :]
        if self._betting:
            bound = betting_boundary(
                np.maximum(second, 0.0),
                learner[:, None, :] - experts,
                self._reg[1],
                self.threshold_scale,
                counts,
            )
        else:
            bound = bernstein_boundary(np.maximum(second, 0.0), self._reg[1], counts)
        if self._runs is None:
            const = self._reg[0] + self.alpha + 1.0
        else:
            const = (self._runs["c0"] + self._runs["alpha"] + 1.0)[:, :, None]
        query = learner[:, None, :] - experts - self.threshold_scale * (bound + const)
        query = np.where(empty[:, None, :], -np.inf, query)
        return _max_reduce(query.reshape(self.num_envs, -1), axis=1)

    # ----------------------------------------------------------------- hooks
    def _learn(self, obs: np.ndarray) -> None:
        t = self.t  # the round just played (1-based)
        losses = clip_unit(obs)  # sensitivity bounds need losses in [0, 1]
        # The sums before this round: only a paper-mode restart (epoch starting at t) needs them.
        before = self._cum.copy() if self.mode == "paper" else self._cum
        before_sq = self._cum_sq.copy() if self.mode == "paper" else self._cum_sq
        played = losses[self._run_index, self.last_actions]
        self._cum[:, :-1] += losses
        self._cum[:, -1] += played
        if self._betting:
            # the negative part max(-X, 0) of X = l(I) - l(j) per expert j
            self._cum_sq += np.maximum(losses - played[:, None], 0.0)
        elif self._bernstein:
            self._cum_sq += (played[:, None] - losses) ** 2
        self._window += losses
        tau = t - self.epoch_start + 1

        # One AboveThreshold query per run: the largest window query (as sensitive as each).
        if self._bernstein:
            query = self._bernstein_query(t)
        else:
            regret, length = self._window_regret(t)
            table = self._slack_table(t)
            if table.ndim == 1:
                slack = table[np.maximum(length, 1)]
            else:  # per-run slack (set_run_epsilons): row b, column length, of the (B, size)
                slack = table.ravel()[self._slack_offsets + np.maximum(length, 1)]
            query = _max_reduce(regret - slack, axis=1)
        query = np.where(np.isfinite(query), query, -1e300)
        if self._exact_detector:
            # Without noise the detector compares exactly (query >= 0): a window regret equal
            # to its slack (slack(1) = 1 = the largest one-round regret at epsilon = inf under
            # tuning="paper") must not fire; it has to exceed it.
            query = np.nextafter(query, -np.inf)
        top = self.detector.test(query)
        fired = top & self._active
        if self.window_grid == "dyadic":
            self._push_snapshots(tau, ~fired, t)
        else:
            self._prefix[:, t] = self._cum
            if self._bernstein:
                self._prefix_sq[:, t] = self._cum_sq
        # Restart draws fresh threshold noise for every run each round (fixed consumption).
        self.detector.restart(fired)
        if fired.any():
            self._restart(fired, t, losses, before, before_sq)

    def _restart(
        self,
        fired: np.ndarray,
        t: int,
        losses: np.ndarray,
        before: np.ndarray,
        before_sq: np.ndarray,
    ) -> None:
        """New limited-updates instance for the runs in ``fired`` (the detector restarted)."""
        self._next_event[fired] = t + 1  # a new epoch: its first expert or selection is next
        self._next_min = t + 1
        self.restarts += fired
        if self.max_restarts is not None:
            self._active &= self.restarts < self.max_restarts
        if self.mode == "strict":
            # Erratum E-ARS-7: the new epoch starts at t + 1 and never sees l_t.
            self.epoch_start[fired] = t + 1
            self._window[fired] = 0.0
            if self.window_grid == "dyadic":
                self._reset_windows(fired, self._cum, np.full(self.num_envs, t), self._cum_sq)
        else:
            # Paper: the new epoch starts at t, so l_t is its local round 1.
            self.epoch_start[fired] = t
            self._window[fired] = losses[fired]
            if self.window_grid == "dyadic":
                self._reset_windows(fired, before, np.full(self.num_envs, t - 1), before_sq)
                self._push_snapshots(np.ones(self.num_envs, dtype=np.int64), fired, t)

    def _reset_windows(
        self,
        mask: np.ndarray,
        origin: np.ndarray,
        origin_time: np.ndarray,
        origin_sq: np.ndarray,
    ) -> None:
        """Dyadic grid: runs in ``mask`` keep one window start, ``origin`` at ``origin_time``."""
        self._snap_count[mask] = 1
        col = self._store_index[-1, 0]  # only the top level stores its slot 0
        self._snap_experts[mask, :, col] = origin[mask][:, :-1]
        self._snap_learner[mask, col] = origin[mask][:, -1]
        if self._bernstein:
            self._snap_sq[mask, :, col] = origin_sq[mask]
        self._snap_time[mask, :, 0] = origin_time[mask][:, None]
        self._col_empty[mask] = True
        self._col_empty[mask, col] = False
        self._col_time[mask, col] = origin_time[mask]

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        rnd = self.t + 1  # the round about to be played
        if rnd < self._next_min:  # no run starts an epoch or selects now
            return self._expert.copy()
        tau_next = rnd - self.epoch_start + 1  # local time of the round about to be played
        due = self._next_event <= rnd
        # The next local time that is 1 or a power of two >= 2, after tau_next.
        tau_due = tau_next[due]
        following = np.exp2(np.ceil(np.log2(tau_due + 1.0))).astype(np.int64)
        self._next_event[due] = self.epoch_start[due] + following - 1
        self._next_min = int(self._next_event.min())
        # Only the runs that start an epoch or select draw, from their own selection streams.
        first = np.flatnonzero(tau_next == 1)
        if len(first):
            self._expert[first] = self._selection.view(first).integers(self.n_experts)
        select = is_power_of_two(tau_next)
        runs = np.flatnonzero(select)
        if len(runs):
            if self._runs is None:
                self._expert[runs] = private_select(
                    self._selection.view(runs),
                    self._window[runs],
                    self.selector,
                    self.selection_epsilon,
                    self.noise,
                )
            else:
                select_runs = (
                    report_noisy_min_runs if self.selector == "rnm" else exponential_mechanism_runs
                )
                self._expert[runs] = select_runs(
                    self._window[runs],
                    sensitivity=1.0,
                    epsilons=self._runs["selection"][runs],
                    rng=self._selection.view(runs),
                    noise=self.noise,
                )
            self._window[runs] = 0.0
        return self._expert.copy()

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once: the same actions, state and draws.

        Compiled between selections where :func:`agents._svt_kernels.block_supported` (the
        default dyadic Bernstein/betting query, ``fast`` noise, the JIT on); else the hooks
        round by round (:func:`agents._kernels.hook_loop`).
        """
        from agents._svt_kernels import play_rounds

        return play_rounds(self, obs)
