"""Stochastic-bandit baselines: UCB1, KL-UCB and Thompson sampling (Bernoulli / Beta).

Index policies on losses, blind to advice: one play of every arm first, index ties to the lowest
arm, the same uniforms per round in every run (a batch equals single runs bit for bit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from agents.bandit import BanditBaseline
from agents.base import BanditObs
from agents.registry import register
from dp_experts_env._validation import check_float, check_int

__all__ = ["UCB1", "KLUCB", "ThompsonSampling", "bernoulli_kl", "kl_lower_bound"]


def bernoulli_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``kl(p, q)`` between Bernoulli(p) and Bernoulli(q), elementwise (0 log 0 = 0)."""
    eps = 1e-15
    p = np.clip(p, 0.0, 1.0)
    q = np.clip(q, eps, 1.0 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0.0, p * np.log(p / q), 0.0)
        b = np.where(p < 1.0, (1.0 - p) * np.log((1.0 - p) / (1.0 - q)), 0.0)
    return a + b


def kl_lower_bound(mean: np.ndarray, level: np.ndarray, iterations: int = 8) -> np.ndarray:
    """``min{q in [0, mean] : kl(mean, q) <= level}`` by Newton's method on ``ln q``, elementwise.

    The KL-UCB bound on a mean loss (Garivier & Cappé 2011). From Pinsker's bound the iterates
    increase monotonically to the root, so each lies at or below the exact bound (the optimistic
    side for losses).
    """
    p = np.asarray(mean, dtype=np.float64)
    level = np.broadcast_to(np.asarray(level, dtype=np.float64), p.shape)
    floor = -700.0  # ln q >= -700: q = 0 to double precision
    from scipy.special import xlogy  # ~0.25 s to import: paid only where used

    negent = xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        top = np.log(p)
        s = np.maximum(np.log(np.maximum(p - np.sqrt(level / 2.0), 0.0)), floor)
        s = np.minimum(s, top)
        for _ in range(iterations):
            q = np.exp(s)
            g = negent - p * s - xlogy(1.0 - p, 1.0 - q) - level
            slope = (1.0 - p) * q / (1.0 - q) - p
            s = np.minimum(np.maximum(s - np.where(slope < 0.0, g / slope, 0.0), floor), top)
    return np.where(p > 0.0, np.exp(s), 0.0)


class _IndexBandit(BanditBaseline):
    """Counts, sums and the round-robin start; :meth:`_index` gives (B, K) scores, lowest played."""

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None,
        num_envs: int,
        seed: int | Sequence[int] | None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)

    def _init_state(self) -> None:
        k = int(self.n_arms)
        self.counts = np.zeros((self.num_envs, k), dtype=np.int64)
        self.sums = np.zeros((self.num_envs, k))
        self._rows = np.arange(self.num_envs)

    def _observed(self, obs: BanditObs) -> np.ndarray:
        """(B,) the statistic added to the played arm's sum (the clipped loss by default)."""
        return np.clip(obs.last_loss, 0.0, 1.0)

    def _learn(self, obs: BanditObs) -> None:
        self._check_step(obs)
        arms = self.last_actions
        self.sums[self._rows, arms] += self._observed(obs)
        self.counts[self._rows, arms] += 1

    def _choose(self, obs: BanditObs) -> np.ndarray:
        k = int(self.n_arms)
        if self.t < k:  # round robin: every arm once
            self._draw_before_index()
            return np.full(self.num_envs, self.t, dtype=np.int64)
        return np.argmin(self._index(), axis=1).astype(np.int64)

    def _draw_before_index(self) -> None:
        """Consume the index's random draws in the round-robin rounds too (runs stay aligned)."""
        return None

    def _index(self) -> np.ndarray:
        raise NotImplementedError

    def means(self) -> np.ndarray:
        """(B, K) empirical mean loss of every arm (0 before its first play)."""
        return self.sums / np.maximum(self.counts, 1)


#: The hooks of ``act`` that UCB1's block kernel recomputes (a subclass overriding one plays
#: its blocks through ``act``).
_UCB1_HOOKS = ("_learn", "_choose", "_index", "_observed", "means", "_draw_before_index")


