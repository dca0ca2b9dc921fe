"""DP-KLUCB: AdaP-UCB's private episodes with a KL-UCB index (stochastic bandits, pure eps-DP).

Source: the AdaP-KLUCB variant of Azize & Basu 2022 ("When Privacy Meets Partial Information",
Section 5): the doubling episodes and the Laplace releases of ``adap-ucb`` (each loss in one
released episode sum), with the Bernoulli-KL confidence bound of KL-UCB (Garivier & Cappé 2011)
in place of Hoeffding's. Only the index changes (a post-processing of the same releases), so the
privacy claim is AdaP-UCB's. By default the index reads every released episode of an arm, not
only the last (the suite's variant; ``means="last"`` is the source's forgetting).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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

    Chernoff: ``E e^{lambda Z} = 1 / (1 - b^2 lambda^2)`` for ``b lambda < 1``, so ``P(S > x)
    <= exp(-lambda x) (1 - b^2 lambda^2)^{-k}``, at most ``e^{-level}`` when ``x >= b (level -
    k ln(1 - u^2)) / u`` with ``u = b lambda``. The minimum over a grid of u in (0, 1) is taken
    (at least the true minimum: the width is conservative). For k = 1 it is close to the
    exact ``level - ln 2`` (20% above it at alpha ln t = 3.1 ln 1000); for k episodes it grows
    like ``sqrt(k level)``, not like k.

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

    Source: AdaP-KLUCB of Azize & Basu 2022 ("When Privacy Meets Partial Information: A
    Refined Analysis of Differentially Private Bandits", Section 5), in the loss frame, with the
    KL bound of Garivier & Cappé 2011. Episodes, releases and privacy are those of
    :class:`~agents.private_ucb.AdaPUCB`: each arm once, then at an episode start (round
    ``t_l``) the arm with the lowest

        ``q_i = min{q <= m_i : n_i kl(m_i, q) <= alpha ln t_l} - alpha ln t_l / (epsilon n_i)``

    (with ``means="last"``, the source's: ``m_i = clip(Ltilde_i, 0, 1)``, ``Ltilde_i`` the
    private mean of arm i's last episode, ``n_i`` its length) is played until its count
    doubles: AdaP-UCB's index with the KL bound in place of Hoeffding's ``m_i - sqrt(alpha ln
    t_l / (2 n_i))``, which it never exceeds (Pinsker: ``kl(p, q) >= 2 (p - q)^2``), and the
    same privacy term (the Laplace noise's confidence width). The bound is computed by
    :func:`~agents.ucb.kl_lower_bound`.

    ``means="all"`` (default, the suite's variant): ``m_i`` is the total of all k_i released
    episode sums of arm i over their n_i rounds (every play but the open episode's), and the
    privacy term ``w(k_i) / (epsilon n_i)`` uses the Chernoff width of a sum of k_i Laplace
    draws at the same confidence (:func:`laplace_sum_width`), about ``sqrt(k_i)`` where k_i
    separate widths would add. The same releases are read: the claim does not change.

    Privacy claim: pure ``epsilon``-DP, central, against adaptive adversaries -- the releases
    are AdaP-UCB's (one Laplace release per ended episode, sensitivity 1, disjoint episodes);
    the index is post-processing.

    Tuning (public constants only): ``alpha = 3.1`` as AdaP-UCB's; ``epsilon=math.inf`` drops
    the noise and the privacy term (KL-UCB on the same episodes and exact means).
    Deviations: the source's index is on rewards; here on ``1 - loss`` (a lower bound on the
    mean loss); Newton's method with a fixed 8 steps for the bound; index ties to the lowest
    arm. Per-round cost O(K x 8) (O(K x 200) for the width) at an episode start, O(1)
    otherwise; memory O(K).
    """

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
        """(B, K) index ``q_i`` at an episode starting in round ``round_index`` (1-indexed).

        Post-processing of the released episode sums (covered by the claim).
        """
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
