"""svt-restart's tuning: the detector's boundaries, their sensitivities and the slack.

Functions of public quantities only (N, T, epsilon, beta, the settings), never of losses.
:class:`~agents.svt_restart.SVTRestart` mixes in :class:`SVTRestartTuning`; the derivations and
proofs are in docs/algorithms.md ("Calibration", "The derivations", svt-restart).
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
#: (lambda <= 1/2 keeps the Bernstein boundary's slope in V below 1/2)
BERNSTEIN_LAMBDAS = tuple(0.5 * 2.0 ** (-k / 2.0) for k in range(8))
#: window starts kept per dyadic level: the last DYADIC_STARTS multiples of 2^k
DYADIC_STARTS = 8
# The de-duplicated dyadic storage relies on ring slot parity = parity of u / 2^k.
assert DYADIC_STARTS % 2 == 0
#: calibrated tuning's per-epoch level beta
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

    ``V`` = ``second_moment``, the window's observed ``sum X_s^2``; with ``level_log = ln(K / a)``
    it holds at level ``a`` at every window length (docs/algorithms.md, "The empirical-Bernstein
    boundary"). Elementwise; concave, piecewise linear in V with slopes in (0, 0.39). ``counts``
    (broadcastable to V): use only the first ``counts`` lambdas (largest first).
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
    kappa-Lipschitz and ``c = threshold_scale kappa`` (proof: docs/algorithms.md, "Privacy with the
    Bernstein boundary").
    """
    c = check_float("c", c, minimum=0.0)
    return 2.0 if c <= 0.5 else 1.0 + c + 1.0 / (4.0 * c)


