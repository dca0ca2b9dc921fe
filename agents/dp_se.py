"""DP-SE: private successive elimination for stochastic bandits (Sajed & Sheffet 2019)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._bandit_block import play_quiet_stretches, play_rounds, played_losses
from agents._kernels import own_hooks, plain_fast_backend
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
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["DPSE", "epoch_length", "elimination_margin"]


def _logs(epoch: np.ndarray, active: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    e2 = np.asarray(epoch, dtype=np.float64) ** 2 * np.asarray(active, dtype=np.float64)
    return np.log(8.0 * e2 / beta), np.log(4.0 * e2 / beta)


def epoch_length(
    epoch: np.ndarray, active: np.ndarray, beta: float, epsilon: float, scale: float = 1.0
) -> np.ndarray:
    """The epoch's pulls per arm ``R_e``, at least 1.

    ``R_e = ceil(scale max(32 ln(8|S|e^2/beta) / Delta_e^2, 8 ln(4|S|e^2/beta) / (eps Delta_e)))``,
    ``Delta_e = 2^-e``, ``|S|`` the arms in play (the privacy term is 0 at eps = inf).
    """
    gap = 2.0 ** -np.asarray(epoch, dtype=np.float64)
    stat_log, priv_log = _logs(epoch, active, beta)
    need = 32.0 * stat_log / gap**2
    if math.isfinite(epsilon):
        need = np.maximum(need, 8.0 * priv_log / (epsilon * gap))
    return np.maximum(1, np.ceil(scale * need)).astype(np.int64)


def elimination_margin(
    epoch: np.ndarray, active: np.ndarray, length: np.ndarray, beta: float, epsilon: float
) -> np.ndarray:
    """The elimination margin ``2 (h_e + c_e)`` of an epoch of ``R_e`` pulls per arm.

    ``h_e = sqrt(ln(8|S|e^2/beta) / (2 R_e))``, ``c_e = ln(4|S|e^2/beta) / (R_e eps)`` (0 at inf).
    """
    stat_log, priv_log = _logs(epoch, active, beta)
    r = np.asarray(length, dtype=np.float64)
    margin = np.sqrt(stat_log / (2.0 * r))
    if math.isfinite(epsilon):
        margin = margin + priv_log / (r * epsilon)
    return 2.0 * margin


@register(
    "dp-se",
    private=True,
    summary="DP-SE (Sajed & Sheffet 2019): private successive elimination, Laplace epoch means",
)
class DPSE(PrivateAgent):
    """DP-SE: successive elimination on Laplace-noised epoch means; pure epsilon-DP.

    Source: Sajed & Sheffet, "An Optimal Private Stochastic-MAB Algorithm Based on an Optimal
    Private Stopping Rule" (ICML 2019), DP-SE. Epoch e pulls each arm in play ``R_e`` times
    (:func:`epoch_length`), releases its loss sums with ``Lap(1/epsilon)`` and eliminates arms
    whose noisy mean exceeds the best by ``threshold_scale`` times :func:`elimination_margin`.
    Claim: pure epsilon-DP, central, vs adaptive (L1 sensitivity 1, disjoint epochs, the rest
    post-processing); each run releases every round (data-free zeros mid-epoch) so batches
    equal single runs.

    Args:
        n_experts, horizon, epsilon, mode, noise, num_envs, seed: as
            :class:`~agents.private.PrivateAgent` (delta must be 0; ``mode="paper"`` equals
            ``"strict"``; tuning ``"paper"`` only).
        n_arms: K (>= 2).
        beta: confidence of the eliminations (default ``1/T``, the regret theorem's).
        epoch_scale, threshold_scale: multiply ``R_e`` and the margin (default 1; public, the
            claim holds for every value).

    Deviations: losses, not rewards; round-robin pulls from a uniformly drawn first arm;
    ``R_e`` rounded up; losses clipped; constants from the standard statement, the pseudo-code
    not at hand (docs/algorithms.md, "`dp-se`").
    """

    feedback = "bandit"
    pure_dp = True
    tunings = ("paper",)
    default_tuning = "paper"
    claim_summary = "pure eps-DP: Laplace on each epoch's per-arm loss sums, disjoint epochs"
    #: one-round epochs and a zero margin: the first release decides the plays (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"epoch_scale": 0.0, "threshold_scale": 0.0}
    }

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        epsilon: float = 1.0,
        delta: float | None = None,
        beta: float | None = None,
        epoch_scale: float = 1.0,
        threshold_scale: float = 1.0,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.beta = (
            1.0 / self.horizon
            if beta is None
            else check_float("beta", beta, minimum=0.0, maximum=1.0, min_inclusive=False)
        )
        self.epoch_scale = check_float("epoch_scale", epoch_scale, minimum=0.0)
        self.threshold_scale = check_float("threshold_scale", threshold_scale, minimum=0.0)
        # One epoch's (K,) sums move by at most 1 in L1 when one round's loss is replaced.
        self.noise_scale = self._calibrate_laplace(1.0, dim=int(self.n_arms))
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP: Laplace on disjoint epochs' loss sums (parallel composition)."""
        return self._declared_claim(
            source="DP-SE: disjoint epochs, eliminations and plays are post-processing",
            notes="open epoch at round T never released; releases of data-free zeros cost "
            "nothing",
        )

    @property
    def declaration(self) -> Mechanism:
        """Each ended epoch's per-arm loss sums (L1 sensitivity 1) + Laplace, disjoint epochs."""
        k = int(self.n_arms)
        return PostProcessing(
            Parallel(
                LaplaceRelease(
                    "an ended epoch's loss sum of each arm in play",
                    (k,),
                    self.noise.effective_sensitivity(1.0, k),
                    float(self.noise_scale),
                ),
                "disjoint epochs (a loss enters one epoch's sums)",
            ),
            "the eliminations and the plays",
        )

    def _init_state(self) -> None:
        b, k = self.num_envs, int(self.n_arms)
        self.active = np.ones((b, k), dtype=bool)  # S: the arms in play
        self.epoch = np.ones(b, dtype=np.int64)  # e (1-based)
        self.length = self._length(self.epoch, np.full(b, k))  # R_e
        self.position = np.zeros(b, dtype=np.int64)  # rounds played in the epoch
        self.sums = np.zeros((b, k))  # the epoch's loss sums
        self.private_mean = np.full((b, k), np.nan)  # the last released means
        self.releases = np.zeros(b, dtype=np.int64)  # ended epochs per run
        self.arm = np.zeros(b, dtype=np.int64)
        self.offset = np.zeros(b, dtype=np.int64)  # the epoch's first arm: its rank in S
        self._rows = np.arange(b)

    def _length(self, epoch: np.ndarray, active: np.ndarray) -> np.ndarray:
        return epoch_length(epoch, active, self.beta, self.epsilon, self.epoch_scale)

    def _learn(self, obs: BanditObs) -> None:
        if not np.array_equal(obs.last_action, self.last_actions):
            raise ValueError(
                f"obs['last_action'] {obs.last_action.tolist()} differs from the arms this agent "
                f"played {self.last_actions.tolist()}; reset the agent whenever the env is reset"
            )
        self.sums[self._rows, self.arm] += np.clip(obs.last_loss, 0.0, 1.0)
        self.position += 1
        count = self.active.sum(axis=1)
        ended = (self.position >= self.length * count) & (count > 1)
        # Every run releases every round: its ended epoch's sums, or data-free zeros.
        values = np.where(ended[:, None], self.sums, 0.0)
        noisy = (
            values
            if self.noise_scale == 0.0
            else self.noise.add_laplace(self.rng, values, self.noise_scale)
        )
        if not ended.any():
            return
        rows = self._rows[ended]
        means = noisy[rows] / self.length[rows, None]
        best = np.min(np.where(self.active[rows], means, np.inf), axis=1)
        margin = self.threshold_scale * elimination_margin(
            self.epoch[rows], count[rows], self.length[rows], self.beta, self.epsilon
        )
        self.active[rows] &= means - best[:, None] <= margin[:, None]
        self.private_mean[rows] = np.where(self.active[rows], means, np.nan)
        self.releases[rows] += 1
        self.epoch[rows] += 1
        self.length[rows] = self._length(self.epoch[rows], self.active[rows].sum(axis=1))
        self.position[rows] = 0
        self.sums[rows] = 0.0

    def _choose(self, obs: BanditObs) -> np.ndarray:
        # One uniform per run every round; at an epoch's first round it picks the first arm.
        u = self.rng.random()
        count = self.active.sum(axis=1)
        start = np.floor(u * count).astype(np.int64)
        self.offset = np.where(self.position == 0, start, self.offset)
        # The epoch's round `position` plays the ((offset + position) mod |S|)-th arm of S.
        slot = (self.offset + self.position) % count
        rank = np.cumsum(self.active, axis=1) - 1
        self.arm = np.argmax(self.active & (rank == slot[:, None]), axis=1).astype(np.int64)
        return self.arm

    def play_bandit_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """(K, b) actions of K rounds, bit for bit those of K ``act`` calls (the block protocol).

        Rounds where no run's epoch ends are whole-array operations (:meth:`_play_quiet`); the
        first round and every epoch end go through :meth:`act`'s hooks. Another noise backend
        than the plain ``fast`` one (``grid``, the audit's wrappers), a subclass with its own
        hooks and a block past the horizon play through ``act``.
        """
        k = int(losses.shape[0])
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        plain = own_hooks(self, DPSE) and plain_fast_backend(self.noise)
        if self.t + k > self.horizon or not plain:
            play_rounds(self, first, advice, losses, rows, actions, 0, k)
            return actions
        play_quiet_stretches(
            self, first, advice, losses, rows, actions, self._quiet_steps, self._play_quiet
        )
        return actions

    def _quiet_steps(self) -> int:
        """Learning steps from now on before the first epoch end of any run (that one excluded).

        A run with one arm left never ends its epoch.
        """
        count = self.active.sum(axis=1)
        open_ = count > 1
        if not open_.any():
            return self.horizon
        need = self.length[open_] * count[open_] - self.position[open_]
        return int(np.min(need)) - 1

    def _play_quiet(
        self, losses: np.ndarray, rows: np.ndarray, actions: np.ndarray, lo: int, hi: int
    ) -> None:
        """Block rounds ``lo..hi-1`` where no epoch ends: ``_learn`` and ``_choose`` in bulk."""
        s, k = hi - lo, int(self.n_arms)
        self._quiet_draws(s)
        # Round j of the segment plays the ((offset + position + j + 1) mod |S|)-th arm of S.
        count = self.active.sum(axis=1)
        order = np.argsort(~self.active, axis=1, kind="stable")  # S in ascending order first
        steps = np.arange(1, s + 1)
        slot = (self.offset[:, None] + self.position[:, None] + steps) % count[:, None]
        arms = np.take_along_axis(order, slot, axis=1).astype(np.int64)  # (b, s)
        actions[lo:hi] = arms.T
        # sums[r, arm] += loss round after round: a dense accumulation (+ 0.0 is exact).
        clipped = np.clip(played_losses(losses, rows, actions, lo - 1, hi - 1), 0.0, 1.0)
        played = actions[lo - 1 : hi - 1]
        dense = np.zeros((s + 1, self.num_envs, k))
        dense[0] = self.sums
        dense[np.arange(1, s + 1)[:, None], self._rows[None, :], played] = clipped
        self.sums = np.add.accumulate(dense, axis=0)[-1].copy()
        self.position = self.position + s
        self.arm = arms[:, -1].copy()
        self.t += s
        self.last_actions = actions[hi - 1].copy()

    def _quiet_draws(self, s: int) -> None:
        """The draws of ``s`` quiet rounds, all unread.

        Per round, in ``act``'s order: the release's K Laplace variates (the noise on data-free
        zeros) and the choice's uniform.
        """
        if self.noise_scale == 0.0:
            self.rng.random((s,))
            return
        k = int(self.n_arms)
        u = self.rng.random((s, k + 1))
        samplers.laplace(u[:, :, :k], self.noise_scale)
