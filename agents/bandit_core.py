"""Batched bandit base learners ("cores"), free of any observation plumbing.

A core is the base learner B of "Faster Rates for Private Adversarial Bandits" (Algorithm 1): it
holds the state of B runs over m arms (m = K arms, or N experts used as meta-arms) and knows nothing
of environments, observations or privacy. The baselines of :mod:`agents.bandit` wrap cores; the
private bandit learners (that paper's Algorithm 1, bandit-over-experts Thm 7, batched EXP4) reuse
them by feeding noisy or batched feedback.

Core API (every method is batch-first, no Python loop over runs)::

    core = Exp3Core(rng, n_arms, eta=0.05, gamma=0.0)  # rng: the owner's BatchRNG (B runs)
    core.reset()                        # forget everything (called by the constructor)
    p = core.distribution()             # (B, m) current sampling law (not for FtplGRCore)
    arms = core.sample()                # (B,) int64 arms drawn from that law
    core.update(arms, y, mask=None)     # feed real feedback y (B,) for the sampled arms
    core.n_updates                      # (B,) int64: the core's own clock (updates so far)

* ``update(arms, y, mask)`` must follow the ``sample()`` that produced ``arms`` with no other update
  in between: the importance weight uses the law the arm was drawn from. ``y`` may be any real
  number (negative, noisy, a batch mean plus Laplace noise): the core turns it into its own loss
  estimate (EXP3: ``y / p(arm)``; Tsallis-INF/HTINF: skip-then-divide; FTPL-GR: ``y * M_t``).
  ``mask`` (B,) bool restricts the update to some runs; the others keep their state and clock.
  Randomness drawn inside ``update`` (FTPL-GR only) is drawn for all runs, then masked.
* The core's round index is its own update counter plus one (erratum E-PAB-1: inside the
  batched conversion this is the batch index, not the environment round), per run.
* All randomness comes from the ``rng`` given at construction (a
  :class:`~dp_experts_env.batch_rng.BatchRNG`); every call draws a number of uniforms that depends
  only on the call (never on the data), so a batch reproduces single runs bit for bit (FTPL-GR's
  resampling reads per-run streams seeded from ``rng``'s seeds, each run as far as it needs). An
  owner that replaces its ``rng`` (``Agent.reset(seed)``) must build a fresh core.
* ``cum_estimate`` (B, m) holds the cumulative loss estimates; learners are FTRL-type, so the
  state is exactly this array plus the clock.

Cores:

* :class:`Exp3Core` -- EXP3 with mixing (the private-bandit paper's Algorithm 3).
* :class:`TsallisInfCore` -- HTINF with alpha = 2 (Huang, Dai & Huang 2022 Alg. 1,
  reconstructed, erratum E-PAB-11); with ``skip=False`` it is the 1/2-Tsallis-INF of Zimmert &
  Seldin.
* :class:`FtplGRCore` -- bandit FTPL with Laplace perturbations and geometric resampling (the
  private-bandit paper's Algorithm 4, Neu & Bartók 2016), with the fixes of erratum E-PAB-12;
  optionally with a self-confident rate read off the fed values (:class:`AdaptiveFtplRate`).
* :class:`Exp4Core` -- EXP4's expert weights and arm mixture (Auer et al. 2002):
  ``expert_distribution()``, ``arm_distribution(advice)``, ``sample(advice)``, ``estimate(y)``
  (importance-weighted expert losses of the last sample) and ``update(expert_losses, mask)`` (a
  full-information step on any estimated expert losses, e.g. noisy ones in LDP-EXP4 or batch
  averages in the batched private EXP4).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents._ftpl_gr import pages_for, resample_counts
from agents._simplex import softmax
from dp_experts_env._validation import check_float, check_int, check_probability
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "BanditCore",
    "Exp3Core",
    "TsallisInfCore",
    "FtplGRCore",
    "AdaptiveFtplRate",
    "Exp4Core",
    "tsallis_inf_weights",
    "THETA_2",
    "LearningRate",
    "default_exp3_eta",
]

#: A fixed rate, or a schedule mapping (B,) 1-indexed core rounds to (B,) rates.
LearningRate = float | Callable[[np.ndarray], np.ndarray]

#: HTINF's skipping constant for alpha = 2: 1 - 2^(-1/3) (Huang, Dai & Huang 2022).
THETA_2 = 1.0 - 2.0 ** (-1.0 / 3.0)


def _check_rate(name: str, eta: LearningRate) -> LearningRate:
    if callable(eta):
        return eta
    return check_float(name, eta, minimum=0.0, min_inclusive=False)


class BanditCore(ABC):
    """Common state and the update protocol of the K-armed cores.

    Args:
        rng: the owner's batched random streams; its ``num_runs`` is B.
        n_arms: m, the number of arms (>= 1).
    """

    def __init__(self, rng: BatchRNG, n_arms: int) -> None:
        if not isinstance(rng, BatchRNG):
            raise TypeError(f"rng must be a BatchRNG, got {type(rng).__name__}")
        self.rng = rng
        self.num_runs = rng.num_runs
        self.n_arms = check_int("n_arms", n_arms, minimum=1)
        self._rows = np.arange(self.num_runs)

    def reset(self) -> None:
        """Forget all feedback: uniform start, clock 0."""
        self.cum_estimate = np.zeros((self.num_runs, self.n_arms))
        self.n_updates = np.zeros(self.num_runs, dtype=np.int64)
        self._cache: np.ndarray | None = None

    @abstractmethod
    def distribution(self) -> np.ndarray:
        """(B, m) law of the next :meth:`sample`."""

    def sample(self) -> np.ndarray:
        """(B,) arms drawn from :meth:`distribution` (one uniform per run)."""
        return self.rng.categorical(self.distribution())

    def update(
        self, arms: np.ndarray, feedback: np.ndarray, mask: np.ndarray | None = None
    ) -> None:
        """Feed real-valued feedback for the arms of the last :meth:`sample`.

        Args:
            arms: (B,) arms played.
            feedback: (B,) real feedback (a loss, possibly noisy or negative).
            mask: (B,) bool, runs to update (default all).
        """
        arms, feedback, mask = self._check_update(arms, feedback, mask)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            estimate = self._estimate(arms, feedback)
        self.cum_estimate[self._rows, arms] += np.where(mask, estimate, 0.0)
        self.n_updates += mask
        self._cache = None
        self._after_update(mask)

    def _after_update(self, mask: np.ndarray) -> None:
        """Hook for per-update diagnostics (runs in ``mask`` were updated)."""
        return None

    @abstractmethod
    def _estimate(self, arms: np.ndarray, feedback: np.ndarray) -> np.ndarray:
        """(B,) loss estimate added to ``cum_estimate[run, arm]`` (masked rows are discarded)."""

    def _check_update(
        self, arms: np.ndarray, feedback: np.ndarray, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = self.num_runs
        arms = np.asarray(arms)
        if arms.shape != (b,) or not np.issubdtype(arms.dtype, np.integer):
            raise ValueError(f"arms must be a ({b},) integer array, got {arms.dtype} {arms.shape}")
        if arms.min() < 0 or arms.max() >= self.n_arms:
            raise ValueError(f"arms must lie in [0, {self.n_arms}), got {arms.min()}..{arms.max()}")
        feedback = np.asarray(feedback, dtype=np.float64)
        if feedback.shape != (b,) or not np.all(np.isfinite(feedback)):
            raise ValueError(f"feedback must be a finite ({b},) array, got shape {feedback.shape}")
        mask = np.ones(b, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        if mask.shape != (b,):
            raise ValueError(f"mask must have shape ({b},), got {mask.shape}")
        return arms.astype(np.int64), feedback, mask

    def _round(self) -> np.ndarray:
        """(B,) 1-indexed round of the next sample, per run."""
        return self.n_updates + 1


class Exp3Core(BanditCore):
    """EXP3 with uniform mixing (Auer et al. 2002, Bubeck & Cesa-Bianchi 2012).

    ``p_n = (1 - gamma) softmax(-eta_n * Lhat_{n-1}) + gamma / m`` at core round n, with
    ``Lhat`` the cumulative importance-weighted estimates ``y / p_n(arm)``. A fixed ``eta`` equals
    the multiplicative update ``w <- w exp(-eta lhat)``; a schedule ``eta(n)`` gives anytime EXP3.

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        eta: learning rate (> 0) or schedule ``n -> eta_n`` on (B,) rounds.
        gamma: uniform mixing in [0, 1] (keep > 0 under noisy feedback: the
            analysis of Corollary 22 needs ``p >= gamma / m`` to bound the noisy estimates).

    Cost per sample or update: O(m) per run.
    """

    def __init__(self, rng: BatchRNG, n_arms: int, eta: LearningRate, gamma: float = 0.0) -> None:
        super().__init__(rng, n_arms)
        self.eta = _check_rate("eta", eta)
        self.gamma = check_probability("gamma", gamma)
        self.reset()

    def rate(self) -> np.ndarray:
        """(B,) learning rate of the next round."""
        if callable(self.eta):
            return np.broadcast_to(np.asarray(self.eta(self._round()), float), (self.num_runs,))
        return np.full(self.num_runs, self.eta)

    def distribution(self) -> np.ndarray:
        """(B, m) EXP3's mixed law."""
        if self._cache is None:
            p = softmax(-self.rate()[:, None] * self.cum_estimate)
            if self.gamma > 0.0:
                p = (1.0 - self.gamma) * p + self.gamma / self.n_arms
            self._cache = p
        return self._cache

    def _estimate(self, arms: np.ndarray, feedback: np.ndarray) -> np.ndarray:
        return feedback / self.distribution()[self._rows, arms]


