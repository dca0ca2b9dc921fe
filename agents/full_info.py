"""Non-private full-information baselines: uniform, FTL, Hedge, Fixed-Share, shrinking dartboard.

Weights are cumulative losses or log-weights through a max-subtracted softmax (no under- or
overflow). ``action_distribution()`` is the (B, N) law of the last action (the shrinking
dartboard's *marginal* law). Claims are :func:`~agents.base.no_privacy`; tunings are the textbook
ones. The constructors' ``n_experts`` (N), ``horizon`` (T), ``num_envs``, ``seed`` and ``n_arms``
are :class:`~agents.base.Agent`'s (``n_arms`` is ignored except by :class:`Uniform`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents._bandit_block import play_rounds
from agents._kernels import (
    accumulate,
    categorical_rows,
    check_block,
    dartboard_choices,
    finish_block,
    round_uniforms,
    softmax_rows,
    uniform_among_rows,
)
from agents._simplex import log_mix_uniform, log_softmax, softmax, uniform_among
from agents.base import Agent, PrivacyClaim, no_privacy
from agents.registry import register
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import check_choice, check_float, check_int, check_probability

__all__ = [
    "Uniform",
    "FollowTheLeader",
    "Hedge",
    "FixedShare",
    "ShrinkingDartboard",
    "hedge_eta",
    "fixed_share_tuning",
]

RATES = ("fixed", "anytime")


def hedge_eta(n_experts: int, horizon: int) -> float:
    """Hedge's fixed rate ``sqrt(8 ln N / T)``: regret <= sqrt(T ln N / 2) for losses in [0, 1]."""
    return math.sqrt(8.0 * math.log(n_experts) / horizon)


def fixed_share_tuning(n_experts: int, horizon: int, n_switches: int) -> tuple[float, float]:
    """The standard Fixed-Share tuning for at most S switches (Cesa-Bianchi & Lugosi 2006, §5.2).

    ``alpha = S / (T - 1)``, ``eta = sqrt(8 C / T)``, ``C = (S + 1) ln N + S ln(e (T - 1) / S)``
    (``ln N`` when S = 0): S-switch regret <= ``sqrt(T C / 2)``.

    Returns:
        ``(alpha, eta)``.
    """
    s, t = n_switches, horizon
    if s == 0 or t == 1:
        return 0.0, hedge_eta(n_experts, horizon)
    c = (s + 1) * math.log(n_experts) + s * math.log(math.e * (t - 1) / s)
    return s / (t - 1), math.sqrt(8.0 * c / t)


class _FullInfoBaseline(Agent):
    """Shared plumbing: no privacy, full-information feedback, cumulative losses."""

    feedback = "full"
    _CLAIM = no_privacy("full")

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private: ``epsilon = inf``, model ``none``."""
        return self._CLAIM

    def action_distribution(self) -> np.ndarray:
        """The (B, N) law the last action was drawn from (the first action's law before any)."""
        return self._distribution(max(self.t, 1))

    def _distribution(self, round_index: int) -> np.ndarray:
        """(B, N) law of the action of 1-indexed round ``round_index`` given what was learned."""
        raise NotImplementedError

    def _init_state(self) -> None:
        self.cum_loss = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, obs: np.ndarray) -> None:
        self.cum_loss += obs


def _positive_eta(eta: float) -> float:
    return check_float("eta", eta, minimum=0.0, min_inclusive=False)


@register(
    "uniform",
    private=False,
    summary="uniformly random expert (full information) or arm (bandits) every round (floor)",
)
class Uniform(_FullInfoBaseline):
    """Play a uniformly random action every round, ignoring all feedback.

    Source: the trivial baseline, the reference of every normalised score. It plays on both kinds
    of env: a uniform expert under full information, a uniform arm when ``n_arms`` is given.

    Args:
        n_arms: K on a bandit env (actions are then arms), None under full information.
    """

    feedback = "any"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self._bandit = self.n_arms is not None
        self._claim = no_privacy("bandit" if self._bandit else "full")
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private; the feedback is the env's."""
        return self._claim

    def _parse_obs(self, obs: Any) -> tuple[Any, bool]:
        return self._parse_bandit(obs) if self._bandit else self._parse_full(obs)

    def _n_actions(self) -> int:
        return self.n_arms if self._bandit else self.n_experts

    def _distribution(self, round_index: int) -> np.ndarray:
        k = self._n_actions()
        return np.full((self.num_envs, k), 1.0 / k)

    def _learn(self, obs: Any) -> None:
        pass  # uniform play learns nothing

    def _choose(self, obs: Any) -> np.ndarray:
        return self.rng.integers(self._n_actions())

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (full information; see :mod:`agents._kernels`)."""
        if self._bandit:
            raise TypeError("play_block needs full-information observations")
        k = len(check_block(self, obs))
        high = self._n_actions()
        u = round_uniforms(self.rng, k, 1)[:, :, 0]
        draws = np.floor(u * np.asarray(high)).astype(np.int64)
        return finish_block(self, np.minimum(draws, high - 1))

    def play_bandit_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` on a bandit env at once (:mod:`agents._bandit_block`)."""
        k = int(losses.shape[0])
        if not self._bandit or self.t + k > self.horizon:
            actions = np.empty((k, self.num_envs), dtype=np.int64)
            play_rounds(self, first, advice, losses, rows, actions, 0, k)
            return actions
        high = self._n_actions()
        u = round_uniforms(self.rng, k, 1)[:, :, 0]
        draws = np.floor(u * np.asarray(high)).astype(np.int64)
        return finish_block(self, np.minimum(draws, high - 1))


