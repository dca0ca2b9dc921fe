"""DP-FTRL baseline: Hedge on cumulative losses released by the binary-tree mechanism."""

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
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import check_float
from dp_experts_env.privacy.declaration import Mechanism, PostProcessing, TreeAggregation
from dp_experts_env.privacy.mechanisms import TreeCounter, tree_levels
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["DPFTRLTree"]


@register(
    "dp-ftrl-tree",
    private=True,
    summary="prior-work baseline: Hedge (entropic FTRL) on binary-tree noisy loss sums",
)
class DPFTRLTree(PrivateAgent):
    """Entropic FTRL (Hedge) on the running loss sums released by a binary-tree counter.

    Source: DP-FTRL (Jain & Thakurta 2014; Agarwal & Singh 2017), the adaptive-adversary
    baseline cited by Asi, Raman & Saha and Asi, Feldman, Koren & Talwar (Section 1.2), with the
    binary mechanism of Dwork et al. 2010 / Chan, Shi & Song 2011. The running loss sums go
    through a :class:`~dp_experts_env.privacy.mechanisms.TreeCounter` over the T - 1 losses a
    game feeds it (``Lap(levels N / epsilon)`` per node coordinate, L1 sensitivity N); round t+1
    samples ``softmax(-eta L~_t)``. Claim: pure epsilon-DP vs adaptive adversaries, the plays
    post-processing. ``eta`` defaults to Hedge's ``sqrt(8 ln N / T)`` in both tunings
    (docs/algorithms.md, "Notes on the baselines"); ``mode`` is ignored; epsilon = inf is Hedge.
    Deviations: losses clipped to [0, 1]; the cited constants are not reproduced.

    Attributes:
        eta, node_scale (Laplace scale per node coordinate), levels, tree (the TreeCounter).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {"exposed": {"eta": 100.0}}

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
        n, t_max = self.n_experts, self.horizon
        # T - 1 losses (round T's is never used): one level fewer at T = 2^k.
        self._items = max(1, t_max - 1)
        self.levels = tree_levels(self._items)
        self.node_scale = self.levels * self.noise.effective_sensitivity(float(n), n) / self.epsilon
        if eta is not None:
            self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        else:
            self.eta = hedge_eta(n, t_max) if n > 1 else 1.0
        self.reset(seed)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon; True when applied (False: nothing changed).

        Run b then equals an agent built at ``epsilons[b]``; :attr:`privacy` refuses one claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        self._run_epsilons = values
        self.tree.set_run_epsilons(values)
        self.node_scale = self.tree.node_scale
        return True

    @property
    def declaration(self) -> Mechanism:
        """A binary tree of the running loss vectors (L1 sensitivity N); Hedge plays are free."""
        n = self.n_experts
        return PostProcessing(
            TreeAggregation(
                "the running sums of the loss vectors",
                leaves=self._items,
                levels=self.levels,
                shape=(n,),
                sensitivity=self.noise.effective_sensitivity(float(n), n),
                scale=float(np.min(self.node_scale)),  # one epsilon: equal scales
            ),
            "Hedge's plays on the noisy sums",
        )

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP: binary-tree mechanism with L1 sensitivity N, plays post-processed."""
        self._check_one_epsilon()
        return self._declared_claim()

    def _init_state(self) -> None:
        self.tree = TreeCounter(
            self._items,
            self.n_experts,
            l1_sensitivity=float(self.n_experts),
            epsilon=self.epsilon,
            rng=self.rng,
            noise=self.noise,
        )
        if self._run_epsilons is not None:
            self.tree.set_run_epsilons(self._run_epsilons)
        self._noisy_sums = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, obs: np.ndarray) -> None:
        self._noisy_sums = self.tree.add(clip_unit(obs))

    def action_distribution(self) -> np.ndarray:
        """(B, N) law of the last ``act``'s action: Hedge on the noisy sums (post-processing)."""
        return softmax(-self.eta * self._noisy_sums)

    def regret_bound(self, n_switches: int = 0) -> float | None:
        """Proven bound on the expected static regret, any adversary (None if ``n_switches``).

        Hedge's bound plus ``eta b H_N sum_t popcount(t - 1)`` for the tree noise
        (docs/algorithms.md, "Notes on the baselines").
        """
        if n_switches:
            return None
        n, t, eta = self.n_experts, self.horizon, self.eta
        hedge = (math.log(n) / eta if n > 1 else 0.0) + eta * t / 8.0
        if not math.isfinite(self.epsilon) and self._run_epsilons is None:
            return hedge
        scale = float(np.max(self.node_scale))
        harmonic = sum(1.0 / k for k in range(1, n + 1))
        nodes = sum(bin(s).count("1") for s in range(1, t))
        return hedge + eta * scale * harmonic * nodes

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(self.action_distribution())

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (the tree in a kernel on ``fast``, else per round)."""
        from agents._kernels import (
            categorical_rows,
            check_block,
            finish_block,
            plain_fast_backend,
            softmax_rows,
        )

        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.empty((0, self.num_envs)))
        clipped = clip_unit(losses)
        if self.n_experts > 1 and jit_enabled() and plain_fast_backend(self.tree.backend):
            sums, u = self._tree_block(clipped)
            return finish_block(self, categorical_rows(softmax_rows(-self.eta * sums), u))
        sums = np.empty_like(clipped)
        u = np.empty((k, self.num_envs))
        for i in range(k):
            if self.t + i > 0:
                self._noisy_sums = self.tree.add(clipped[i])
            sums[i] = self._noisy_sums
            u[i] = self.rng.random()
        return finish_block(self, categorical_rows(softmax_rows(-self.eta * sums), u))

    def _tree_block(self, clipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The K rounds' noisy sums and play uniforms: the tree's releases in one kernel call."""
        from agents._kernels import PLAY_UNIFORMS, block_uniforms, tree_block

        tree, (k, b, n) = self.tree, clipped.shape
        first = self.t == 0
        noiseless = tree._run_epsilons is None and not tree.node_scale > 0.0
        draws = 0 if noiseless else n * samplers.LAPLACE_UNIFORMS
        u = block_uniforms(self.rng, k, draws + PLAY_UNIFORMS, draws * int(first))
        learn = clipped[1:] if first else clipped
        sums = np.empty_like(clipped)
        if first:
            sums[0] = self._noisy_sums
        if len(learn):
            if noiseless:
                noise = np.empty((0, b, n))
            else:
                noise = samplers.laplace(u[int(first) :, :, :-1], tree.node_scale)
            tree_block(learn, noise, tree._exact, tree._noisy, tree.t, sums[int(first) :])
            tree.t += len(learn)
            tree._value = sums[-1].copy()
            self._noisy_sums = tree.value
        return sums, np.ascontiguousarray(u[:, :, -1])