def tsallis_inf_weights(
    cum_estimate: np.ndarray, beta: np.ndarray, tol: float = 1e-12, max_iter: int = 200
) -> np.ndarray:
    """The 1/2-Tsallis FTRL point ``argmin_x <L, x> - 2 beta sum_i sqrt(x_i)`` on the simplex.

    The stationarity condition gives ``x_i = beta^2 / (L_i + nu)^2`` with the scalar ``nu`` solving
    ``sum_i x_i = 1``. Newton's method from ``nu_0 = beta - min_i L_i`` (where the sum is >= 1)
    increases monotonically to the root because the sum is convex and decreasing in nu. A run
    stops once ``sum - 1 <= tol`` (a rounding overshoot below 1 also stops it), so each
    run's iterates are independent of the other runs. The result is renormalised by its sum.

    Args:
        cum_estimate: (B, m) cumulative loss estimates (any real values).
        beta: (B,) regulariser weights (> 0).
        tol: stopping tolerance on ``sum_i x_i - 1``.
        max_iter: Newton iteration cap (a run still active after it is renormalised as is).

    Returns:
        (B, m) distributions, every entry > 0.
    """
    beta = np.asarray(beta, dtype=np.float64)
    nu = beta - cum_estimate.min(axis=1)
    active = np.ones(nu.shape, dtype=bool)
    for _ in range(max_iter):
        x = (beta[:, None] / (cum_estimate + nu[:, None])) ** 2
        total = x.sum(axis=1)
        active &= total - 1.0 > tol
        if not active.any():
            break
        slope = 2.0 * np.sum(x**1.5, axis=1) / beta  # -d(total)/d(nu)
        nu = np.where(active, nu + (total - 1.0) / slope, nu)
    x = (beta[:, None] / (cum_estimate + nu[:, None])) ** 2
    return x / x.sum(axis=1, keepdims=True)