@register(
    "follow-the-leader",
    private=False,
    summary="FTL: argmin of cumulative loss, uniform tie-break (linear regret on the FTL trap)",
)
class FollowTheLeader(_FullInfoBaseline):
    """Follow the leader: play an expert with the least cumulative loss so far.

    Source: the classic FTL (Cesa-Bianchi & Lugosi 2006, §3.2); the family ``ftl_trap`` shows its
    linear worst case. Ties (sums within ``16 * eps64 * t``, their rounding error) are broken
    uniformly at random.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.reset(seed)

    def _leaders(self, round_index: int) -> np.ndarray:
        tol = 16.0 * np.finfo(np.float64).eps * max(round_index - 1, 1)
        return self.cum_loss <= self.cum_loss.min(axis=1, keepdims=True) + tol

    def _distribution(self, round_index: int) -> np.ndarray:
        leaders = self._leaders(round_index)
        return leaders / leaders.sum(axis=1, keepdims=True)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return uniform_among(self._leaders(self.t + 1), self.rng.random())

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (see :mod:`agents._kernels`)."""
        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.empty((0, self.num_envs)))
        sums = accumulate(self.cum_loss, losses, self.t > 0)
        rounds = np.arange(self.t + 1, self.t + k + 1)
        tol = 16.0 * np.finfo(np.float64).eps * np.maximum(rounds - 1, 1)
        leaders = sums <= sums.min(axis=2, keepdims=True) + tol[:, None, None]
        actions = uniform_among_rows(leaders, round_uniforms(self.rng, k, 1)[:, :, 0])
        self.cum_loss = sums[-1].copy()
        return finish_block(self, actions)


@register(
    "hedge",
    private=False,
    summary="Hedge / exponential weights, rate fixed sqrt(8 ln N/T) or anytime sqrt(8 ln N/t)",
)
class Hedge(_FullInfoBaseline):
    """Hedge (exponential weights): play expert j with probability ∝ exp(-eta_t L_{t-1}(j)).

    Source: Freund & Schapire 1997; Cesa-Bianchi & Lugosi 2006, Thms 2.2 (fixed rate) and 2.3
    (anytime). Deviation: ``exp(-eta L)`` instead of Asi, Feldman, Koren & Talwar's
    ``(1 - eta)^L`` (the same algorithm under ``eta -> -ln(1 - eta)``).

    Args:
        eta: the fixed rate (``rate="fixed"`` only); default ``sqrt(8 ln N / T)``.
        rate: ``"fixed"`` (default) or ``"anytime"`` (``eta_t = sqrt(8 ln N / t)``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        eta: float | None = None,
        rate: str = "fixed",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.rate = check_choice("rate", rate, RATES)
        if eta is not None and self.rate == "anytime":
            raise ValueError(
                "eta applies to rate='fixed' only; rate='anytime' uses eta_t = sqrt(8 ln N / t)"
            )
        self.eta = hedge_eta(n_experts, horizon) if eta is None else _positive_eta(eta)
        self.reset(seed)

    def rate_at(self, round_index: int) -> float:
        """The learning rate of 1-indexed round ``round_index``."""
        if self.rate == "anytime":
            return math.sqrt(8.0 * math.log(self.n_experts) / round_index)
        return self.eta

    def _distribution(self, round_index: int) -> np.ndarray:
        return softmax(-self.rate_at(round_index) * self.cum_loss)

    def regret_bound(self, n_switches: int = 0) -> float | None:
        """Proven bound on the expected static regret, any adversary (None if ``n_switches``).

        Fixed rate: ``ln N / eta + eta T / 8``; anytime: ``2 sqrt(T ln N / 2) + sqrt(ln N / 8)``.
        """
        if n_switches:
            return None
        log_n, t = math.log(self.n_experts), self.horizon
        if self.rate == "anytime":
            return 2.0 * math.sqrt(t * log_n / 2.0) + math.sqrt(log_n / 8.0)
        return log_n / self.eta + self.eta * t / 8.0

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(self._distribution(self.t + 1))

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (see :mod:`agents._kernels`)."""
        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.empty((0, self.num_envs)))
        sums = accumulate(self.cum_loss, losses, self.t > 0)
        if self.rate == "anytime":
            rates = np.array([self.rate_at(r) for r in range(self.t + 1, self.t + k + 1)])
            logits = -rates[:, None, None] * sums
        else:
            logits = -self.eta * sums
        u = round_uniforms(self.rng, k, 1)[:, :, 0]
        actions = categorical_rows(softmax_rows(logits), u)
        self.cum_loss = sums[-1].copy()
        return finish_block(self, actions)


