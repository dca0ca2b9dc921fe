"""Batched bandit base learners ("cores"): state of B runs over m arms, no observations, no DP.

A core is the base learner of "Faster Rates for Private Adversarial Bandits" (Algorithm 1); the
baselines of :mod:`agents.bandit` and the private bandit learners wrap cores. API, batch-first::

    core = Exp3Core(rng, n_arms, eta=0.05)  # rng: the owner's BatchRNG (B runs)
    p = core.distribution()                 # (B, m) law of the next sample (not FtplGRCore)
    arms = core.sample()                    # (B,) int64
    core.update(arms, y, mask=None)         # real feedback y (B,) for the sampled arms
    core.n_updates                          # (B,) int64: the core's clock

Invariants: ``update`` must follow the ``sample`` that drew ``arms`` (the importance weight uses
that law); ``y`` may be any finite real (noisy, negative); ``mask`` restricts the update to some
runs. The core's round is its clock plus one (erratum E-PAB-1). Every call draws a number of
uniforms that does not depend on the data, so a batch equals its single runs bit for bit; an
owner that replaces its ``rng`` must build a fresh core. The state is ``cum_estimate`` (B, m)
plus the clock.
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
    """EXP3 with uniform mixing (Auer et al. 2002; the private-bandit paper's Algorithm 3).

    ``p_n = (1 - gamma) softmax(-eta_n Lhat_{n-1}) + gamma / m``, estimates ``y / p_n(arm)``.

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        eta: learning rate (> 0) or schedule ``n -> eta_n`` on (B,) rounds.
        gamma: uniform mixing in [0, 1] (keep > 0 under noisy feedback: Corollary 22 needs
            ``p >= gamma / m``).
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

    ``x_i = beta^2 / (L_i + nu)^2``; Newton on ``nu`` from ``beta - min_i L_i`` rises monotonically
    to ``sum_i x_i = 1`` (the sum is convex and decreasing); each run stops on its own.

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
    """HTINF with alpha = 2 (heavy-tail Tsallis-INF).

    Source: Huang, Dai & Huang 2022, Alg. 1, reconstructed (erratum E-PAB-11). Round n, with
    ``beta_n = sigma sqrt(n)``, plays ``x_n =`` :func:`tsallis_inf_weights` and adds
    ``(y if |y| <= THETA_2 beta_n sqrt(x_n(I)) else 0) / x_n(I)`` to ``Lhat(I)``. With
    ``skip=False`` it is Zimmert & Seldin's 1/2-Tsallis-INF. Thm 21 needs ``E[y^2] <= sigma^2``:
    sigma = 1 for losses in [0, 1], ``sqrt(2 + 4 lambda^2)`` for Laplace-noised batch means
    (erratum E-PAB-24).

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        sigma: heavy-tail scale (> 0).
        skip: apply HTINF's skipping threshold (default True).

    Attributes:
        n_skipped: (B,) number of updates whose feedback was skipped.
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

    ``eta_n = min(eta_max, sqrt(penalty / (2 S_{n-1})))``, ``S_0 = q0``,
    ``S_n = S_{n-1} + M_n y_n^2 exp(eta_n M max(0, -y_n))`` (``M_n`` the resample count).

    Attributes:
        penalty: ``E max_i Z_i`` of m standard Laplace perturbations.
        q0: ``S_0`` (> 0), keeps the first rates finite.
        eta_max: rate cap (``inf`` for none); noisy feedback of Laplace scale lam needs
            ``eta_max M lam < 1/2``.
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

    Source: Neu & Bartók 2016; the private-bandit paper's Alg. 4, with erratum E-PAB-12. Round n
    plays ``I = argmin_i Lhat(i) + Laplace(1/eta)``; ``M_n`` is the first of up to M redraws (with
    the pre-update ``Lhat``) whose argmin is I, else M; then ``Lhat(I) += y M_n``. Deviation:
    ``adaptive`` replaces the fixed eta by :class:`AdaptiveFtplRate` (per run, non-increasing).
    Redraws come from per-run resampling pages (:mod:`agents._ftpl_gr`), read up to the first hit,
    so a batch equals its single runs. :meth:`distribution` raises ``NotImplementedError``.

    Args:
        rng: the owner's BatchRNG.
        n_arms: m.
        eta: perturbation rate (> 0); the Laplace scale is ``1 / eta``.
        max_resamples: M (>= 1).
        adaptive: the adaptive rate rule, or None (default) for the fixed ``eta``.

    Attributes:
        last_resamples: (B,) the ``M_n`` of the last update.
        second_moment: (B,) ``S_n`` of the adaptive rate (adaptive only).
        pages: the runs' resampling streams (held on ``rng``, shared by its cores).
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

    ``P = softmax(-eta_n Lhat)``, arm law ``Q = (1 - gamma) P A + gamma / K`` for advice ``A``
    (B, N, K). ``update(estimate(y))`` is one EXP4 round; :meth:`update` also takes noisy or
    batch-averaged (B, N) estimates.

    Args:
        rng: the owner's BatchRNG.
        n_experts: N.
        n_arms: K.
        eta: learning rate (> 0) or schedule ``n -> eta_n`` on (B,) 1-indexed rounds.
        gamma: uniform mixing over arms in [0, 1].
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