class TsallisInfCore(BanditCore):
    """HTINF with alpha = 2 (heavy-tail Tsallis-INF, reconstructed; erratum E-PAB-11).

    Source: Huang, Dai & Huang 2022 ("Adaptive best-of-both-worlds algorithm for heavy-tailed
    multi-armed bandits"), Alg. 1, as reconstructed by the suite (erratum E-PAB-11; the
    private-bandit paper uses it as a black box, Thm 21). At core round n, with
    ``beta_n = sigma * sqrt(n)``::

        x_n = argmin_x <Lhat_{n-1}, x> - 2 beta_n sum_i sqrt(x_i)         (Newton, see below)
        draw I ~ x_n; feedback y
        r_n = THETA_2 * beta_n * sqrt(x_n(I))                             (skipping threshold)
        Lhat_n(I) += (y if |y| <= r_n else 0) / x_n(I)

    ``THETA_2 = 1 - 2^(-1/3)``. The solver is :func:`tsallis_inf_weights`. With ``skip=False`` the
    threshold is off and this is Zimmert & Seldin's 1/2-Tsallis-INF with the importance-weighted
    estimator and rate ``eta_n = 2 / (sigma sqrt(n))`` (their adversarial tuning at sigma = 1).
    The theory (Thm 21) needs losses that are (2, sigma)-heavy-tailed: ``E[y^2] <= sigma^2``;
    losses in [0, 1] satisfy it with sigma = 1, Laplace-noised batch means with
    ``sigma = sqrt(2 + 4 lambda^2)`` (erratum E-PAB-24).

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        sigma: heavy-tail scale (> 0).
        skip: apply HTINF's skipping threshold (default True).

    Attributes:
        n_skipped: (B,) number of updates whose feedback was skipped.

    Cost per sample or update: O(m * n_newton) per run (n_newton ~ 5-30), memory O(m).
    """

    def __init__(self, rng: BatchRNG, n_arms: int, sigma: float = 1.0, skip: bool = True) -> None:
        super().__init__(rng, n_arms)
        self.sigma = check_float("sigma", sigma, minimum=0.0, min_inclusive=False)
        if not isinstance(skip, bool):
            raise TypeError(f"skip must be a bool, got {type(skip).__name__}")
        self.skip = skip
        self.reset()

    def reset(self) -> None:
        """Forget all feedback."""
        super().reset()
        self.n_skipped = np.zeros(self.num_runs, dtype=np.int64)

    def beta(self) -> np.ndarray:
        """(B,) regulariser weight ``sigma * sqrt(n)`` of the next round n."""
        return self.sigma * np.sqrt(self._round().astype(np.float64))

    def distribution(self) -> np.ndarray:
        """(B, m) the Tsallis-INF law."""
        if self._cache is None:
            self._cache = tsallis_inf_weights(self.cum_estimate, self.beta())
        return self._cache

    def _kept(self, arms: np.ndarray, feedback: np.ndarray) -> np.ndarray:
        x = self.distribution()[self._rows, arms]
        return np.abs(feedback) <= THETA_2 * self.beta() * np.sqrt(x)

    def _estimate(self, arms: np.ndarray, feedback: np.ndarray) -> np.ndarray:
        x = self.distribution()[self._rows, arms]
        kept = self._kept(arms, feedback) if self.skip else np.ones(self.num_runs, dtype=bool)
        self._skipped = ~kept
        return np.where(kept, feedback, 0.0) / x

    def _after_update(self, mask: np.ndarray) -> None:
        self.n_skipped += self._skipped & mask