@register(
    "fixed-share",
    private=False,
    summary="Fixed-Share (Herbster-Warmuth) tuned for S switches: alpha=S/(T-1)",
)
class FixedShare(_FullInfoBaseline):
    """Fixed-Share: Hedge followed by mixing a fraction alpha of the mass uniformly.

    Source: Herbster & Warmuth 1998, as Cesa-Bianchi & Lugosi 2006, §5.2:
    ``w_{t+1} = (1 - alpha) softmax(log w_t - eta l_t) + alpha / N``, kept as log-weights.
    Deviation: the mixed mass goes to all N experts (C-B&L), not the N - 1 others.

    Args:
        n_switches: S >= 0, the switch budget the tuning targets (default 1; S >= T - 1 is tuned
            as T - 1).
        alpha: mixing rate; default from :func:`fixed_share_tuning`.
        eta: learning rate; default from :func:`fixed_share_tuning`.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_switches: int = 1,
        alpha: float | None = None,
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        # S >= T - 1 is the unconstrained comparator, the same as S = T - 1.
        tuned_for = min(self.n_switches, horizon - 1)
        default_alpha, default_eta = fixed_share_tuning(n_experts, horizon, tuned_for)
        self.alpha = default_alpha if alpha is None else check_probability("alpha", alpha)
        self.eta = default_eta if eta is None else _positive_eta(eta)
        self.reset(seed)

    def _init_state(self) -> None:
        self.log_weights = np.full((self.num_envs, self.n_experts), -math.log(self.n_experts))

    def _learn(self, obs: np.ndarray) -> None:
        posterior = log_softmax(self.log_weights - self.eta * obs)
        self.log_weights = log_mix_uniform(posterior, self.alpha)

    def regret_bound(self, n_switches: int = 0) -> float | None:
        """Proven bound on the expected regret against comparators with <= ``n_switches`` switches.

        The maximum over s <= ``n_switches`` of (C-B&L §5.2)
        ``((s + 1) ln N + s ln(1 / alpha) + (T - 1 - s) ln(1 / (1 - alpha))) / eta + eta T / 8``;
        None when infinite.
        """
        n, t, alpha, eta = self.n_experts, self.horizon, self.alpha, self.eta
        worst = 0.0
        for s in range(min(int(n_switches), t - 1) + 1):
            if (s and alpha == 0.0) or (t - 1 - s and alpha == 1.0):
                return None
            cost = (s + 1) * math.log(n)
            if s:
                cost += s * math.log(1.0 / alpha)
            if t - 1 - s:
                cost -= (t - 1 - s) * math.log1p(-alpha)
            worst = max(worst, cost / eta + eta * t / 8.0)
        return worst

    def _distribution(self, round_index: int) -> np.ndarray:
        return softmax(self.log_weights)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(self._distribution(self.t + 1))

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (see :mod:`agents._kernels`).

        The recursion's ``exp`` and ``log`` stay numpy calls (a kernel would not give numpy's
        floats); the draws and softmaxes are batched over the K rounds.
        """
        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.empty((0, self.num_envs)))
        weights = np.empty_like(losses)
        if 0.0 < self.alpha < 1.0 and jit_enabled():
            self._recursion_compiled(losses, weights)
        else:
            log_w = self.log_weights
            for i in range(k):
                if self.t + i > 0:
                    log_w = log_mix_uniform(log_softmax(log_w - self.eta * losses[i]), self.alpha)
                weights[i] = log_w
            self.log_weights = log_w
        u = round_uniforms(self.rng, k, 1)[:, :, 0]
        return finish_block(self, categorical_rows(softmax_rows(weights), u))


    def _recursion_compiled(self, losses: np.ndarray, weights: np.ndarray) -> None:
        """The K rounds' log-weights into ``weights`` via :func:`agents._kernels.mix_round`."""
        from agents import _kernels

        mix, totals = _kernels.mix_round.resolve(), _kernels.row_totals.resolve()
        b, n = self.num_envs, self.n_experts
        c1, c2 = float(np.log1p(-self.alpha)), float(np.log(self.alpha / n))
        steps = self.eta * losses  # (K, B, N): each row is the per-round product
        d, e = np.empty((b, n)), np.empty((b, n))
        total, lt = np.empty((b, 1)), np.zeros((b, 1))
        prev, pending = self.log_weights, False
        for i in range(len(losses)):
            if self.t + i > 0:
                mix(prev, pending, d, lt, c1, c2, steps[i], True)
                np.exp(d, out=e)
                totals(e, total)
                np.log(total, out=lt)
                prev, pending = weights[i], True
            else:
                weights[i] = prev
        if pending:  # the last round's mixing
            mix(prev, True, d, lt, c1, c2, steps[0], False)
        self.log_weights = weights[-1].copy()


