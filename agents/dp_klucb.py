"""DP-KLUCB: AdaP-UCB's private episodes with a KL-UCB index (stochastic bandits, pure eps-DP)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from agents.base import BanditObs
from agents.private import common_args
from agents.private_ucb import AdaPUCB
from agents.registry import register
from agents.ucb import kl_lower_bound
from dp_experts_env._validation import check_choice
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["DPKLUCB", "laplace_sum_width"]

#: the grid of u = b lambda over which :func:`laplace_sum_width` minimises its Chernoff bound
_U = np.linspace(0.005, 0.995, 199)


def laplace_sum_width(episodes: np.ndarray, level: float) -> np.ndarray:
    """``x / b`` with ``P(Z_1 + ... + Z_k > x) <= e^{-level}`` for k i.i.d. Laplace(b) draws.

    The Chernoff bound ``min_u (level - k ln(1 - u^2)) / u`` over a grid of u (conservative;
    docs/algorithms.md, "`dp-klucb`: derivation").

    Args:
        episodes: (...,) numbers of summed draws k (>= 1).
        level: ``alpha ln t``.
    """
    k = np.asarray(episodes, dtype=np.float64)[..., None]
    return np.min((level - k * np.log1p(-(_U**2))) / _U, axis=-1)


@register(
    "dp-klucb",
    private=True,
    summary="AdaP-KLUCB (Azize & Basu 2022): private KL-UCB on Laplace episode sums",
)
class DPKLUCB(AdaPUCB):
    """AdaP-UCB's episodes and releases with a KL-UCB index on the private means.

    Source: AdaP-KLUCB of Azize & Basu 2022 ("When Privacy Meets Partial Information",
    Section 5), with Garivier & Cappé 2011's KL bound. Episodes, releases and claim are
    :class:`~agents.private_ucb.AdaPUCB`'s (pure epsilon-DP, central, vs adaptive); an episode
    start plays the arm of least ``min{q <= m_i : n_i kl(m_i, q) <= alpha ln t_l} - w_i /
    (epsilon n_i)`` (post-processing). ``means="last"`` is the source's (the last episode);
    ``"all"`` (default, the suite's) reads every released episode with the width
    :func:`laplace_sum_width` (docs/algorithms.md, "`dp-klucb`: derivation"). ``alpha = 3.1``;
    epsilon = inf drops the noise. Deviations: losses, not rewards; 8 Newton steps; ties to
    the lowest arm.
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # AdaPUCB.play_bandit_block plays every episode end through these hooks; in its quiet rounds
    # (no episode ends) they do what AdaPUCB's do: _learn adds nothing, _choose keeps self.arm,
    # and the arrays _init_state adds are not touched.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset({"_choose", "_init_state", "_learn"})

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        epsilon: float = 1.0,
        delta: float | None = None,
        alpha: float = 3.1,
        means: str = "all",
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        self.means = check_choice("means", means, ("all", "last"))
        super().__init__(n_experts, horizon, alpha=alpha, **common_args(locals()))

    def _init_state(self) -> None:
        super()._init_state()
        b, k = self.num_envs, int(self.n_arms)
        self.released_sum = np.zeros((b, k))  # sum of an arm's released episode sums
        self.released_count = np.zeros((b, k))  # rounds in those episodes
        self.released_episodes = np.zeros((b, k))  # how many episodes (Laplace draws)

    def _learn(self, obs: BanditObs) -> None:
        super()._learn(obs)
        ended = self.episode_played >= self.episode_length  # the episodes just released
        if ended.any():
            rows, arms = self._rows[ended], self.arm[ended]
            length = self.last_length[rows, arms]
            self.released_sum[rows, arms] += self.private_mean[rows, arms] * length
            self.released_count[rows, arms] += length
            self.released_episodes[rows, arms] += 1

    def episode_index(self, round_index: int) -> np.ndarray:
        """(B, K) index ``q_i`` at an episode starting in round ``round_index`` (1-indexed)."""
        level = self.alpha * math.log(round_index)
        if self.means == "last":
            n, mean, width = self.last_length, self.private_mean, level
        else:
            n = self.released_count
            mean = self.released_sum / n
            width = laplace_sum_width(self.released_episodes, level) if self.is_private else 0.0
        index = kl_lower_bound(np.clip(mean, 0.0, 1.0), level / n)
        if self.is_private:
            index = index - width / (self.epsilon * n)
        return index

    def _choose(self, obs: BanditObs) -> np.ndarray:
        k = int(self.n_arms)
        if self.t < k:  # the first K episodes: each arm once
            return super()._choose(obs)
        ended = self.episode_played >= self.episode_length
        if ended.any():
            # t_l: the round about to be played (1-indexed)
            chosen = np.argmin(self.episode_index(self.t + 1), axis=1).astype(np.int64)
            self.arm = np.where(ended, chosen, self.arm)
            # Play until the arm's count doubles: as many rounds as all its earlier plays.
            self._start_episodes(ended, self.counts[self._rows, self.arm])
        return self.arm