@dataclass(frozen=True)
class AdaptiveFtplRate:
    """A self-confident FTPL rate read off the fed values (docs/algorithms.md, "Calibration").

    ``eta_n = min(eta_max, sqrt(penalty / (2 S_{n-1})))`` with ``S_0 = q0`` and, after each
    update, ``S_n = S_{n-1} + q_n``, ``q_n = M_n y_n^2 exp(eta_n M max(0, -y_n))`` (``M_n`` the
    resample count, ``y_n`` the fed value, M the resampling cap). ``E[q_n | past]`` bounds the
    Bregman gap of round n divided by ``eta_n``, so this is AdaGrad's rate for FTPL's potential;
    it reads only the fed values and the core's own coins.

    Attributes:
        penalty: ``E max_i Z_i`` of m standard Laplace perturbations (the potential's range).
        q0: ``S_0`` (> 0), the prior second-moment mass (keeps the first rates finite).
        eta_max: cap of the rate (``inf`` for none); with noisy feedback of Laplace scale lam the
            proof needs ``eta_max M lam < 1/2``.
    """

    penalty: float
    q0: float
    eta_max: float = math.inf

    def __post_init__(self) -> None:
        check_float("penalty", self.penalty, minimum=0.0, min_inclusive=False)
        check_float("q0", self.q0, minimum=0.0, min_inclusive=False)
        if not (isinstance(self.eta_max, (int, float)) and self.eta_max > 0):
            raise ValueError(f"eta_max must be > 0 (or inf), got {self.eta_max!r}")


