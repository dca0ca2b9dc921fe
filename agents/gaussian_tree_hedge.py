"""Gaussian-tree Hedge: entropic FTRL on running loss sums of a binary tree with Gaussian nodes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._simplex import softmax
from agents.base import PrivacyClaim, clip_unit
from agents.full_info import hedge_eta
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._validation import check_float
from dp_experts_env.privacy.declaration import Mechanism, PostProcessing, TreeAggregation
from dp_experts_env.privacy.gaussian import gaussian_tree_calibration
from dp_experts_env.privacy.mechanisms import tree_levels
from dp_experts_env.privacy.noise import NoiseBackend, noise_multiplier

__all__ = ["GaussianTreeHedge"]


@register(
    "gaussian-tree-hedge",
    private=True,
    summary="(eps, delta) baseline: Hedge on binary-tree loss sums with Gaussian node noise",
)
class GaussianTreeHedge(PrivateAgent):
    """Hedge (entropic FTRL) on the running loss sums of a binary tree with Gaussian nodes.

    Source: DP-FTRL (Jain & Thakurta 2014; Agarwal & Singh 2017) with Kairouz et al. 2021's
    Gaussian nodes (Alg. 1) and Dong, Roth & Su 2019's Gaussian-DP composition: ``dp-ftrl-tree``
    with ``N(0, sigma^2)`` nodes, a baseline added by the suite. Claim: (epsilon, delta)-DP vs
    adaptive adversaries; sigma is the smallest whose ``mu = sqrt(levels N) / sigma`` meets it
    by the exact Gaussian profile
    (:func:`~dp_experts_env.privacy.gaussian.gaussian_tree_calibration`; docs/algorithms.md,
    "`gaussian-tree-hedge`: derivation"). ``eta`` defaults to Hedge's; epsilon = inf is
    ``hedge`` bit for bit; ``fast`` noise only (an audit multiplier scales sigma, not the
    claim); ``mode`` is ignored. Deviations: losses clipped to [0, 1].

    Args:
        eta: rate override (> 0).
        (others: see :class:`~agents.private.PrivateAgent`; ``delta`` > 0 at finite epsilon.)

    Attributes:
        levels, node_scale (sigma per node coordinate, before an audit multiplier), eta.
    """

    default_delta = 1e-6
    tunings = ("calibrated",)
    noise_backends = ("fast",)
    noise_refusal = (
        "its Gaussian node noise is drawn by the learner's own stream, and the lattice backend "
        "has Laplace noise only"
    )
    #: the audit's scenarios (privacy holds for every public rate): a high rate, so the plays
    #: follow the noisy sums' leader and a missing noise shows on the actions
    audit_hints: ClassVar[Mapping[str, Any]] = {"params": {"eta": 100.0}}

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
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        if self.is_private and not self.delta > 0.0:
            raise ValueError("delta must be > 0: a Gaussian mechanism is never pure DP")
        n, t = self.n_experts, self.horizon
        self._items = max(1, t - 1)  # the tree holds the T - 1 losses a game feeds it
        self.levels = tree_levels(self._items)
        self.l2_sensitivity = math.sqrt(n)
        self.node_scale, _ = gaussian_tree_calibration(
            self.l2_sensitivity, self.levels, self.epsilon, self.delta
        )
        if eta is not None:
            self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        else:
            self.eta = hedge_eta(n, t) if n > 1 else 1.0
        self.reset(seed)

    @property
    def declaration(self) -> Mechanism:
        """A Gaussian binary tree of the running loss vectors (L2 sensitivity sqrt(N))."""
        return PostProcessing(
            TreeAggregation(
                "the running sums of the loss vectors",
                leaves=self._items,
                levels=self.levels,
                shape=(self.n_experts,),
                sensitivity=self.l2_sensitivity,
                scale=self.node_scale,
                noise="gaussian",
                delta=self.delta,
                profile="gdp",
            ),
            "Hedge's plays on the noisy sums",
        )

    @property
    def privacy(self) -> PrivacyClaim:
        """(epsilon, delta)-DP by the exact Gaussian profile of the tree; plays post-processed."""
        return self._declared_claim(source="Gaussian-DP composition, Dong, Roth & Su 2019")

    def action_distribution(self) -> np.ndarray:
        """(B, N) law of the action the last ``act`` returned: Hedge on the noisy sums."""
        return softmax(-self.eta * self._sums)

    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self._sums = np.zeros((b, n))
        self._exact = np.zeros((b, self.levels, n))  # exact sums of the open dyadic nodes
        self._noisy = np.zeros((b, self.levels, n))  # the released noisy nodes
        self._count = 0

    def _learn(self, obs: np.ndarray) -> None:
        losses = clip_unit(obs)  # the sensitivity bound assumes losses in [0, 1]
        if self.node_scale == 0.0:  # epsilon = inf: the exact running sums (Hedge)
            self._sums = self._sums + losses
            return
        self._count += 1
        t = self._count
        level = (t & -t).bit_length() - 1  # the node completing at t
        node = self._exact[:, :level].sum(axis=1) + losses
        self._exact[:, level] = node
        self._exact[:, :level] = 0.0
        sigma = noise_multiplier(self.noise) * self.node_scale
        self._noisy[:, level] = node + sigma * self.rng.normal((self.n_experts,))
        bits = [j for j in range(self.levels) if (t >> j) & 1]
        self._sums = self._noisy[:, bits].sum(axis=1)

    def noise_uniforms(self) -> int:
        """Uniforms per run a learning round's node noise reads (Box-Muller; 0 at epsilon = inf)."""
        return self.n_experts * samplers.NORMAL_UNIFORMS if self.node_scale > 0.0 else 0

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(self.action_distribution())

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once, bit for bit (the tree in ``tree_block``).

        Per learning round 2N Box-Muller uniforms then the play's, in one read. Epsilon = inf, an
        audit wrapper, N = 1 or the numpy path play through ``act``.
        """
        from agents._kernels import (
            PLAY_UNIFORMS,
            block_uniforms,
            categorical_rows,
            check_block,
            finish_block,
            plain_fast_backend,
            softmax_rows,
            tree_block,
        )
        from dp_experts_env._jit import jit_enabled

        losses = check_block(self, obs)
        k, b, n = losses.shape
        if k == 0:
            return finish_block(self, np.empty((0, b)))
        plain = plain_fast_backend(self.noise) and self.node_scale > 0.0
        if not (plain and n > 1 and jit_enabled()):
            return np.array([self.act(row) for row in losses], dtype=np.int64).reshape(k, -1)
        first = self.t == 0
        draws = self.noise_uniforms()
        # Per round: the node noise's uniforms, then the play's; round 1 only draws its play.
        u = block_uniforms(self.rng, k, draws + PLAY_UNIFORMS, draws * int(first))
        learn = clip_unit(losses[1:] if first else losses)
        sums = np.empty_like(losses)
        if first:
            sums[0] = self._sums
        if len(learn):
            rows = u[int(first) :]
            # BatchRNG.normal's order: the N first uniforms, then the N second ones.
            noise = self.node_scale * samplers.normal(rows[:, :, :n], rows[:, :, n:draws])
            tree_block(learn, noise, self._exact, self._noisy, self._count, sums[int(first) :])
            self._count += len(learn)
            self._sums = sums[-1].copy()
        plays = np.ascontiguousarray(u[:, :, draws])
        return finish_block(self, categorical_rows(softmax_rows(-self.eta * sums), plays))