@register(
    "ucb1",
    private=False,
    summary="UCB1 (Auer et al. 2002) on losses: argmin mean - sqrt(2 ln t / n); stochastic bandits",
)
class UCB1(_IndexBandit):
    """UCB1 on losses.

    Source: Auer, Cesa-Bianchi & Fischer 2002, "Finite-time analysis of the multiarmed bandit
    problem", Fig. 1 and Thm 1. After the round robin, round t + 1 plays
    ``argmin_i Lbar_i - sqrt(c ln t / n_i)``. No deviation.

    Args:
        n_experts: N (the env's; advice is ignored).
        horizon: T (anytime: only validated).
        n_arms: K (>= 2).
        c: exploration constant (the source's 2).
        num_envs: B (``seed``: int, run b using seed + b, a sequence of B ints, or None).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        c: float = 2.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, n_arms=n_arms, num_envs=num_envs, seed=seed)
        self.c = check_float("c", c, minimum=0.0)
        self.reset(seed)

    def _index(self) -> np.ndarray:
        return self.means() - np.sqrt(self.c * math.log(self.t) / self.counts)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one compiled call (the bandit block protocol).

        :mod:`agents._bandit_ucb1`'s kernel, bit for bit K ``act`` calls; without it, or for a
        subclass overriding a hook the kernel recomputes (its index, statistic, means, learning
        or choice: the learner audited on ``act``), through ``act``.
        """
        from agents import _bandit_kernels as kernels
        from agents import _bandit_ucb1 as ucb1
        from agents._kernels import own_hooks

        k = len(losses)
        if not k or not ucb1.ucb1_ready() or not own_hooks(self, UCB1, _UCB1_HOOKS):
            return kernels.act_loop(self, first, advice, losses, rows)
        batch, _, _, _ = kernels.block_inputs(self, first, advice, k, uses_advice=False)
        loss0 = self._checked_loss(batch) if self.t > 0 else np.zeros(self.num_envs)
        arms = int(self.n_arms)
        # act's c ln t, in Python as act computes it (the kernel divides, roots and subtracts)
        levels = [self.c * math.log(t) if t >= arms else 0.0 for t in range(self.t, self.t + k)]
        actions = ucb1.run_ucb1_block(
            self.sums, self.counts, self.last_actions, np.array(levels), self.t, losses, rows,
            loss0,
        )
        self.t += k
        self.last_actions = actions[-1].copy()
        return actions


@register(
    "kl-ucb",
    private=False,
    summary="KL-UCB (Garivier & Cappe 2011) on losses: Bernoulli-KL lower confidence bound",
)
class KLUCB(_IndexBandit):
    """KL-UCB with the Bernoulli divergence, on losses.

    Source: Garivier & Cappé 2011, "The KL-UCB Algorithm for Bounded Stochastic Bandits and Beyond",
    Algorithm 1 and Thm 1. After the round robin, round t + 1 plays the lowest
    ``q_i = min{q <= Lbar_i : n_i kl(Lbar_i, q) <= ln t + c ln ln t}``. Deviation: a fixed number of
    Newton steps (:func:`kl_lower_bound`).

    Args:
        n_experts: as :class:`UCB1` (also ``horizon``, ``n_arms``, ``num_envs``, ``seed``).
        c: the ``ln ln t`` factor (default 0, the source's practical choice; its theorem takes 3).
        iterations: Newton steps for the bound.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        c: float = 0.0,
        iterations: int = 8,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, n_arms=n_arms, num_envs=num_envs, seed=seed)
        self.c = check_float("c", c, minimum=0.0)
        self.iterations = check_int("iterations", iterations, minimum=1, maximum=200)
        self.reset(seed)

    def _level(self, t: int) -> float:
        """``ln t + c ln ln t`` (the ``ln ln`` term from t > e on)."""
        return math.log(t) + (self.c * math.log(math.log(t)) if t > math.e else 0.0)

    def _index(self) -> np.ndarray:
        return kl_lower_bound(self.means(), self._level(self.t) / self.counts, self.iterations)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one compiled call (the bandit block protocol).

        :mod:`agents._bandit_klucb`'s kernel, bit for bit K ``act`` calls; without it, through
        ``act``.
        """
        from agents import _bandit_kernels as kernels
        from agents import _bandit_klucb as klucb

        k = len(losses)
        if not k or not klucb.klucb_ready():
            return kernels.act_loop(self, first, advice, losses, rows)
        batch, _, _, _ = kernels.block_inputs(self, first, advice, k, uses_advice=False)
        loss0 = self._checked_loss(batch) if self.t > 0 else np.zeros(self.num_envs)
        arms = int(self.n_arms)
        levels = [self._level(t) if t >= arms else 0.0 for t in range(self.t, self.t + k)]
        actions = klucb.run_klucb_block(
            self.sums, self.counts, self.last_actions, np.array(levels), self.t,
            self.iterations, losses, rows, loss0,
        )
        self.t += k
        self.last_actions = actions[-1].copy()
        return actions