class FtplGRCore(BanditCore):
    """Bandit FTPL with Laplace perturbations and geometric resampling.

    Source: Neu & Bartók 2016; the private-bandit paper's Alg. 4. Round n plays
    ``I = argmin_i Lhat(i) + Z_i`` with ``Z_i ~ Laplace(1/eta)``. The update redraws perturbations
    up to M times and sets ``M_n`` = the index of the first redraw whose argmin is I, or M if none
    (erratum E-PAB-12 (a), (b): argmin, and M on failure, so ``E[M_n] = (1 - (1 - p)^M) / p``),
    always with the pre-update ``Lhat`` (E-PAB-12 (c)); then ``Lhat(I) += y * M_n``.

    With ``adaptive`` (an :class:`AdaptiveFtplRate`; a deviation from Alg. 4, whose eta is fixed)
    round n's rate ``eta_n`` -- used for its play and its resampling alike -- is the self-confident
    rate of the values fed so far, per run, non-increasing (FTPL's potential bound with
    non-increasing rates; docs/algorithms.md, "Calibration"). ``eta`` is then unused.

    Randomness: ``sample`` draws m Laplace variates per run from ``rng``; ``update`` reads each
    run's redraws from its own resampling stream (:class:`agents._ftpl_gr.ResamplePages`, apart
    from ``rng``) up to the first hit only, so a batch still equals its single runs. The law of
    the played arm has no closed form, so :meth:`distribution` raises ``NotImplementedError``.

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        eta: perturbation rate (> 0); the Laplace scale is ``1 / eta``.
        max_resamples: M (>= 1).
        adaptive: the adaptive rate rule, or None (default) for the fixed ``eta``.

    Attributes:
        last_resamples: (B,) the ``M_n`` of the last update.
        second_moment: (B,) ``S_n`` of the adaptive rate (``q0`` after a reset; adaptive only).
        pages: the runs' resampling streams (held on ``rng``: shared by the cores built on it,
            copied with it).

    Cost: sample O(m); update O(m min(G, M)) per run, at most O(m^2) in expectation (memory
    O(256 m) per run for the pages).
    """

    def __init__(
        self,
        rng: BatchRNG,
        n_arms: int,
        eta: float,
        max_resamples: int,
        adaptive: AdaptiveFtplRate | None = None,
    ) -> None:
        super().__init__(rng, n_arms)
        self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        self.max_resamples = check_int("max_resamples", max_resamples, minimum=1)
        if adaptive is not None and not isinstance(adaptive, AdaptiveFtplRate):
            raise TypeError(
                f"adaptive must be an AdaptiveFtplRate or None, got {type(adaptive).__name__}"
            )
        self.adaptive = adaptive
        self.pages = pages_for(rng, self.n_arms)  # they go on when a core is rebuilt on rng
        self.reset()

    def reset(self) -> None:
        """Forget all feedback (the resampling streams go on, as ``rng`` does)."""
        super().reset()
        self.last_resamples = np.zeros(self.num_runs, dtype=np.int64)
        if self.adaptive is not None:
            self.second_moment = np.full(self.num_runs, float(self.adaptive.q0))

    def rate(self) -> np.ndarray:
        """(B,) the rate of the next round (``eta`` for every run unless adaptive)."""
        if self.adaptive is None:
            return np.full(self.num_runs, self.eta)
        a = self.adaptive
        return np.minimum(a.eta_max, np.sqrt(a.penalty / (2.0 * self.second_moment)))

    def _scale(self, extra_dims: int) -> float | np.ndarray:
        """The Laplace scale ``1/eta``, per run (shaped to broadcast) when adaptive."""
        if self.adaptive is None:
            return 1.0 / self.eta
        return (1.0 / self.rate()).reshape((self.num_runs,) + (1,) * extra_dims)

    def distribution(self) -> np.ndarray:
        """Not available: FTPL's law has no closed form (estimate it by sampling if needed)."""
        raise NotImplementedError(
            "FTPL-GR has no closed-form action distribution; sample() draws from it directly"
        )

    def sample(self) -> np.ndarray:
        """(B,) arms ``argmin_i Lhat(i) + Laplace(1/eta)`` (m Laplace draws per run)."""
        noise = self.rng.laplace(self._scale(1), (self.n_arms,))
        return np.argmin(self.cum_estimate + noise, axis=1).astype(np.int64)

    def _estimate(self, arms: np.ndarray, feedback: np.ndarray) -> np.ndarray:
        m_cap = self.max_resamples
        scale = self._scale(0)
        first = resample_counts(self.pages, self.cum_estimate, arms, scale, m_cap)
        self.last_resamples = first
        if self.adaptive is not None:
            # q_n with this round's rate (before S moves): bounds the round's gap over eta_n.
            blow_up = np.exp(self.rate() * m_cap * np.maximum(0.0, -feedback))
            self._q = first * feedback * feedback * blow_up
        return feedback * first

    def _after_update(self, mask: np.ndarray) -> None:
        if self.adaptive is not None:
            self.second_moment = self.second_moment + np.where(mask, self._q, 0.0)


