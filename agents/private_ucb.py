"""A private UCB for stochastic bandits: AdaP-UCB (arm-specific doubling episodes + Laplace)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agents._bandit_block import play_quiet_stretches, play_rounds, played_losses
from agents._kernels import plain_fast_backend
from agents.base import BanditObs, PrivacyClaim
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._validation import check_float
from dp_experts_env.privacy.declaration import (
    LaplaceRelease,
    Mechanism,
    Parallel,
    PostProcessing,
)
from dp_experts_env.privacy.mechanisms import laplace_mechanism
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["AdaPUCB"]


@register(
    "adap-ucb",
    private=True,
    summary="AdaP-UCB (Azize & Basu 2022): private UCB, doubling episodes, Laplace episode sums",
)
class AdaPUCB(PrivateAgent):
    """AdaP-UCB: a pure epsilon-DP UCB with arm-specific doubling episodes.

    Source: Azize & Basu 2022, "When Privacy Meets Partial Information: A Refined Analysis of
    Differentially Private Bandits" (NeurIPS 2022), Algorithm 2 (AdaP-UCB), in the loss frame.

    After one play of each arm, an episode plays
    ``argmin_i Ltilde_i - sqrt(alpha ln t_l / (2 n_i)) - alpha ln t_l / (epsilon n_i)`` until its
    play count doubles; ``Ltilde_i`` is the last episode's sum plus ``Lap(1/epsilon)`` over its
    length. Claim: pure epsilon-DP, central, against adaptive adversaries (disjoint episode sums of
    sensitivity 1); the episode open at round T is never released. Every run releases every round (a
    data-free 0 mid-episode), so a batch equals single runs. Deviations: the index on ``1 - loss``;
    clipped losses; ties to the lowest arm.

    Args:
        n_experts: N (also ``horizon``, ``n_arms``: as :class:`~agents.ucb.UCB1`; ``mode``,
            ``tuning`` (``"paper"`` only), ``noise``, ``num_envs``, ``seed``).
        epsilon: privacy parameter (> 0, or ``math.inf``); delta must be 0.
        alpha: exploration constant (default 3.1 > 3, public).
    """

    feedback = "bandit"
    pure_dp = True
    tunings = ("paper",)
    default_tuning = "paper"
    claim_summary = "pure eps-DP: Laplace on each episode's loss sum, disjoint episodes"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        epsilon: float = 1.0,
        delta: float | None = None,
        alpha: float = 3.1,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.alpha = check_float("alpha", alpha, minimum=0.0, min_inclusive=False)
        # One episode's loss sum moves by at most 1 when one round's loss vector is replaced.
        self.noise_scale = self._calibrate_laplace(1.0)
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP: Laplace on disjoint episode sums (parallel composition)."""
        return self._declared_claim(
            source="AdaP-UCB: disjoint episodes, actions are post-processing",
            notes="open episode at round T never released; releases of data-free zeros cost "
            "nothing",
        )

    @property
    def declaration(self) -> Mechanism:
        """Each ended episode's loss sum (sensitivity 1) + Laplace, one per disjoint episode."""
        return PostProcessing(
            Parallel(
                LaplaceRelease(
                    "an ended episode's loss sum (one arm's losses over its episode)",
                    (1,),
                    self.noise.effective_sensitivity(1.0, 1),
                    float(self.noise_scale),
                ),
                "disjoint episodes (a loss enters one episode sum)",
            ),
            "the UCB index and the plays",
        )

    def _init_state(self) -> None:
        b, k = self.num_envs, int(self.n_arms)
        self.private_mean = np.zeros((b, k))  # Ltilde: last episode's released mean loss
        self.last_length = np.zeros((b, k), dtype=np.int64)  # n_i: last episode's length
        self.counts = np.zeros((b, k), dtype=np.int64)  # all plays of each arm
        self.arm = np.zeros(b, dtype=np.int64)  # the current episode's arm
        self.episode_length = np.ones(b, dtype=np.int64)
        self.episode_played = np.zeros(b, dtype=np.int64)
        self.episode_sum = np.zeros(b)
        self.episodes = np.zeros(b, dtype=np.int64)  # released episodes per run
        self._rows = np.arange(b)

    def _learn(self, obs: BanditObs) -> None:
        if not np.array_equal(obs.last_action, self.last_actions):
            raise ValueError(
                f"obs['last_action'] {obs.last_action.tolist()} differs from the arms this agent "
                f"played {self.last_actions.tolist()}; reset the agent whenever the env is reset"
            )
        self.episode_sum += np.clip(obs.last_loss, 0.0, 1.0)
        self.episode_played += 1
        self.counts[self._rows, self.arm] += 1
        ended = self.episode_played >= self.episode_length
        # Every run releases every round: the ended episodes' sums, a data-free 0 for the others.
        noisy = laplace_mechanism(
            np.where(ended, self.episode_sum, 0.0),
            l1_sensitivity=1.0,
            epsilon=self.epsilon,
            rng=self.rng,
            noise=self.noise,
        ).value
        if ended.any():
            rows, arms = self._rows[ended], self.arm[ended]
            self.private_mean[rows, arms] = noisy[ended] / self.episode_length[ended]
            self.last_length[rows, arms] = self.episode_length[ended]
            self.episodes += ended

    def _choose(self, obs: BanditObs) -> np.ndarray:
        k = int(self.n_arms)
        if self.t < k:  # the first K episodes: each arm once
            self.arm = np.full(self.num_envs, self.t, dtype=np.int64)
            self._start_episodes(np.ones(self.num_envs, dtype=bool), np.ones(self.num_envs))
            return self.arm
        ended = self.episode_played >= self.episode_length
        if ended.any():
            log_t = math.log(self.t + 1)  # t_l: the round about to be played (1-indexed)
            n = self.last_length
            index = self.private_mean - np.sqrt(self.alpha * log_t / (2.0 * n))
            if math.isfinite(self.epsilon):
                index -= self.alpha * log_t / (self.epsilon * n)
            chosen = np.argmin(index, axis=1).astype(np.int64)
            self.arm = np.where(ended, chosen, self.arm)
            # Play until the arm's count doubles: as many rounds as all its earlier plays.
            self._start_episodes(ended, self.counts[self._rows, self.arm])
        return self.arm

    def play_bandit_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """(K, b) actions of K rounds, bit for bit those of K ``act`` calls (the block protocol).

        Rounds where no run's episode ends are whole-array operations (:meth:`_play_quiet`); the
        first round, the round robin and every episode end go through :meth:`act`'s hooks. The
        ``grid`` backend, the audit's wrappers and a block past the horizon play through ``act``.
        """
        k = int(losses.shape[0])
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        if self.t + k > self.horizon or not plain_fast_backend(self.noise):
            play_rounds(self, first, advice, losses, rows, actions, 0, k)
            return actions
        play_quiet_stretches(
            self, first, advice, losses, rows, actions, self._quiet_steps, self._play_quiet
        )
        return actions

    def _quiet_steps(self) -> int:
        """Learning steps before the first episode end of any run (none in the round robin)."""
        if self.t < int(self.n_arms):
            return 0
        return int(np.min(self.episode_length - self.episode_played)) - 1

    def _play_quiet(
        self, losses: np.ndarray, rows: np.ndarray, actions: np.ndarray, lo: int, hi: int
    ) -> None:
        """Block rounds ``lo..hi-1`` where no episode ends: ``_learn`` and ``_choose`` in bulk."""
        s = hi - lo
        actions[lo:hi] = self.arm
        clipped = np.clip(played_losses(losses, rows, actions, lo - 1, hi - 1), 0.0, 1.0)
        # episode_sum += loss round after round: accumulate (sequential), not pairwise.
        total = np.add.accumulate(np.concatenate([self.episode_sum[None], clipped]))
        self.episode_sum = total[-1].copy()
        self.episode_played = self.episode_played + s
        self.counts[self._rows, self.arm] += s
        if math.isfinite(self.epsilon):
            # Every round releases (a data-free 0 here) with one Laplace draw per run, unread.
            samplers.laplace(self.rng.random((s,)), self.noise_scale)
        self.t += s
        self.last_actions = actions[hi - 1].copy()

    def _start_episodes(self, mask: np.ndarray, lengths: np.ndarray) -> None:
        self.episode_length = np.where(mask, lengths, self.episode_length).astype(np.int64)
        self.episode_played = np.where(mask, 0, self.episode_played)
        self.episode_sum = np.where(mask, 0.0, self.episode_sum)
