"""svt-restart's tuning: the detector's boundaries, their sensitivities and the slack.

Everything here is a function of public quantities (N, T, epsilon, beta, the settings), never of
losses: the betting and empirical-Bernstein boundaries with the L1 sensitivity of the queries
that read them, the union over window starts (U) and lambdas (S), and the calibrated or paper
slack a window must exceed. :class:`~agents.svt_restart.SVTRestart` mixes in
:class:`SVTRestartTuning`; the derivations are in docs/algorithms.md (Calibration, svt-restart).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp_experts_env._validation import check_float

__all__ = [
    "BERNSTEIN_LAMBDAS",
    "DEFAULT_FALSE_ALARM",
    "DYADIC_STARTS",
    "MIXTURE_RHO",
    "SVTRestartTuning",
    "bernstein_boundary",
    "bernstein_query_sensitivity",
    "bernstein_slopes",
    "betting_boundary",
    "betting_coefficients",
    "betting_query_sensitivity",
]

#: the lambda grid of the empirical-Bernstein and betting boundaries: 0.5 * 2^(-k/2), k = 0..7
#: (0.5 down to 0.044: the optimal lambda ~ sqrt(2 L / V) for second moments V from ~100 to
#: T = 10^4 at L ~ 15; lambda <= 1/2 keeps the Bernstein boundary's slope in V below 1/2)
BERNSTEIN_LAMBDAS = tuple(0.5 * 2.0 ** (-k / 2.0) for k in range(8))
#: window starts kept per dyadic level: the last DYADIC_STARTS multiples of 2^k
DYADIC_STARTS = 8
# The de-duplicated dyadic storage relies on ring slot parity = parity of u / 2^k.
assert DYADIC_STARTS % 2 == 0
#: calibrated tuning's per-epoch level beta (the three tail bounds of the slack each hold at
#: beta / 4 at finite epsilon; docs/algorithms.md says what is and is not proven)
DEFAULT_FALSE_ALARM = 0.05
#: rho of the normal-mixture boundary: where (in window length) it is tightest, roughly
MIXTURE_RHO = 16.0


def bernstein_slopes() -> np.ndarray:
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
    slopes = bernstein_slopes().tolist()
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
    checked here (a hot path); :class:`~agents.svt_restart.SVTRestart` accepts it only in
    :data:`~agents.svt_restart.THRESHOLD_SCALE_RANGE`, since a subnormal one overflows
    ``(1 - a_k)/threshold_scale``.
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


class SVTRestartTuning:
    """The thresholds of :class:`~agents.svt_restart.SVTRestart` (mixed into it).

    Reads the learner's public settings (``n_experts``, ``horizon``, ``tuning``, ``boundary``
    flags, ``threshold_scale``, ``beta``, the dyadic levels and the noise scales) and sets
    ``term_beta``, ``window_starts`` (U), ``union_size`` (S), ``lowest_level``, ``alpha`` and
    the slack's constants; :meth:`slack` and :meth:`detection_length` read them back, and
    :meth:`set_run_epsilons` sets them per run.
    """

    def _calibrate(self) -> None:
        """Set the tail levels, the union over window starts and the thresholds.

        Each tail term of the calibrated slack holds at level ``term_beta``: beta / 4 at finite
        epsilon for the boundary, query-noise and threshold-noise tails (union <= 3 beta / 4
        <= beta; the selection-noise allowance c0 is computed at this level too, but is a
        heuristic allowance, not a tail bound); at epsilon = inf only the boundary is non-zero
        and takes beta.
        """
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
        self._set_thresholds()

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
