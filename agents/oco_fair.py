"""P-COMW's fair opponents on ``DPExperts-OCO-v0``: lazy FTRL and Gaussian DP-FTRL."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from agents._kernels import accumulate, own_hooks
from agents._oco import OCOAgent, project
from agents._oco_kernels import oco_hook_loop
from agents.base import PrivacyClaim, no_privacy
from agents.oco_baselines import TreeFTRLOCO
from agents.registry import register
from dp_experts_env._validation import check_delta, check_float
from dp_experts_env.privacy.gaussian import gaussian_tree_calibration
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["LazyFTRLOCO", "GaussianDPFTRLOCO", "lazy_schedule"]


def lazy_schedule(horizon: int, switches: int) -> np.ndarray:
    """The S rounds (1-indexed, increasing) where lazy FTRL recomputes.

    ``r_k = 1 + ceil(k T / (S + 1))`` for k = 1..S: S + 1 blocks of (nearly) equal length.
    """
    k = np.arange(1, switches + 1, dtype=np.int64)
    rounds = 1 + -(-k * horizon // (switches + 1))
    return np.unique(rounds[rounds <= horizon])


@register(
    "lazy-ftrl-oco",
    private=False,
    summary="lazy OCO baseline: L2-FTRL recomputed at S evenly spaced rounds (<= S switches)",
)
class LazyFTRLOCO(OCOAgent):
    """FTRL with P-COMW's regulariser, recomputed on a fixed schedule of S rounds.

    Source: the blocking reduction for lazy online learning (Merhav, Ordentlich, Seroussi &
    Weinberger 2002) with the FTRL step of ``ftrl-oco``. Round ``r_k`` (:func:`lazy_schedule`) plays
    ``Proj_K(-L_{r_k - 1}/lambda)``, other rounds repeat the last point; ``switches`` (B,) counts
    the changes. Regret ``<= G D sqrt(2 T m)``, ``m = ceil(T/(S+1))``. Deterministic, not private,
    no deviation.

    Args: as :class:`~agents._oco.OCOAgent`, plus ``switch_budget`` (S in [0, T - 1], default lazy
    P-COMW's ``min(sqrt(d T), T - 1)``, rounded down) and ``lam`` (default ``(G/D) sqrt(2 T m)``).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # OCOAgent.play_block calls _block, which plays these hooks (or defers to an override).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_block", "_choose", "_init_state", "_learn"}
    )

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        switch_budget: float | None = None,
        lam: float | None = None,
        **kwargs,
    ) -> None:
        seed = kwargs.pop("seed", None)
        super().__init__(n_experts, horizon, seed=seed, **kwargs)
        t = self.horizon
        s = min(math.sqrt(self.dim * t), t - 1) if switch_budget is None else switch_budget
        s = check_float("switch_budget", s, minimum=0.0, maximum=max(t - 1, 0))
        self.switch_budget = int(math.floor(s))
        self.schedule = lazy_schedule(t, self.switch_budget)
        self.block = -(-t // (self.switch_budget + 1))
        default = self.grad_bound / self.diameter * math.sqrt(2.0 * t * self.block)
        self.lam = (
            default if lam is None else check_float("lam", lam, minimum=0.0, min_inclusive=False)
        )
        self._recompute = np.zeros(t + 2, dtype=bool)
        self._recompute[self.schedule] = True
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private."""
        return no_privacy("full")

    def _init_state(self) -> None:
        self.cum = np.zeros((self.num_envs, self.dim))
        self.point = project(np.zeros((self.num_envs, self.dim)), self.body, self.radius)
        self.switches = np.zeros(self.num_envs, dtype=np.int64)

    def _learn(self, g: np.ndarray) -> None:
        self.cum += g

    def _choose(self, g: np.ndarray) -> np.ndarray:
        if self._recompute[self.t + 1]:  # the round about to be played is on the schedule
            new = project(-self.cum / self.lam, self.body, self.radius)
            self.switches += np.any(new != self.point, axis=1)
            self.point = new
        return self.point.copy()

    def _block(self, grads: np.ndarray) -> np.ndarray:
        # Sums in order; the block's scheduled rounds projected at once, held in between.
        if not own_hooks(self, LazyFTRLOCO):
            return oco_hook_loop(self, grads)
        cums = accumulate(self.cum, grads, self.t > 0)
        self.cum = cums[-1].copy()
        due = self._recompute[self.t + 1 : self.t + len(grads) + 1]
        at = np.flatnonzero(due)
        if not at.size:
            return np.broadcast_to(self.point, grads.shape).copy()
        new = project(-cums[at] / self.lam, self.body, self.radius)
        before = np.concatenate([self.point[None], new[:-1]])
        self.switches += np.any(new != before, axis=2).sum(axis=0)
        which = np.cumsum(due) - 1  # the newest recomputation at or before each round
        points = np.where((which >= 0)[:, None, None], new[np.maximum(which, 0)], self.point)
        self.point = new[-1].copy()
        return points


@register(
    "gaussian-dp-ftrl-oco",
    private=True,
    summary="DP-FTRL on a Gaussian binary tree, exact (eps, delta) by the GDP privacy profile",
)
class GaussianDPFTRLOCO(TreeFTRLOCO):
    """DP-FTRL with Gaussian tree aggregation and the exact Gaussian accountant.

    Source: DP-FTRL of Kairouz, McMahan, Song, Thakkar, Thakurta & Xu 2021 ("Practical and private
    (deep) learning without sampling or shuffling", Alg. 1), the baseline of Agarwal, Kale, Singh &
    Thakurta's Table 1; Gaussian-DP composition of Dong, Roth & Su 2019. Plays as
    :class:`~agents.oco_baselines.TreeFTRLOCO` with ``N(0, sigma^2 I)`` nodes.

    Privacy: ``(epsilon, delta)``-DP of the played points (one gradient replaced, ``||g|| <= G``),
    against adaptive adversaries: ``mu = sqrt(levels) 2G / sigma``-GDP, sigma the smallest meeting
    the request (:func:`~dp_experts_env.privacy.gaussian.gaussian_tree_calibration`).
    ``epsilon=math.inf`` is ``ftrl-oco`` with this lambda. Deviations from Kairouz et al.: no
    tree-completion trick; the exact GDP accountant instead of RDP.

    Args: as :class:`~agents.oco_baselines.DPFTRLOCO` (``delta`` default 1e-5, noise ``"fast"``
    only, one tuning, no ``law``).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py): set
    # up in __init__ only (delta, backend refusal, node scale, the sensitivity it reads), read by
    # both paths from the object.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_backend_refusal", "_calibrate", "_check_delta", "l2_sensitivity"}
    )

    default_delta = 1e-5
    claim_source = "plays are post-processing"

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        lam: float | None = None,
        noise_multiplier: float = 1.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(
            n_experts,
            horizon,
            epsilon=epsilon,
            delta=delta,
            mode=mode,
            tuning=tuning,
            noise=noise,
            lam=lam,
            noise_multiplier=noise_multiplier,
            num_envs=num_envs,
            seed=seed,
            **kwargs,
        )

    @property
    def l2_sensitivity(self) -> float:
        """L2 change of one node under a replaced gradient: ``2G``."""
        return 2.0 * self.grad_bound

    def _check_delta(self, delta: float | None) -> float:
        value = check_delta("delta", self.default_delta if delta is None else delta)
        if not value > 0 and math.isfinite(self.epsilon):
            raise ValueError("delta must be > 0: a Gaussian mechanism is never pure DP")
        return value

    def _calibrate(self) -> float:
        sigma, _ = gaussian_tree_calibration(
            self.l2_sensitivity, self.levels, self.epsilon, self.delta
        )
        return sigma

    def _backend_refusal(self, kind: str) -> str:
        return (
            f"noise={kind!r} does not apply to gaussian-dp-ftrl-oco (it accepts 'fast'): "
            "its Gaussian node noise is drawn by the learner's own stream, and the lattice "
            "backend has Laplace noise only"
        )
