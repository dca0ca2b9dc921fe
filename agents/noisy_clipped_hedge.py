"""Private Lu–Zhang learner (Asi, Raman & Saha, Alg. 3): Hedge on noisy losses, clipped simplex."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import PrivacyClaim, clip_unit
from agents.noisy_clipped_hedge_tuning import calibrated_eta, paper_eta, tracking_complexity
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import check_float, check_int
from dp_experts_env.privacy.declaration import (
    LaplaceRelease,
    Mechanism,
    Parallel,
    PostProcessing,
    account,
)
from dp_experts_env.privacy.guarantee import Guarantee
from dp_experts_env.privacy.mechanisms import laplace_epsilon, laplace_mechanism
from dp_experts_env.privacy.noise import NoiseBackend

# calibrated_eta and tracking_complexity stay importable from here (their first home).
__all__ = ["NoisyClippedHedge", "clip_project", "calibrated_eta", "tracking_complexity"]


def clip_project(log_v: np.ndarray, floor: float) -> np.ndarray:
    """Project unnormalised log-weights onto the clipped simplex {w : sum w = 1, w >= floor}.

    ``w(j) = max(floor, c * v(j))`` with ``c`` found for all rows at once by peeling (``c`` only
    decreases, so at most N passes).

    Args:
        log_v: (B, N) log of the unnormalised weights (any finite values).
        floor: the clipping level a, with ``N * a <= 1``.

    Returns:
        (B, N) weights on the clipped simplex (float64).
    """
    v = np.exp(log_v - log_v.max(axis=1, keepdims=True))  # largest entry is 1: no overflow
    n = v.shape[1]
    if floor <= 0.0:
        return v / v.sum(axis=1, keepdims=True)
    free = np.ones(v.shape, dtype=bool)
    for _ in range(n):
        mass = 1.0 - floor * (n - free.sum(axis=1))
        c = mass / np.where(free, v, 0.0).sum(axis=1)
        low = free & (c[:, None] * v < floor)
        if not low.any():
            break
        free &= ~low
    mass = 1.0 - floor * (n - free.sum(axis=1))
    c = mass / np.where(free, v, 0.0).sum(axis=1)
    return np.where(free, c[:, None] * v, floor)


def noisy_rounds(
    n: int, noise: NoiseBackend, scale: object, plays: str, horizon: int | None = None
) -> Mechanism:
    """Declared: round t's loss vector (L1 sensitivity N) + Laplace(scale), released once.

    A per-run ``scale`` (one epsilon) declares its smallest value; a game of ``horizon`` rounds
    releases ``horizon - 1`` vectors.
    """
    return PostProcessing(
        Parallel(
            LaplaceRelease(
                "the round's loss vector",
                (n,),
                noise.effective_sensitivity(float(n), dim=n),
                float(np.min(scale)),
            ),
            "rounds (each loss vector is released once)",
            copies=None if horizon is None else horizon - 1,
        ),
        plays,
    )


@register(
    "noisy-clipped-hedge",
    private=True,
    summary="private Lu-Zhang (ARS Algorithm 3): Hedge on Laplace-noised losses, clipped simplex",
)
class NoisyClippedHedge(PrivateAgent):
    """Hedge over a clipped simplex driven by Laplace-noised loss vectors.

    Source: Asi, Raman & Saha 2025, "Tracking the Best Expert Privately", Section 5.2 and Appendix B
    (Algorithm 3, Theorems 5.2 / B.2), a private version of Lu & Zhang 2019, Algorithm 2. For
    adaptive adversaries with a switch budget S (dynamic regret).

    Each round plays ``J_t ~ w_t``, releases ``l~_t = l_t + Z_t`` and sets
    ``w_{t+1}(j) = max(a, c w_t(j) exp(-eta l~_t(j)))``, ``a = S_eff / (N T)``. Claim: pure
    epsilon-DP against adaptive adversaries (each loss vector released once, L1 sensitivity N).
    Deviations: ``S_eff = max(S, 1)`` (E-ARS-16); log-space weights (E-ARS-18); clipped losses;
    fresh play coins (Theorem B.1).

    Args:
        n_experts: N (also ``horizon``, ``epsilon``, ``delta``, ``noise``, ``num_envs``, ``seed``).
        n_switches: S, the comparator's switch budget (public; ``agents.make`` passes the env's).
        mode: ``"strict"`` (``Lap(N/epsilon)``, E-ARS-15) or ``"paper"`` (``Lap(1/epsilon)``:
            ``(N epsilon)``-DP, uncertified).
        tuning: ``"calibrated"`` (:func:`calibrated_eta`) or ``"paper"`` (:func:`paper_eta`).
        eta: learning rate override (> 0).

    Attributes:
        effective_epsilon: the epsilon certified for the noise used (also ``noise_sensitivity``,
            ``noise_scale`` b, ``clip_level`` a).
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
        n_switches: int = 1,
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.n_switches = check_int("n_switches", n_switches, minimum=0, maximum=self.horizon)
        self._set_noise()
        self.clip_level = max(self.n_switches, 1) / (self.n_experts * self.horizon)
        self._eta_given = eta is not None
        if eta is not None:
            self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        else:
            self.eta = self._default_eta(self.noise_scale)
        # noise_scale, or a (B, 1) column of per-run scales after set_run_epsilons.
        self._run_scale: float | np.ndarray = self.noise_scale
        self.reset(seed)

    def _set_noise(self) -> None:
        """The L1 sensitivity the noise is calibrated to, its scale and the certified epsilon."""
        n = self.n_experts
        # N (strict) or the paper's 1 (erratum E-ARS-15).
        self.noise_sensitivity = float(n) if self.mode == "strict" else 1.0
        dim_sens = self.noise.effective_sensitivity(self.noise_sensitivity, dim=n)
        self.noise_scale = dim_sens / self.epsilon  # 0 at epsilon = inf
        self.effective_epsilon = laplace_epsilon(
            self.noise.effective_sensitivity(float(n), dim=n), self.noise_scale
        )

    def _default_eta(self, noise_scale: float) -> float:
        """The rate of the tuning in use for Laplace noise of scale ``noise_scale``."""
        rate = paper_eta if self.tuning == "paper" else calibrated_eta
        return rate(self.n_experts, self.horizon, max(self.n_switches, 1), noise_scale)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Run b plays as if built with ``epsilon=epsilons[b]`` (finite); True when applied.

        :attr:`privacy` then refuses to state one claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        dim_sens = self.noise.effective_sensitivity(self.noise_sensitivity, dim=self.n_experts)
        scales = self._per_run(values, lambda e: dim_sens / e)
        self._run_epsilons = values
        self._run_scale = scales[:, None]
        if not self._eta_given:
            self.eta = self._per_run(values, lambda e: self._default_eta(dim_sens / e))[:, None]
        return True

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP against adaptive adversaries (uncertified in paper mode, E-ARS-15)."""
        self._check_one_epsilon()
        if self.mode == "paper":
            stated = Guarantee(
                self.epsilon,
                0.0,
                "paper: Lap(1/eps) per coordinate treated as sensitivity 1 (Asi, Raman & Saha "
                "2025, Alg. 3)",
            )
            return self._claim(
                stated,
                certified=False,
                notes=f"erratum E-ARS-15: the L1 sensitivity of a loss vector is N, so the noise "
                f"used certifies only epsilon = {account(self.declaration).epsilon:g}",
            )
        return self._declared_claim(source="Asi, Raman & Saha 2025, Alg. 3, with erratum E-ARS-15")

    @property
    def declaration(self) -> Mechanism:
        """Each round's loss vector released once with Laplace noise (L1 sensitivity N)."""
        return noisy_rounds(
            self.n_experts, self.noise, self.noise_scale, "the clipped Hedge plays", self.horizon
        )

    def action_distribution(self) -> np.ndarray:
        """(B, N) law ``w_t`` of the last ``act``'s action (uniform before any).

        Derived from noisy losses only (covered by the claim).
        """
        return np.exp(self._log_w)

    def _init_state(self) -> None:
        n = self.n_experts
        self._log_w = np.full((self.num_envs, n), -math.log(n))

    def noise_uniforms(self) -> int:
        """Uniforms per run a learning round's release reads (``fast``; 0 at epsilon = inf)."""
        return self.n_experts * samplers.LAPLACE_UNIFORMS if np.any(self._run_scale) else 0

    def _learn(self, obs: np.ndarray) -> None:
        losses = clip_unit(obs)  # the sensitivity bound assumes losses in [0, 1]
        if self._run_epsilons is None:
            noisy = laplace_mechanism(
                losses,
                l1_sensitivity=self.noise_sensitivity,
                epsilon=self.epsilon,
                rng=self.rng,
                noise=self.noise,
            ).value
        else:
            # laplace_mechanism's release at each run's own scale (all finite and > 0).
            noisy = self.noise.add_laplace(self.rng, losses, self._run_scale)
        w = clip_project(self._log_w - self.eta * noisy, self.clip_level)
        self._log_w = np.log(w)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.categorical(np.exp(self._log_w))

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (see :mod:`agents._kernels`).

        The K rounds' releases and draws come from one read of each run's stream (``fast`` backend;
        others play round by round); the weights' ``exp``/``log`` stay numpy per round, the peeling
        runs compiled.
        """
        from agents._kernels import (
            PLAY_UNIFORMS,
            block_uniforms,
            categorical_rows,
            check_block,
            clip_peel,
            finish_block,
            own_hooks,
            plain_fast_backend,
            shift_by_max,
        )

        losses = check_block(self, obs)
        k = len(losses)
        if (
            k == 0
            or not plain_fast_backend(self.noise)
            or self.clip_level <= 0.0
            or not own_hooks(self, NoisyClippedHedge)  # a subclass's hooks run through act
        ):
            # Round by round (act advances the clock itself).
            return np.array([self.act(row) for row in losses], dtype=np.int64).reshape(k, -1)
        b, n = self.num_envs, self.n_experts
        first = self.t == 0
        clipped = clip_unit(losses)
        scale = self._run_scale  # the scale act's release uses (laplace_calibration's)
        draws = self.noise_uniforms()
        # Per round: the release's uniforms, then the play's; round 1 only draws its play.
        u = block_uniforms(self.rng, k, draws + PLAY_UNIFORMS, draws * int(first))
        noisy = clipped + samplers.laplace(u[:, :, :draws], scale) if draws else clipped.copy()
        log_w = self._log_w
        history = np.empty_like(clipped)
        projected = np.empty((b, n))
        masked = np.empty(n)
        if jit_enabled():
            # Kernels resolved once: their per-call switch check costs more than their work.
            peel, shift = clip_peel.resolve(), shift_by_max.resolve()
            steps = self.eta * noisy  # (K, B, N): each row is the per-round product
            v = np.empty((b, n))
            for i in range(k):
                if i or not first:
                    shift(log_w, steps[i], v)
                    np.exp(v, out=v)
                    peel(v, self.clip_level, projected, masked)
                    log_w = history[i]
                    np.log(projected, out=log_w)
                else:
                    history[i] = log_w
            self._log_w = log_w.copy()
            actions = categorical_rows(np.exp(history), np.ascontiguousarray(u[:, :, draws]))
            return finish_block(self, actions)
        for i in range(k):
            if i or not first:
                z = log_w - self.eta * noisy[i]
                v = np.exp(z - z.max(axis=1, keepdims=True))
                clip_peel(v, self.clip_level, projected, masked)
                log_w = np.log(projected)
            history[i] = log_w
        self._log_w = log_w
        actions = categorical_rows(np.exp(history), np.ascontiguousarray(u[:, :, draws]))
        return finish_block(self, actions)