class Exp4Core:
    """EXP4's state: weights over N experts mixed through the advice (Auer et al. 2002).

    With log-weights ``-eta_n * Lhat`` over experts (Lhat: cumulative estimated expert losses),
    ``P_n = softmax(-eta_n Lhat)``, the arm law is ``Q = (1 - gamma) P A + gamma / K`` for advice
    ``A`` (B, N, K). :meth:`sample` draws I ~ Q and remembers ``A[:, I]`` and ``Q(I)``;
    :meth:`estimate` then turns the feedback y into the importance-weighted expert losses
    ``ytil(j) = A[j, I] * y / Q(I)``; :meth:`update` adds any (B, N) expert-loss estimate (raw,
    noisy or batch-averaged) and advances the clock. ``update(estimate(y))`` is one EXP4 round.

    Args:
        rng: the owner's BatchRNG.
        n_experts: N.
        n_arms: K.
        eta: learning rate (> 0) or schedule ``n -> eta_n`` on (B,) 1-indexed rounds.
        gamma: uniform mixing over arms in [0, 1].

    Cost: O(N K) per round per run for ``Q``; O(N) for the estimate and update. Memory O(N).
    """

    def __init__(
        self, rng: BatchRNG, n_experts: int, n_arms: int, eta: LearningRate, gamma: float = 0.0
    ) -> None:
        if not isinstance(rng, BatchRNG):
            raise TypeError(f"rng must be a BatchRNG, got {type(rng).__name__}")
        self.rng = rng
        self.num_runs = rng.num_runs
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.n_arms = check_int("n_arms", n_arms, minimum=1)
        self.eta = _check_rate("eta", eta)
        self.gamma = check_probability("gamma", gamma)
        self._rows = np.arange(self.num_runs)
        self.reset()

    def reset(self) -> None:
        """Uniform weights, clock 0."""
        self.cum_estimate = np.zeros((self.num_runs, self.n_experts))
        self.n_updates = np.zeros(self.num_runs, dtype=np.int64)
        self.last_advice_at_arm = np.zeros((self.num_runs, self.n_experts))
        self.last_q_at_arm = np.ones(self.num_runs)
        self.last_q: np.ndarray | None = None

    def rate(self) -> np.ndarray:
        """(B,) learning rate of the next round."""
        if callable(self.eta):
            n = self.n_updates + 1
            return np.broadcast_to(np.asarray(self.eta(n), float), (self.num_runs,))
        return np.full(self.num_runs, self.eta)

    def expert_distribution(self) -> np.ndarray:
        """(B, N) the weights P over experts."""
        return softmax(-self.rate()[:, None] * self.cum_estimate)

    def arm_distribution(self, advice: np.ndarray) -> np.ndarray:
        """(B, K) ``Q = (1 - gamma) P A + gamma / K`` for advice (B, N, K)."""
        q = np.einsum("bn,bnk->bk", self.expert_distribution(), advice)
        q = q / q.sum(axis=1, keepdims=True)  # advice rows sum to 1 up to rounding
        if self.gamma > 0.0:
            q = (1.0 - self.gamma) * q + self.gamma / self.n_arms
        return q

    def sample(self, advice: np.ndarray) -> np.ndarray:
        """(B,) arms drawn from Q (one uniform per run); remembers ``A[:, I]``, ``Q(I)``, ``Q``."""
        q = self.arm_distribution(advice)
        arms = self.rng.categorical(q)
        self.last_q = q
        self.last_advice_at_arm = advice[self._rows, :, arms]  # (B, N), a copy
        self.last_q_at_arm = q[self._rows, arms]
        return arms

    def estimate(self, feedback: np.ndarray) -> np.ndarray:
        """(B, N) importance-weighted expert losses ``A[j, I] * y / Q(I)`` for the last sample."""
        feedback = np.asarray(feedback, dtype=np.float64).reshape(self.num_runs)
        return self.last_advice_at_arm * (feedback / self.last_q_at_arm)[:, None]

    def update(self, expert_losses: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Add (B, N) expert-loss estimates (runs in ``mask`` only) and advance their clock."""
        expert_losses = np.asarray(expert_losses, dtype=np.float64)
        if expert_losses.shape != (self.num_runs, self.n_experts):
            raise ValueError(
                f"expert_losses must have shape ({self.num_runs}, {self.n_experts}), "
                f"got {expert_losses.shape}"
            )
        if not np.all(np.isfinite(expert_losses)):
            raise ValueError("expert_losses must be finite")
        mask = np.ones(self.num_runs, dtype=bool) if mask is None else np.asarray(mask, bool)
        self.cum_estimate += np.where(mask[:, None], expert_losses, 0.0)
        self.n_updates += mask


def default_exp3_eta(n_arms: int, horizon: int) -> float:
    """EXP3's fixed rate ``sqrt(2 ln m / (T m))`` (regret <= sqrt(2 T m ln m), Auer et al. 2002)."""
    return math.sqrt(2.0 * math.log(n_arms) / (horizon * n_arms)) if n_arms > 1 else 1.0