@register(
    "shrinking-dartboard",
    private=False,
    summary="lazy Hedge (Geulen-Voecking-Winkler): Hedge's marginals, few switches",
)
class ShrinkingDartboard(_FullInfoBaseline):
    """The shrinking dartboard: a lazy sampler whose marginal law is exactly Hedge's.

    Source: Geulen, Vöcking & Winkler 2010, in exponential-weights form (Asi, Feldman, Koren &
    Talwar's Algorithm 1 uses ``(1 - eta)^l``). Round t >= 2 keeps ``J_{t-1}`` with probability
    ``exp(-eta l_{t-1}(J_{t-1}))``, else draws afresh from Hedge's law; so ``law(J_t)`` is Hedge's
    and the expected switches are at most ``eta T``. Losses must be >= 0 (ValueError otherwise).
    Uniforms: one in round 1, then two per round (coin and fresh draw, both always drawn).

    Args:
        eta: learning rate (> 0); default Hedge's ``sqrt(8 ln N / T)``. Fixed: a decreasing rate
            could make the stay probability exceed 1.

    Attributes:
        switches: (B,) rounds whose action differs from the previous one.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.eta = hedge_eta(n_experts, horizon) if eta is None else _positive_eta(eta)
        self.reset(seed)

    def _init_state(self) -> None:
        super()._init_state()
        self.stay_probability = np.ones(self.num_envs)
        self.switches = np.zeros(self.num_envs, dtype=np.int64)

    def _learn(self, obs: np.ndarray) -> None:
        if np.any(obs < 0.0):
            raise ValueError("shrinking-dartboard needs losses >= 0 (the stay probability is <= 1)")
        rows = np.arange(self.num_envs)
        self.stay_probability = np.exp(-self.eta * obs[rows, self.last_actions])
        self.cum_loss += obs

    def _distribution(self, round_index: int) -> np.ndarray:
        return softmax(-self.eta * self.cum_loss)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        if self.t == 0:
            return self.rng.categorical(self._distribution(1))
        stay = self.rng.random() < self.stay_probability
        fresh = self.rng.categorical(self._distribution(self.t + 1))
        actions = np.where(stay, self.last_actions, fresh)
        self.switches += actions != self.last_actions
        return actions

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once: fresh draws batched, stay-or-move in a kernel."""
        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.empty((0, self.num_envs)))
        first = self.t == 0
        sums = accumulate(self.cum_loss, losses, not first)
        # Round 1 draws one uniform (the fresh draw), every later round two (coin, then draw).
        u = self.rng.random((2 * k - int(first),))
        if first:
            u = np.concatenate([np.zeros((self.num_envs, 1)), u], axis=1)
        pairs = u.reshape(self.num_envs, k, 2).transpose(1, 0, 2)
        fresh = categorical_rows(softmax_rows(-self.eta * sums), pairs[:, :, 1])
        stay_factor = np.exp(-self.eta * losses)
        last = self.last_actions.copy()
        actions = dartboard_choices(
            stay_factor,
            np.ascontiguousarray(pairs[:, :, 0]),
            fresh,
            last,
            self.switches,
            self.stay_probability,
            first,
        )
        self.cum_loss = sums[-1].copy()
        return finish_block(self, actions)
