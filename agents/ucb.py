"""Stochastic-bandit baselines: UCB1, KL-UCB and Thompson sampling (Bernoulli / Beta).

These are the index policies users expect next to EXP3 on ``DPExperts-Bandit-v0``: built for
i.i.d. arm losses with a gap, where their (pseudo-)regret grows like ``log T`` (EXP3's like
``sqrt T``). All three play the K arms and ignore expert advice (on
``DPExperts-BanditAdvice-v0`` they are advice-blind baselines, as ``exp3`` with ``over="arms"``).

The env's feedback is a loss in [0, 1]; each policy works on losses directly (a lower confidence
bound on an arm's mean loss is the upper confidence bound on its mean reward ``1 - loss``). Every
policy starts by playing arms 0, 1, ..., K-1 once (round robin), then follows its index; index
ties go to the lowest arm (UCB1, KL-UCB: deterministic policies, as in their sources).

Batching: the state is (B, K) counts and sums; every round draws the same number of uniforms in
every run (none for UCB1 and KL-UCB; 1 + K for Thompson sampling), so a batch equals single runs
bit for bit.
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
    """``min{q in [0, mean] : kl(mean, q) <= level}`` by Newton's method, elementwise.

    The KL-UCB confidence bound on a mean loss (Garivier & Cappé 2011, in the loss frame). Newton
    runs on ``s = ln q``: ``s -> kl(mean, e^s)`` is convex and decreasing below ``ln mean`` and
    nearly linear as q -> 0, so from Pinsker's bound ``mean - sqrt(level / 2)`` (where
    ``kl >= level``) the iterates increase monotonically to the root: every iterate lies at or
    below the exact bound (the optimistic side for losses). Eight steps reach it to about 1e-10
    at the sizes the suite plays.
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
    """Counts, sums and the round-robin start shared by the index policies.

    Subclasses implement :meth:`_index` ((B, K) scores; the arm with the lowest is played).
    """

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


@register(
    "ucb1",
    private=False,
    summary="UCB1 (Auer et al. 2002) on losses: argmin mean - sqrt(2 ln t / n); stochastic bandits",
)
class UCB1(_IndexBandit):
    """UCB1 on losses.

    Source: Auer, Cesa-Bianchi & Fischer 2002, "Finite-time analysis of the multiarmed bandit
    problem", Fig. 1 (UCB1) and Thm 1. After one play of each arm, round t + 1 plays
    ``argmin_i  Lbar_i - sqrt(c ln t / n_i)`` (``Lbar_i`` the mean loss of arm i, ``n_i`` its
    plays, t the rounds so far): the optimistic index of the reward ``1 - loss``. With c = 2 the
    expected regret on i.i.d. losses in [0, 1] is at most ``sum_i 8 ln T / Delta_i + (1 +
    pi^2/3) sum_i Delta_i``.

    Args:
        n_experts: N (the env's; UCB1 plays the K arms and ignores advice).
        horizon: T (UCB1 is anytime: T is only validated).
        n_arms: K (>= 2).
        c: exploration constant (default 2, the source's).
        num_envs: B.
        seed: int (run b uses seed + b), sequence of B ints, or None (UCB1 draws nothing).

    Deviation: none (ties go to the lowest arm). Per-round cost O(K) per run; memory O(K).
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


@register(
    "kl-ucb",
    private=False,
    summary="KL-UCB (Garivier & Cappe 2011) on losses: Bernoulli-KL lower confidence bound",
)
class KLUCB(_IndexBandit):
    """KL-UCB with the Bernoulli divergence, on losses.

    Source: Garivier & Cappé 2011, "The KL-UCB Algorithm for Bounded Stochastic Bandits and
    Beyond", Algorithm 1 and Thm 1. After one play of each arm, round t + 1 plays the arm with the
    lowest ``q_i = min{q <= Lbar_i : n_i kl(Lbar_i, q) <= ln t + c ln ln t}`` (the reward index
    of the source applied to ``1 - loss``; ``kl`` the Bernoulli divergence, valid for any losses
    in [0, 1]). Regret ``sum_i (1 + o(1)) Delta_i ln T / kl(mu_i, mu*)`` (asymptotically
    optimal for Bernoulli arms).

    Args:
        n_experts: N (the env's; KL-UCB plays the K arms and ignores advice).
        horizon: T (anytime: only validated).
        n_arms: K (>= 2).
        c: the ``ln ln t`` factor; default 0, the source's recommendation in practice (its
            theorem takes c = 3).
        iterations: Newton steps for the bound (default 8; see :func:`kl_lower_bound`).
        num_envs: B.
        seed: int, sequence of B ints, or None (KL-UCB draws nothing).

    Deviation: a fixed number of Newton steps from Pinsker's bound (no tolerance loop: the
    same work in every run).
    Per-round cost O(K * iterations) per run; memory O(K).
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

        The kernel of :mod:`agents._bandit_klucb` (bit for bit K ``act`` calls);
        ``DP_EXPERTS_NO_JIT`` and a numpy or scipy without the loop entry points play the K
        rounds through ``act``.

        Args:
            first: the observation of the block's first round (keys as in ``act``).
            advice: (K, B, N, K_arms) the rounds' advice, or None (ignored: KL-UCB plays arms).
            losses: (K, S, K_arms) the block's losses (read at the played arms only).
            rows: (B,) the loss stream of each run.

        Returns:
            (K, B) int64 actions.
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

    Source: Thompson 1933; Agrawal & Goyal 2012, "Analysis of Thompson Sampling for the
    Multi-armed Bandit Problem", Algorithm 2 (losses in [0, 1] are turned into Bernoulli trials:
    ``y ~ Bernoulli(loss)``, exact for 0/1 losses) and their 2013 bound ``(1 + o(1)) sum_i
    Delta_i ln T / kl(mu_i, mu*)``. After one play of each arm, round t + 1 draws
    ``theta_i ~ Beta(1 + F_i, 1 + n_i - F_i)`` (``F_i`` the Bernoulli ones seen on arm i) and
    plays ``argmin theta``.

    Args:
        n_experts: N (the env's; plays the K arms and ignores advice).
        horizon: T (anytime: only validated).
        n_arms: K (>= 2).
        num_envs: B.
        seed: int (run b uses seed + b), sequence of B ints, or None.

    Random stream: every round draws one uniform per run (the Bernoulli trial of the loss about
    to be seen: drawn before it, used in the next round's update) and K uniforms per run (the
    Beta draws by inverse CDF, ``scipy.special.betaincinv``; drawn also in the round-robin
    rounds). Deviation: the round-robin start (the source samples from the prior from round 1).
    Per-round cost O(K) per run plus K incomplete-beta inversions (~3 us each); memory O(K).
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

        The Beta draws depend on the state, and ``betaincinv`` (scipy's inversion) has no
        bit-exact compiled twin, so every round still inverts its K uniforms in numpy; what the
        block saves is the rest of ``act``: the K rounds' uniforms are one read of the stream
        (the trial's, then the K draws', per round), and the Beta parameters
        ``1 + F`` and ``1 + n - F`` are kept and updated at the played arm only (the same
        doubles ``act`` recomputes for every arm).

        Args:
            first: the observation of the block's first round (keys as in ``act``).
            advice: (K, B, N, K_arms) the rounds' advice, or None (ignored: plays the arms).
            losses: (K, S, K_arms) the block's losses (read at the played arms only).
            rows: (B,) the loss stream of each run.

        Returns:
            (K, B) int64 actions.
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