@register(
    "thompson",
    private=False,
    summary="Thompson sampling, Beta posterior on Bernoulli(-ised) losses (Agrawal & Goyal 2012)",
)
class ThompsonSampling(_IndexBandit):
    """Thompson sampling with Beta(1, 1) priors on each arm's mean loss.

    Source: Thompson 1933; Agrawal & Goyal 2012, "Analysis of Thompson Sampling for the Multi-armed
    Bandit Problem", Algorithm 2 (a loss in [0, 1] becomes the trial ``y ~ Bernoulli(loss)``). After
    the round robin, round t + 1 draws ``theta_i ~ Beta(1 + F_i, 1 + n_i - F_i)`` and plays
    ``argmin theta``; per round and run it draws one uniform (the next trial) and K (the Beta
    draws). Deviation: the round-robin start (the source samples the prior from round 1).

    Args:
        n_experts: as :class:`UCB1` (also ``horizon``, ``n_arms``, ``num_envs``, ``seed``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, n_arms=n_arms, num_envs=num_envs, seed=seed)
        self.reset(seed)

    def _observed(self, obs: BanditObs) -> np.ndarray:
        return (self._trial < np.clip(obs.last_loss, 0.0, 1.0)).astype(np.float64)

    def _init_state(self) -> None:
        super()._init_state()
        self._trial = np.zeros(self.num_envs)

    def _draw_before_index(self) -> None:
        self._trial = self.rng.random()
        self.rng.random((int(self.n_arms),))

    def _index(self) -> np.ndarray:
        self._trial = self.rng.random()
        u = self.rng.random((int(self.n_arms),))
        ones = self.sums
        from scipy.special import betaincinv

        return betaincinv(1.0 + ones, 1.0 + self.counts - ones, u)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one call (the bandit block protocol), bit for bit.

        ``betaincinv`` has no bit-exact compiled twin, so each round still inverts its K uniforms in
        numpy; the block reads the stream once and updates the Beta parameters at the played arm
        only.
        """
        from scipy.special import betaincinv

        from agents._bandit_kernels import block_inputs

        k = len(losses)
        runs, arms = self.num_envs, int(self.n_arms)
        actions = np.empty((k, runs), dtype=np.int64)
        if not k:
            return actions
        batch, _, _, _ = block_inputs(self, first, advice, k, uses_advice=False)
        u = self.rng.random((k, 1 + arms))  # (B, K, 1 + arms): per round, trial then draws
        trial = self._trial
        last = self.last_actions
        loss = self._checked_loss(batch) if self.t > 0 else None
        r = self._rows
        alpha = 1.0 + self.sums
        beta = 1.0 + self.counts - self.sums
        for i in range(k):
            t = self.t + i
            if t > 0:
                if i:
                    last = actions[i - 1]
                    loss = losses[i - 1][rows, last]
                seen = (trial < np.clip(loss, 0.0, 1.0)).astype(np.float64)
                self.sums[r, last] += seen
                self.counts[r, last] += 1
                ones = self.sums[r, last]
                alpha[r, last] = 1.0 + ones
                beta[r, last] = 1.0 + self.counts[r, last] - ones
            trial = u[:, i, 0]
            if t < arms:
                actions[i] = t
            else:
                actions[i] = np.argmin(betaincinv(alpha, beta, u[:, i, 1:]), axis=1)
        self._trial = trial
        self.t += k
        self.last_actions = actions[-1].copy()
        return actions
