"""Limited updates restarted by a sparse-vector shift detector (Asi, Raman & Saha 2025, Alg. 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._svt_all_windows import AllWindowsQuery
from agents.base import PrivacyClaim, clip_unit
from agents.limited_updates import (
    SELECTORS,
    is_power_of_two,
    private_select,
    selection,
    selection_scale,
)
from agents.private import PrivateAgent, common_args
from agents.registry import register
from agents.selection_streams import SelectionStreams
from agents.svt_restart_query import bernstein_query_kernel, push_snapshots_kernel
from agents.svt_restart_tuning import (
    BERNSTEIN_LAMBDAS,
    DEFAULT_FALSE_ALARM,
    DYADIC_STARTS,
    MIXTURE_RHO,
    SVTRestartTuning,
    bernstein_boundary,
    bernstein_query_sensitivity,
    bernstein_slopes,
    betting_boundary,
    betting_coefficients,
    betting_query_sensitivity,
)
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import check_choice, check_float, check_int
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

# The tuning's public names stay importable from here (tests and docs import them so).
__all__ = [
    "SVTRestart",
    "WINDOW_GRIDS",
    "BOUNDARIES",
    "DYADIC_STARTS",
    "DEFAULT_FALSE_ALARM",
    "MIXTURE_RHO",
    "THRESHOLD_SCALE_RANGE",
    "BERNSTEIN_LAMBDAS",
    "bernstein_boundary",
    "bernstein_query_sensitivity",
    "betting_boundary",
    "betting_coefficients",
    "betting_query_sensitivity",
]

WINDOW_GRIDS = ("dyadic", "all")
#: calibrated boundaries: the betting boundary in each window's negative part (the default),
#: the empirical-Bernstein one in its second moment, or the n-only normal mixture
BOUNDARIES = ("betting", "bernstein", "normal-mixture")
#: the accepted threshold_scale, [min, max]: far from float overflow in the betting query's
#: ``(1 - a_k) / threshold_scale`` and in the noise scales
THRESHOLD_SCALE_RANGE = (1e-100, 1e100)
#: refuse window_grid="all" when its prefix-sum history would exceed this many bytes
_ALL_GRID_MAX_BYTES = 1 << 30
# ndarray.max without its Python wrapper layers (the same values).
_max_reduce = np.maximum.reduce


@register(
    "svt-restart",
    private=True,
    summary="limited updates + sparse-vector restarts on detected shifts (ARS Algorithm 2)",
)
class SVTRestart(SVTRestartTuning, PrivateAgent):
    """Limited updates (eps/2) restarted whenever AboveThreshold (eps/2) detects window regret.

    Source: Asi, Raman & Saha 2025, "Tracking the Best Expert Privately", Section 3.2 (Algorithm 2,
    Lemmas 3.4-3.5, Theorem 3.6). For shifting-stochastic losses.

    An epoch runs a fresh :class:`~agents.limited_updates.LimitedUpdates` and a fresh
    AboveThreshold, asked once per round the largest window regret minus its slack
    (:mod:`agents.svt_restart_tuning`); when it fires both restart. Claim: pure epsilon-DP against
    adaptive adversaries, basic composition of the selections and the detector (query sensitivity D,
    2 at the default, E-ARS-6) over data-disjoint epochs; ``epsilon=inf`` compares exactly, not
    private. Deviations: one query per round (E-ARS-9); argmin (E-ARS-1); play before the loss
    (E-ARS-8); uniform first expert (E-ARS-2); epochs at ``t + 1`` (E-ARS-7); clipped losses; the
    calibrated boundaries (docs/algorithms.md, "Calibration").

    Args:
        n_experts: N (also ``horizon``, ``epsilon``, ``delta``, ``noise``, ``num_envs``, ``seed``).
        mode: ``"strict"`` or ``"paper"`` (noise for D = 1, epoch at t; uncertified).
        tuning: ``"calibrated"`` (default) or ``"paper"`` (Theorem 3.1 constants, beta = 1/T).
        selector: ``"rnm"`` (report-noisy-min) or ``"em"`` (exponential mechanism).
        threshold_scale: multiplies the slack; in :data:`THRESHOLD_SCALE_RANGE`.
        window_grid: ``"dyadic"`` (default: the last :data:`DYADIC_STARTS` multiples of 2^k per
            level) or ``"all"`` (every start, refused above 1 GiB).
        boundary: one of :data:`BOUNDARIES` (calibrated tuning only).
        max_restarts: cap on restarts; then the last epoch goes on without a detector (E-ARS-10).
        beta: the per-epoch false-alarm level, in (0, 1/2] (default 0.05; paper: 1/T).

    Attributes:
        restarts: (B,) restarts so far (also ``epoch_start`` (B,), ``detector``, the noise scales).
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
        super().__init__(n_experts, horizon, **common_args(locals()))
        self._check_settings(selector, window_grid, boundary, threshold_scale, max_restarts)
        self.beta = self._check_beta(beta)
        self._check_memory()
        self._set_privacy_parameters()
        self._set_query_grid()
        self._calibrate()  # SVTRestartTuning: tail levels, union, thresholds (public only)
        self.reset(seed)

    def _check_settings(
        self,
        selector: str,
        window_grid: str,
        boundary: str,
        threshold_scale: float,
        max_restarts: int | None,
    ) -> None:
        """Validate and store the choices; derive which window statistic the query reads."""
        self.selector = check_choice("selector", selector, SELECTORS)
        self.window_grid = check_choice("window_grid", window_grid, WINDOW_GRIDS)
        self.boundary = check_choice("boundary", boundary, BOUNDARIES)
        # _bernstein: the query reads a second per-window statistic (V, or betting's N).
        self._betting = self.boundary == "betting" and self.tuning == "calibrated"
        self._bernstein = self.boundary in ("bernstein", "betting") and self.tuning == "calibrated"
        # A subnormal scale overflows (1 - a_k) / threshold_scale: a detector never firing.
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

    def _check_beta(self, beta: float | None) -> float:
        """The per-epoch false-alarm level: ``beta`` checked, or the tuning's default."""
        if beta is None and self.tuning == "paper":
            # Theorem 3.6's beta = 1/T; T = 1 would give log(1/beta) = 0, so cap it at 1/2.
            return min(1.0 / self.horizon, 0.5)
        if beta is None:
            return DEFAULT_FALSE_ALARM
        # beta > 1/2 would turn the threshold tail sr ln(1/(2 beta)) negative
        return check_float(
            "beta", beta, minimum=0.0, maximum=0.5, min_inclusive=False, max_inclusive=True
        )

    def _check_memory(self) -> None:
        """Refuse ``window_grid="all"`` when its prefix sums would exceed 1 GiB."""
        if self.window_grid != "all":
            return
        n, t_max = self.n_experts, self.horizon
        need = self.num_envs * (t_max + 1) * (2 * n + 1 if self._bernstein else n + 1) * 8
        if need > _ALL_GRID_MAX_BYTES:
            raise ValueError(
                f"window_grid='all' needs {need / 2**30:.1f} GiB of prefix sums for "
                f"num_envs={self.num_envs}, horizon={t_max}, n_experts={n} (limit 1 GiB); "
                "use window_grid='dyadic'"
            )

    def _set_privacy_parameters(self) -> None:
        """The query sensitivity and the noise scales: the only parameters the claim reads.

        Erratum E-ARS-6: :func:`betting_query_sensitivity` or :func:`bernstein_query_sensitivity` (2
        for the n-only boundary). Paper mode's noise assumes 1 (uncertified).
        """
        slope = float(bernstein_slopes().max()) if self._bernstein else 0.0
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
        # epsilon = inf: the detector compares exactly (a tie does not fire; see _learn).
        self._exact_detector = math.isinf(self.detector_epsilon)
        # Per-run values after set_run_epsilons; None while every run plays self.epsilon.
        self._runs: dict[str, np.ndarray] | None = None

    def _set_query_grid(self) -> None:
        """The dyadic levels, the stored window starts and the queries per round."""
        t_max = self.horizon
        self._levels = max(1, math.ceil(math.log2(t_max)) + 1) if t_max > 1 else 1
        self._pow2 = 2 ** np.arange(self._levels, dtype=np.int64)
        self._dedup_grid()
        self.queries_per_instance = t_max
        if self.window_grid == "dyadic":
            self.windows_per_round = self._levels * DYADIC_STARTS
        else:
            self.windows_per_round = t_max

    def _dedup_grid(self) -> None:
        """Which (level, slot) window starts get their sums stored and queried.

        An even slot of level k holds a start level k+1 also holds (same snapshot), so below the top
        level only the odd slots are stored: the same windows with the same values.
        """
        top, half = self._levels - 1, DYADIC_STARTS // 2
        index = np.full((self._levels, DYADIC_STARTS), -1, dtype=np.int64)
        index[:top, 1::2] = np.arange(top * half).reshape(top, half)
        index[top] = top * half + np.arange(DYADIC_STARTS)
        self._store_index = index  # (L, m) -> column of the stored sums, -1 = not stored
        self._stored_level, self._stored_slot = np.nonzero(index >= 0)  # row-major = columns
        self._stored = top * half + DYADIC_STARTS

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

    @property
    def declaration(self) -> Mechanism:
        """Per epoch: selections on disjoint windows + one sparse-vector detector; epochs disjoint.

        Paper mode states the paper's accounting (errata E-ARS-6, E-ARS-7), marked uncertified.
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
                    # restart draws for every run each round: fixed consumption
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

    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self._window = np.zeros((b, n))
        self._expert = np.zeros(b, dtype=np.int64)
        self._cum = np.zeros((b, n + 1))  # running sums since round 1: experts, then learner
        # Bernstein boundary: running sums of (l_s(I_s) - l_s(j))^2 per expert j (else unused).
        self._cum_sq = np.zeros((b, n))
        self.epoch_start = np.ones(b, dtype=np.int64)
        self._run_index = np.arange(b)
        # Each run's next possible selection round; a lower bound is enough.
        self._next_event = np.ones(b, dtype=np.int64)
        self._next_min = 1
        self.restarts = np.zeros(b, dtype=np.int64)
        self._active = np.ones(b, dtype=bool) if self.max_restarts != 0 else np.zeros(b, bool)
        if self.window_grid == "dyadic":
            shape = (b, self._levels, DYADIC_STARTS)
            # Expert axis before the window axis: the min over experts is a min of rows. Only
            # the de-duplicated starts (_dedup_grid) keep sums.
            self._snap_experts = np.zeros((b, n, self._stored))
            self._snap_learner = np.zeros((b, self._stored))
            self._snap_sq = np.zeros((b, n, self._stored)) if self._bernstein else None
            self._snap_time = np.zeros(shape, dtype=np.int64)
            self._snap_count = np.zeros((b, self._levels), dtype=np.int64)
            # Per stored column: its snapshot's time and whether it holds one yet.
            self._col_time = np.zeros((b, self._stored), dtype=np.int64)
            self._col_empty = np.ones((b, self._stored), dtype=bool)
            self._diff_buf = np.zeros((b, n, self._stored))
            if self._bernstein:
                self._init_query_tables()
            self._reset_windows(
                np.ones(b, dtype=bool), self._cum, np.zeros(b, dtype=np.int64), self._cum_sq
            )
        else:
            # Round u's sums in column u: the start axis last (agents/_svt_all_windows.py).
            self._prefix = np.zeros((b, n + 1, self.horizon + 1))
            self._all_windows = AllWindowsQuery(b, n, self.horizon)
            self._prefix_sq = np.zeros((b, self.horizon + 1, n)) if self._bernstein else None
        if getattr(self, "_selection_of", None) is not self.rng:
            # New streams with a new main stream (a seeded reset); a reset(None) continues both.
            self._selection = SelectionStreams(self.rng.seeds)
            self._selection_of = self.rng
        self.detector = AboveThreshold(
            epsilon=self.detector_epsilon if self._runs is None else self._runs["detector"],
            sensitivity=self.query_sensitivity,
            rng=self.rng,
            threshold=0.0,
            noise=self.noise,
        )

    def _init_query_tables(self) -> None:
        """Public pieces and buffers of the dyadic query (:func:`bernstein_boundary`'s floats)."""
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
            self._lambda_slopes = np.array(bernstein_slopes().tolist())
            self._lambda_dslopes = np.zeros(len(BERNSTEIN_LAMBDAS))
        counts = self._col_lambdas
        self._col_counts = np.ascontiguousarray(counts, dtype=np.int64)
        # Per lambda k: its offset on the columns using it, +inf (never the min) elsewhere.
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
        """Record the sums after round ``t`` (local ``tau``) at each level k dividing ``tau``."""
        if jit_enabled():
            push_snapshots_kernel(
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

    def _window_regret(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(B, Q) window regrets and window lengths at global round ``t`` (invalid: -inf)."""
        n = self.n_experts
        if self.window_grid == "dyadic":
            # The same floats as a (B, Q, N+1) difference tensor, over _dedup_grid's columns.
            diff = np.subtract(self._cum[:, :n, None], self._snap_experts, out=self._diff_buf)
            best = np.minimum.reduce(diff, axis=1)  # (B, Q)
            regret = self._cum[:, n, None] - self._snap_learner
            regret -= best
            length = t - self._col_time
            np.putmask(regret, self._col_empty, -np.inf)
            return regret, length
        # The reference of the "all" grid's query (_learn uses _all_windows, the same floats).
        starts = np.arange(self.horizon)  # u = 0..T-1; window [u+1, t]
        # Only starts u < t can be valid: the later columns are -inf whatever their sums.
        m = min(t, self.horizon)
        diff = self._cum[:, None, :] - np.swapaxes(self._prefix[:, :, :m], 1, 2)
        regret = np.full((self.num_envs, self.horizon), -np.inf)
        regret[:, :m] = diff[..., n] - diff[..., :n].min(axis=-1)
        valid = (starts[None, :] < t) & (starts[None, :] >= self.epoch_start[:, None] - 1)
        regret = np.where(valid, regret, -np.inf)
        return regret, np.broadcast_to(t - starts[None, :], regret.shape)

    def _bernstein_query(self, t: int) -> np.ndarray:
        """(B,) max over windows and experts of ``D_j - slack(V_j)`` (Bernstein or betting).

        ``slack = threshold_scale (c0 + b(V_j) + alpha + 1)``, c0 and alpha per run.
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

        Compiled (:func:`~agents.svt_restart_query.bernstein_query_kernel`) when the JIT is on; else
        numpy in place, unused lambdas masked by +inf offsets.
        """
        n = self.n_experts
        const = self._query_const()
        if jit_enabled():
            bernstein_query_kernel(
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
        """The query as one (B, N, Q) expression: the "all" grid's path, the dyadic reference."""
        n = self.n_experts
        if self.window_grid == "dyadic":
            experts = self._cum[:, :n, None] - self._snap_experts  # (B, N, Q)
            learner = self._cum[:, n, None] - self._snap_learner  # (B, Q)
            second = self._cum_sq[:, :, None] - self._snap_sq
            empty = self._col_empty
        else:
            # The starts from the earliest run's epoch to t - 1 only (elementwise: the same
            # floats as over all T columns, whose others are empty); a run's earlier ones empty.
            lo = min(max(int(self.epoch_start.min()) - 1, 0), t - 1)
            starts = np.arange(lo, t)
            prefix = self._prefix[:, :, lo:t]  # (B, N+1, t - lo)
            prefix_sq = self._prefix_sq[:, lo:t]
            experts = self._cum[:, :n, None] - prefix[:, :n]
            learner = self._cum[:, n, None] - prefix[:, n]
            second = np.swapaxes(self._cum_sq[:, None, :] - prefix_sq, 1, 2)
            empty = starts[None, :] < self.epoch_start[:, None] - 1
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
        elif self.window_grid == "all":
            query = self._all_windows(
                self._cum, self._prefix, self.epoch_start, t, self._slack_table(t)
            )
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
            # Exact comparison: a regret equal to its slack (paper: slack(1) = 1) must not fire.
            query = np.nextafter(query, -np.inf)
        top = self.detector.test(query)
        fired = top & self._active
        if self.window_grid == "dyadic":
            self._push_snapshots(tau, ~fired, t)
        else:
            self._prefix[:, :, t] = self._cum
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

        Compiled between selections where :func:`agents._svt_kernels.block_supported`; else the
        hooks round by round (:func:`agents._kernels.hook_loop`).
        """
        from agents._svt_kernels import play_rounds

        return play_rounds(self, obs)