def betting_coefficients() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(c_k, a_k, s_k)`` of the betting boundary on :data:`BERNSTEIN_LAMBDAS`.

    ``c_k = 2 / ln((1 + lam)/(1 - lam))``, ``a_k = c_k ln(1 + lam)``, ``s_k = -c_k ln(1 - lam^2)``;
    ``2 a_k + s_k = 2`` exactly.
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

    ``N = sum max(-X_s, 0)`` is the window's negative part, ``D = sum X_s``,
    ``L = level_log = ln(K / a)``: time-uniform at level ``a`` (proof: docs/algorithms.md, "The
    betting boundary"). Elementwise; ``counts`` as in :func:`bernstein_boundary`.
    ``threshold_scale`` is not checked here (a hot path): callers keep it in
    :data:`~agents.svt_restart.THRESHOLD_SCALE_RANGE`, since a subnormal one overflows.
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
    """``max_k (2 + (threshold_scale - 1) s_k)``: the betting query's L1 sensitivity.

    2 at the default ``threshold_scale = 1`` (proof: docs/algorithms.md, "Privacy with the betting
    boundary").
    """
    ts = check_float("threshold_scale", threshold_scale, minimum=0.0, min_inclusive=False)
    _, _, s = betting_coefficients()
    if ts == 1.0:
        return 2.0
    extreme = float(s.max()) if ts > 1.0 else float(s.min())
    return 2.0 + (ts - 1.0) * extreme


class SVTRestartTuning:
    """The thresholds of :class:`~agents.svt_restart.SVTRestart` (mixed into it).

    Reads the learner's public settings and sets ``term_beta``, ``window_starts`` (U),
    ``union_size`` (S), ``lowest_level``, ``alpha`` and the slack's constants.
    """

    def _calibrate(self) -> None:
        """Set the tail levels, the union over window starts and the thresholds.

        Calibrated at finite epsilon, each of the three tail terms holds at
        ``term_beta = beta / 4``; otherwise ``term_beta = beta``.
        """
        finite = math.isfinite(self.epsilon)
        self.term_beta = self.beta / 4.0 if self.tuning == "calibrated" and finite else self.beta
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

        The lambdas ``>= sqrt(L / (DYADIC_STARTS 2^v))``, at least one; the top level keeps all
        (docs/algorithms.md, "The empirical-Bernstein boundary"). Public, so the union stays valid.
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

        Also sets ``self.lowest_level`` (v0: only multiples of ``2^v0`` count) and
        ``self.union_size`` (S, the union's events per expert; with the Bernstein boundary the sum
        of each counted start's lambdas). The paper tuning, the "all" grid and
        ``threshold_scale < 1`` count every local time (U = T). Derivation: docs/algorithms.md, "The
        boundary".
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
                # Fires only if a_k n - c_k L > 1 for some k (D <= n - 2 N); all k: conservative.
                c, a, _ = betting_coefficients()
                level = math.log(self.n_experts * union / self.term_beta)
                reach = (a[:, None] * n[None, :] - (c * level)[:, None]).max(axis=0)
                ok = np.flatnonzero(reach > 1.0)
                return int(ok[0]) + 1 if len(ok) else None
            if self._bernstein:
                # Fires only if n > b(n) + 1 (D <= sqrt(n V)); the full grid is conservative.
                b = bernstein_boundary(n, math.log(self.n_experts * union / self.term_beta))
            else:
                c1 = 2.0 * math.log(self.n_experts * union / self.term_beta)
                b = np.sqrt((n + MIXTURE_RHO) * (np.log((n + MIXTURE_RHO) / MIXTURE_RHO) + c1))
            ok = np.flatnonzero(n > b + 1.0)
            return int(ok[0]) + 1 if len(ok) else None

        def lowest_level(n_min: int) -> int:
            # Level v's starts are tested up to and including DYADIC_STARTS 2^v rounds.
            return max(0, math.ceil(math.log2(n_min / DYADIC_STARTS)))

        self.union_size = self._union_size(0)
        self.lowest_level = 0
        if self.threshold_scale < 1.0:
            # The slack may undercut b(n) + 1: "fires only above b(n) + 1" fails.
            return t_max
        # The largest self-consistent v0 (the smallest union); any such v0 is valid.
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
        # c1 and shift carry _deviation's epsilon-free level term.
        if self._bernstein:
            return alpha, (reg_const, self._bernstein_level_log(), 0.0)
        return alpha, (reg_const, 2.0 * log(n * self.window_starts / beta), MIXTURE_RHO)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Run b plays as if built with ``epsilon=epsilons[b]`` (finite); True when applied.

        :attr:`privacy` then refuses to state one claim.
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
        # Redraw the first threshold noise at each run's scale, as that agent would.
        self.reset(list(self.rng.seeds))
        return True

    def _deviation(self, length: np.ndarray, second_moment: float = 1.0) -> np.ndarray:
        """The epsilon-free part of ``Reg(n - 1)`` for windows of ``length`` n rounds.

        Paper: Theorem 3.1's ``9 sqrt((n - 1) log(TN/beta))``; normal mixture:
        ``sqrt((n + rho) (ln((n + rho)/rho) + 2 ln(N U/beta)))``; Bernstein:
        :func:`bernstein_boundary` at ``V = second_moment * n``.
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

        Normal mixture / paper: ``threshold_scale * (Reg(n - 1) + alpha + 1)``; Bernstein: the same
        at ``V = second_moment n``; betting (default): :meth:`_betting_slack`. ``second_moment``:
        the window's ``V / n`` in [0, 1] (1 the worst case, 1/2 two independent fair coins).
        """
        second_moment = check_float("second_moment", second_moment, minimum=0.0, maximum=1.0)
        c0 = self._reg[0]
        if self._betting:
            return self._betting_slack(np.asarray(length, dtype=np.float64), second_moment)
        dev = self._deviation(np.asarray(length, dtype=np.float64), second_moment)
        return self.threshold_scale * (c0 + dev + self.alpha + 1.0)

    def _betting_slack(self, n: np.ndarray, second_moment: float) -> np.ndarray:
        """The D the betting boundary needs at n rounds, ``V = second_moment n``.

        Exact for differences in {-1, 0, 1} (``N = (V - D) / 2``); other streams need more.
        """
        c, a, s = betting_coefficients()
        ts, const = self.threshold_scale, self._reg[0] + self.alpha + 1.0
        v = second_moment * n[..., None]
        need = ts * (s * v / 2.0 + c * self._reg[1] + const) / (a + ts * s / 2.0)
        return need.min(axis=-1)

    def detection_length(self, gap: float, second_moment: float = 1.0) -> int | None:
        """The shortest window a shift of ``gap`` can make fire in expectation, or None.

        The least n <= T with ``gap * n > slack(n)`` at this learner's epsilon; None when none.
        """
        gap = check_float("gap", gap, minimum=0.0, min_inclusive=False)
        n = np.arange(1, self.horizon + 1, dtype=np.float64)
        ok = np.flatnonzero(gap * n > self.slack(n, second_moment))
        return int(ok[0]) + 1 if len(ok) else None

    def _slack_table(self, t: int) -> np.ndarray:
        """``slack(n)`` for n = 0..>=t (entry 0 unused), grown by doubling; as :meth:`slack`."""
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
