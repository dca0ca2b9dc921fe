"""Batched noisy Fixed-Share: a pure-DP tracker that releases each block's loss sums once.

Derivation of the block length and rates: docs/algorithms.md (``private-fixed-share``: derivation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._simplex import log_mix_uniform, log_softmax, softmax
from agents.base import PrivacyClaim, clip_unit
from agents.full_info import fixed_share_tuning
from agents.noisy_clipped_hedge import calibrated_eta
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._validation import check_float, check_int, check_probability
from dp_experts_env.privacy.declaration import LaplaceRelease, Mechanism, Parallel, PostProcessing
from dp_experts_env.privacy.mechanisms import laplace_calibration, laplace_mechanism
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["PrivateFixedShare", "default_block", "block_tuning"]


def default_block(n_experts: int, horizon: int, epsilon: float) -> int:
    """The block length ``m = round(sqrt(8) N / epsilon)``, in [1, T] (1 at epsilon = inf).

    The minimiser of the bound :func:`block_tuning` tunes with, from N, T, epsilon only.
    """
    if math.isinf(epsilon):
        return 1
    return int(min(max(1, round(math.sqrt(8.0) * n_experts / epsilon)), horizon))


def block_tuning(
    n_experts: int, horizon: int, n_switches: int, block: int, noise_scale: float
) -> tuple[float, float]:
    """Fixed-Share's ``(alpha, eta)`` for the game of ``ceil(T / m)`` blocks, eta per loss sum.

    ``alpha = S / (K - 1)`` over the K blocks; eta is noisy-clipped-hedge's calibrated rate on the
    block means with noise scale ``b / m`` (``b`` the scale on the sums), divided by m. With no
    noise and m = 1 this is Fixed-Share's tuning.

    Returns:
        ``(alpha, eta)`` with eta the rate applied to a block's loss sums.
    """
    k = -(-horizon // block)
    s = min(n_switches, k - 1)
    alpha, eta = fixed_share_tuning(n_experts, k, s)
    if noise_scale > 0.0:
        eta = calibrated_eta(n_experts, k, s, noise_scale / block)
    return alpha, eta / block


@register(
    "private-fixed-share",
    private=True,
    summary="batched noisy Fixed-Share: each block's loss sums + Lap(N/eps) released once",
)
class PrivateFixedShare(PrivateAgent):
    """Fixed-Share over blocks of m rounds, each block's loss sums released once with Laplace.

    Source: Fixed-Share (Herbster & Warmuth 1998; Cesa-Bianchi & Lugosi 2006, §5.2) on the blocking
    reduction (Merhav, Ordentlich, Seroussi & Weinberger 2002) with the Laplace mechanism (Dwork &
    Roth, Thm 3.6): a private tracking baseline of the suite, in none of its papers.

    A finished block's sums (losses clipped to [0, 1]) are released as ``L + Lap(N / epsilon)`` per
    coordinate, then ``w = (1 - alpha) softmax(log w - eta L~) + alpha / N``; rounds play
    ``J_t ~ w`` with fresh coins; the last, unfinished block is never released. Claim: pure
    epsilon-DP against adaptive adversaries (L1 sensitivity N, disjoint blocks). At epsilon = inf:
    ``fixed-share``'s floats and draws. ``mode`` and ``tuning`` change nothing.

    Args:
        n_experts: N (others: see :class:`~agents.private.PrivateAgent`).
        n_switches: S, the comparator's switch budget (public; ``agents.make`` passes the env's).
        block: block length m override (1 <= m <= T; default :func:`default_block`).
        alpha: mixing rate override in [0, 1] (also ``eta`` > 0 on the sums; :func:`block_tuning`).
    """

    tunings = ("calibrated",)
    #: the audit's scenarios: blocks of 2 (a short game releases the changed round), per-round
    #: releases and a high rate
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"block": 2},
        "exposed": {"block": 1, "eta": 100.0},
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
        n_switches: int = 1,
        block: int | None = None,
        alpha: float | None = None,
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        n, t = self.n_experts, self.horizon
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        if block is None:
            self.block = default_block(n, t, self.epsilon)
        else:
            self.block = check_int("block", block, minimum=1, maximum=t)
        # The scale laplace_mechanism adds to each coordinate of a block's sums (0 at inf).
        self.noise_scale = laplace_calibration(float(n), self.epsilon, noise=self.noise, dim=n)[0]
        default_alpha, default_eta = block_tuning(
            n, t, self.n_switches, self.block, self.noise_scale
        )
        self.alpha = default_alpha if alpha is None else check_probability("alpha", alpha)
        if eta is None:
            self.eta = default_eta
        else:
            self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        self.reset(seed)

    @property
    def releases(self) -> int:
        """Blocks released in a game of T rounds: ``floor((T - 1) / m)`` (round T is never fed)."""
        return (self.horizon - 1) // self.block

    @property
    def declaration(self) -> Mechanism:
        """Each full block's loss sums released once with Laplace noise (L1 sensitivity N)."""
        n = self.n_experts
        return PostProcessing(
            Parallel(
                LaplaceRelease(
                    "the block's loss sums",
                    (n,),
                    self.noise.effective_sensitivity(float(n), dim=n),
                    self.noise_scale,
                ),
                f"blocks of {self.block} rounds (each loss vector enters one block's sums)",
                copies=self.releases,
            ),
            "the Fixed-Share plays",
        )

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP against adaptive adversaries, composed from :attr:`declaration`."""
        return self._declared_claim(
            source="batched noisy Fixed-Share: Laplace mechanism, parallel composition"
        )

    def action_distribution(self) -> np.ndarray:
        """(B, N) law of the action the last ``act`` returned (uniform before any)."""
        return softmax(self.log_weights)

    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self.log_weights = np.full((b, n), -math.log(n))
        self.block_sums = np.zeros((b, n))

    def noise_uniforms(self) -> int:
        """Uniforms per run a release reads (``fast``; 0 at epsilon = inf)."""
        return self.n_experts * samplers.LAPLACE_UNIFORMS if self.noise_scale > 0.0 else 0

    def _learn(self, obs: np.ndarray) -> None:
        self.block_sums += clip_unit(obs)  # the sensitivity bound assumes losses in [0, 1]
        if self.t % self.block:
            return  # the block goes on: nothing is released
        noisy = laplace_mechanism(
            self.block_sums,
            l1_sensitivity=float(self.n_experts),
            epsilon=self.epsilon,
            rng=self.rng,
            noise=self.noise,
        ).value
        posterior = log_softmax(self.log_weights - self.eta * noisy)
        self.log_weights = log_mix_uniform(posterior, self.alpha)
        self.block_sums = np.zeros_like(self.block_sums)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(softmax(self.log_weights))

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (see :mod:`agents._kernels`), bit for bit.

        One read of the stream for the block (``fast`` backend; others round by round); the law is
        fixed between releases, so the softmaxes and draws are taken at once.
        """
        from agents._kernels import (
            PLAY_UNIFORMS,
            categorical_rows,
            check_block,
            finish_block,
            plain_fast_backend,
            softmax_rows,
        )

        losses = check_block(self, obs)
        k, b, n = losses.shape
        if k == 0:
            return finish_block(self, np.empty((0, b)))
        if not plain_fast_backend(self.noise):
            return np.array([self.act(row) for row in losses], dtype=np.int64).reshape(k, -1)
        clipped = clip_unit(losses)
        fed = self.t + np.arange(k)  # round whose loss row i feeds (0: nothing, round 1)
        release = (fed > 0) & (fed % self.block == 0)
        draws = self.noise_uniforms()
        # Per run: [the release's uniforms if round i releases] then its play's.
        width = PLAY_UNIFORMS + draws * release
        ends = np.cumsum(width)
        u = self.rng.random((int(ends[-1]),))
        laws = np.empty_like(clipped)
        for i in range(k):
            if fed[i] > 0:
                self.block_sums += clipped[i]
            if release[i]:
                noisy = self.block_sums
                if draws:
                    start = int(ends[i]) - PLAY_UNIFORMS - draws
                    noisy = noisy + samplers.laplace(u[:, start : start + draws], self.noise_scale)
                else:
                    noisy = noisy.copy()
                posterior = log_softmax(self.log_weights - self.eta * noisy)
                self.log_weights = log_mix_uniform(posterior, self.alpha)
                self.block_sums = np.zeros_like(self.block_sums)
            laws[i] = self.log_weights
        plays = np.ascontiguousarray(u[:, ends - PLAY_UNIFORMS].T)  # (K, B)
        return finish_block(self, categorical_rows(softmax_rows(laws), plays))

