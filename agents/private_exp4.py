"""EXP4-type private learners for bandits with expert advice (Algs. 6 and 2, "Faster Rates...").

``ldp-exp4`` (Alg. 6, local DP) and ``private-batched-exp4`` (Alg. 2, central DP): exponential
weights over the N experts, ``Q_t = (1 - gamma) P A_t + gamma / K`` from the public advice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._bandit_block import play_rounds, played_losses, segment_starts
from agents._kernels import PLAY_UNIFORMS, categorical_rows, plain_fast_backend
from agents.bandit_core import Exp4Core
from agents.base import BanditObs, PrivacyClaim
from agents.private import PrivateAgent, common_args
from agents.private_bandit_bounds import second_moment_bound
from agents.private_exp4_tuning import (
    COMPOSITIONS,
    RELEASES,
    batched_exp4_bound,
    batched_exp4_noise_constant,
    calibrated_batched_exp4_grid,
    calibrated_loss_release_grid,
    drv_epsilon,
    ldp_exp4_bound,
    max_composable_epsilon,
    paper_composition_epsilon,
    tune_batched_exp4,
    tune_ldp_exp4,
)
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.privacy.accounting import advanced_composition, combine
from dp_experts_env.privacy.declaration import (
    LaplaceRelease,
    Mechanism,
    Parallel,
    PostProcessing,
    Repeated,
    account,
)
from dp_experts_env.privacy.guarantee import Guarantee
from dp_experts_env.privacy.mechanisms import laplace_calibration, laplace_mechanism
from dp_experts_env.privacy.noise import FastBackend, NoiseBackend, get_backend

__all__ = [
    "LDPExp4",
    "PrivateBatchedExp4",
    "drv_epsilon",
    "max_composable_epsilon",
    "paper_composition_epsilon",
]


class _PrivateExp4Base(PrivateAgent):
    """Shared plumbing: an :class:`~agents.bandit_core.Exp4Core` plus what its estimator needs."""

    feedback = "bandit"

    def _init_weights(self) -> None:
        # A fresh core per episode: the core holds the (possibly replaced) self.rng.
        self.core = Exp4Core(self.rng, self.n_experts, self.n_arms, eta=self.eta, gamma=self.gamma)
        self.action_probs = np.full((self.num_envs, self.n_arms), 1.0 / self.n_arms)

    @property
    def expert_probs(self) -> np.ndarray:
        """(B, N) the current weights over experts."""
        return self.core.expert_distribution()

    @property
    def n_updates(self) -> int:
        """Number of weight updates so far (the same for every run)."""
        return int(self.core.n_updates[0])

    def _sample(self, advice: np.ndarray) -> np.ndarray:
        actions = self.core.sample(advice)
        self.action_probs = self.core.last_q
        return actions

    def _estimates(self, loss: np.ndarray) -> np.ndarray:
        """(B, N) importance-weighted expert losses ``mu^j(I_t) loss / Q_t(I_t)``."""
        return self.core.estimate(loss)

    def _observed_loss(self, obs: BanditObs) -> np.ndarray:
        if not np.array_equal(obs.last_action, self.last_actions):
            raise ValueError(
                f"obs['last_action'] {obs.last_action.tolist()} differs from the arms this agent "
                f"played {self.last_actions.tolist()}; reset the agent whenever the env is reset"
            )
        # the sensitivity bounds assume losses in [0, 1].
        return np.clip(obs.last_loss, 0.0, 1.0)

    def _loss_release_scale(self) -> float:
        """The Laplace scale of one released loss: what ``laplace_mechanism`` in act draws at."""
        return laplace_calibration(1.0, self._release_epsilon, noise=self.noise)[0]


@register(
    "ldp-exp4",
    private=True,
    summary="local-DP EXP4 (Faster Rates for Private Adversarial Bandits, Alg. 6): "
    "Laplace(1/eps) on every observed loss",
)
class LDPExp4(_PrivateExp4Base):
    """Locally private EXP4: EXP4 fed ``l_t(I_t) + Lap(1/epsilon)``.

    Source: Algorithm 6 and Theorem 9 of "Faster Rates for Private Adversarial Bandits".

    Privacy: ``epsilon``-local DP against adaptive adversaries (each loss privatised once,
    sensitivity 1); advice is public (E-PAB-19). Modes coincide; ``epsilon=math.inf`` runs EXP4.
    Tunings and deviations: docs/algorithms.md (the ``ldp-exp4`` row, "Calibration").

    Args:
        n_experts: N (also ``horizon`` T, ``mode``, ``noise``, ``num_envs``, ``seed``: see
            :class:`~agents.private.PrivateAgent`).
        n_arms: K (>= 2).
        epsilon: privacy parameter (> 0); delta is not used (pure DP).
        tuning: ``"calibrated"`` (default: a second-moment bound's minimiser) or ``"paper"``
            (Theorem 9; ValueError when its gamma exceeds 1).
        eta: learning rate (> 0; also ``gamma``, mixing in [0, 1]); default from ``tuning``.

    Attributes:
        bound: the regret bound the tuning minimised (also ``noise_scale``).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        eta: float | None = None,
        gamma: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        n, k, t = self.n_experts, self.n_arms, self.horizon
        # One Laplace release per round of the observed loss in [0, 1] (L1 sensitivity 1).
        self.noise_scale = self._calibrate_laplace(1.0)
        self._release_epsilon = self.epsilon  # what the releases spend (tests weaken it)
        if not self.is_private:
            # No privacy: EXP4 itself (its rate sqrt(2 ln N / (T K)), no extra exploration).
            eta = math.sqrt(2.0 * math.log(max(n, 2)) / (t * k)) if eta is None else eta
            gamma = 0.0 if gamma is None else gamma
        if eta is None or gamma is None:
            tuned = tune_ldp_exp4(n, k, t, self.epsilon, self.tuning, self.noise_scale)
            eta = tuned.eta if eta is None else eta
            gamma = tuned.gamma if gamma is None else gamma
        self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        self.gamma = check_probability_open("gamma", gamma, allow_zero=True)
        if not self.is_private:
            self.bound = math.nan
        elif self.tuning == "paper":
            self.bound = ldp_exp4_bound(n, k, t, self.epsilon, self.eta, self.gamma)
        else:
            self.bound = second_moment_bound(n, k, t, self.noise_scale, self.eta, self.gamma)
        # also a test hook: True runs the non-private EXP4 this learner privatises
        self._noiseless = not self.is_private
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon local DP (Theorem 9)."""
        notes = "advice treated as public (erratum E-PAB-19)"
        if self.epsilon > 1:
            notes += "; epsilon > 1 lies outside Theorem 9's regret guarantee"
        return self._declared_claim(
            source="Thm 9 / Lemma 3 with tau = 1", model="local", notes=notes
        )

    @property
    def declaration(self) -> Mechanism:
        """Each observed loss (sensitivity 1) + Laplace, used once (local model)."""
        return PostProcessing(
            Parallel(
                LaplaceRelease(
                    "the observed loss",
                    (1,),
                    self.noise.effective_sensitivity(1.0, 1),
                    float(self.noise_scale),
                ),
                "rounds (each loss is privatised once, locally)",
                copies=self.horizon - 1,
            ),
            "EXP4's plays",
        )

    def _init_state(self) -> None:
        self._init_weights()

    def _learn(self, obs: BanditObs) -> None:
        loss = self._observed_loss(obs)
        if not self._noiseless:
            loss = laplace_mechanism(
                loss,
                l1_sensitivity=1.0,
                epsilon=self._release_epsilon,
                rng=self.rng,
                noise=self.noise,
            ).value
        self.core.update(self._estimates(loss))

    def _choose(self, obs: BanditObs) -> np.ndarray:
        return self._sample(obs.advice)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one compiled call, bit for bit (the bandit block protocol).

        The protocol's arguments: docs/architecture.md. Without the compiled kernel, or with a noise
        backend other than plain ``fast``, the rounds go through ``act``.
        """
        from agents import _bandit_kernels as kernels

        noiseless = self._noiseless
        if (
            not len(losses)
            or not (noiseless or plain_fast_backend(self.noise))
            or not kernels.kernel_ready()
        ):
            return kernels.act_loop(self, first, advice, losses, rows)
        scale = 0.0 if noiseless else self._loss_release_scale()
        actions = kernels.play_exp4_core(
            self, first, advice, losses, rows,
            loss0_of=self._observed_loss, scale=scale, clip=True,
        )
        self.action_probs = self.core.last_q
        return actions


@register(
    "private-batched-exp4",
    private=True,
    summary="private batched EXP4 (Faster Rates for Private Adversarial Bandits, Alg. 2): "
    "Laplace on per-expert batch losses",
)
class PrivateBatchedExp4(_PrivateExp4Base):
    """Private batched EXP4: expert weights frozen per batch, noisy per-expert batch losses.

    Source: Algorithm 2 and Theorem 10 of "Faster Rates for Private Adversarial Bandits".

    The trailing ``T mod tau`` rounds are never released nor learned from. Privacy (central, vs
    adaptive): ``release="loss"`` (an addition) releases each observed loss with ``Lap(1/epsilon)``,
    pure epsilon-DP; ``release="estimates"`` (Alg. 2) releases ``Acc / tau`` plus Laplace per expert
    (sensitivity ``K/(gamma tau)``), composed by ``composition``; ``"strict"`` spends exactly
    epsilon, ``"paper"`` keeps the printed noise (maybe uncertified). Details: docs/algorithms.md.

    Args:
        n_experts: N (also ``horizon``, ``n_arms``, ``mode``, ...: as :class:`LDPExp4`).
        epsilon: privacy parameter (> 0).
        delta: in (0, 1/e] (default 1e-6; 0 with ``"pure"`` or ``release="loss"``).
        tuning: ``"calibrated"`` (default: a second-moment grid) or ``"paper"`` (Theorem 10).
        composition: ``"advanced"`` (when unset) or ``"pure"`` (``release="estimates"`` only).
        release: ``"loss"``, or ``"estimates"`` (the default when ``composition``,
            ``tuning="paper"`` or ``mode="paper"`` is given).
        tau: batch length in [1, T] (also ``eta`` > 0, ``gamma`` in (0, 1]); default from
            ``tuning``.
        max_gamma: cap on the calibrated gamma.

    Attributes:
        per_expert_epsilon: eps0 of each coordinate's release (epsilon with ``release="loss"``).
        composed_epsilon: what is certified (also ``n_batches``, ``bound``, ``noise_scale``).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"tau": 1},
        "exposed": {"gamma": 0.98, "max_gamma": 0.99},
        "variants": [{"composition": "pure"}, {"composition": "advanced"}, {"release": "loss"}],
        "agree": True,
        "runs": 200_000,  # half the runs play the other arm: the evidence is diluted
    }

    default_delta = 1e-6

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        composition: str | None = None,
        release: str | None = None,
        tau: int | None = None,
        eta: float | None = None,
        gamma: float | None = None,
        max_gamma: float = 0.5,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        if release is None:
            # Alg. 2's own release where a setting of it is asked for.
            alg2 = composition is not None or tuning == "paper" or mode == "paper"
            release = "estimates" if alg2 else "loss"
        self.release = check_choice("release", release, RELEASES)
        if release == "loss" and composition is not None:
            raise ValueError(
                f"composition={composition!r} applies to release='estimates' (the per-expert "
                "batch means); release='loss' releases one loss per round (parallel "
                "composition, pure epsilon-DP): leave composition unset"
            )
        composition = "advanced" if composition is None else composition
        self.composition = check_choice("composition", composition, COMPOSITIONS)
        if (composition == "pure" or release == "loss") and delta is None:
            delta = 0.0
        super().__init__(n_experts, horizon, **common_args(locals()))
        n, k, t = self.n_experts, self.n_arms, self.horizon
        if (
            release == "estimates"
            and composition == "advanced"
            and not (0.0 < self.delta <= 1.0 / math.e)
        ):
            raise ValueError(
                f"delta must lie in (0, 1/e] for composition='advanced' ((epsilon, delta)-DP "
                f"with log(1/delta) >= 1, erratum E-PAB-7), got {self.delta}; typical: 1e-6 or "
                "T^-1.1. Use "
                "composition='pure' for delta = 0"
            )
        self.max_gamma = check_float(
            "max_gamma", max_gamma, minimum=0.0, maximum=1.0, min_inclusive=False
        )
        if tau is not None:
            tau = check_int("tau", tau, minimum=1, maximum=t)
        if eta is not None:
            eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        # The privacy split first: the calibrated tuning must see the noise really added.
        self.composition_used = composition
        self._certified = True
        if not self.is_private:
            self.per_expert_epsilon = math.inf
        elif release == "loss":
            self.per_expert_epsilon, self.composition_used = self.epsilon, "parallel"
        elif composition == "advanced":
            eps0 = self.epsilon / (3.0 * math.sqrt(n * math.log(1.0 / self.delta)))  # paper
            self._certified = drv_epsilon(eps0, n, self.delta) <= self.epsilon * (1 + 1e-12)
            if self.mode == "strict":
                # Spend the whole budget: the largest composable eps0, or basic composition
                # when larger (erratum E-PAB-7).
                eps0 = max(max_composable_epsilon(self.epsilon, n, self.delta), 0.0)
                if self.epsilon / n >= eps0:
                    eps0, self.composition_used = self.epsilon / n, "basic"
                self._certified = True
            self.per_expert_epsilon = eps0
        else:
            self.per_expert_epsilon = self.epsilon
        if not self.is_private:
            # No privacy: EXP4 itself, one round per batch and no extra exploration.
            tau = 1 if tau is None else tau
            eta = math.sqrt(2.0 * math.log(max(n, 2)) / (t * k)) if eta is None else eta
            gamma = 0.0 if gamma is None else gamma
        # Per-coordinate Laplace scale at gamma tau = 1.
        per_unit = (
            k / self.per_expert_epsilon if composition == "advanced" else n * k / self.epsilon
        )
        loss_scale = None
        if release == "loss" and self.is_private:
            loss_scale = self._calibrate_laplace(1.0)
        if tau is None or eta is None or gamma is None:
            tuned = tune_batched_exp4(
                n,
                k,
                t,
                self.epsilon,
                self.delta,
                self.tuning,
                composition,
                max_gamma=self.max_gamma,
                tau=tau,
                eta=eta,
                coordinate_scale=per_unit,
                release=release,
                loss_scale=loss_scale,
            )
            tau = tuned.tau if tau is None else tau
            eta = tuned.eta if eta is None else eta
            if gamma is None:
                gamma = tuned.gamma
                self._tuning_caps = tuned.caps
            else:  # a given gamma: only the caps on what the tuner chose still apply
                self._tuning_caps = tuple(c for c in tuned.caps if not c.startswith("gamma"))
        self.tau = tau
        self.n_batches = t // tau
        self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        self.gamma = check_probability_open("gamma", gamma, allow_zero=not self.is_private)
        if not self.is_private:
            self.composed_epsilon, self.noise_scale, self.bound = math.inf, 0.0, math.nan
            self._noiseless = True
            self.reset(seed)
            return
        # Per-coordinate sensitivity K/(gamma tau) (L1: N K/(gamma tau)) relies on Q_t >= gamma/K.
        if release == "loss":
            self._release_sensitivity, self._release_epsilon = 1.0, self.epsilon
            self.noise_scale = loss_scale
        elif composition == "advanced":
            self._release_sensitivity = k / (self.gamma * tau)
            self._release_epsilon = self.per_expert_epsilon
        else:
            self._release_sensitivity = n * k / (self.gamma * tau)
            self._release_epsilon = self.epsilon
        if release == "estimates":
            self.noise_scale = self._calibrate_laplace(
                self._release_sensitivity,
                self._release_epsilon,
                dim=1 if composition == "advanced" else n,
            )
        self.composed_epsilon = self._composed().epsilon
        if release == "loss":
            self.bound = float(
                calibrated_loss_release_grid(
                    n, k, t, self.noise_scale, np.array([tau]), np.array([self.gamma]), self.eta
                )[0][0, 0]
            )
        elif self.tuning == "paper":
            s = batched_exp4_noise_constant(n, k, self.delta, composition)
            self.bound = batched_exp4_bound(n, k, t, self.epsilon, s, tau, self.eta, self.gamma)
        else:
            self.bound = float(
                calibrated_batched_exp4_grid(
                    n, k, t, per_unit, np.array([tau]), np.array([self.gamma]), self.eta
                )[0][0, 0]
            )
        self._noiseless = False  # test hook: the non-private batched EXP4
        self.reset(seed)

    def _composed(self) -> Guarantee:
        """The batch release's guarantee, composed over the N coordinates; batches are disjoint."""
        n = self.n_experts
        if self.composition_used == "parallel":
            return self._release  # one release per round, each loss in one round
        if self.composition_used == "advanced":
            return advanced_composition(self._release.epsilon, n, self.delta)
        if self.composition_used == "basic":
            return combine([self._release] * n, "basic", "the N per-expert releases")
        return self._release

    @property
    def privacy(self) -> PrivacyClaim:
        """(epsilon, delta)-DP (advanced) or epsilon-DP (pure/basic), central model."""
        if not self.is_private:
            return self._claim(Guarantee(math.inf, 0.0, "noise removed"))
        what = {
            "advanced": "per expert on the batch-mean estimates (sensitivity K/(gamma tau) per "
            "coordinate as Q_t >= gamma/K) + advanced composition over the N coordinates "
            "(Dwork-Rothblum-Vadhan); disjoint batches (Thm 10)",
            "basic": "per expert on the batch-mean estimates (sensitivity K/(gamma tau) per "
            "coordinate) + basic composition over the N coordinates (less noise than advanced "
            "composition at this epsilon); disjoint batches (Thm 10, erratum E-PAB-7)",
            "pure": "on the N-vector of batch-mean estimates (L1 sensitivity N K/(gamma tau)); "
            "disjoint batches (pure variant, erratum E-PAB-7)",
            "parallel": "release='loss', a deviation from Alg. 2: Thm 10's frozen batches fed "
            "the per-round Laplace release of the observed loss",
        }[self.composition_used]
        declared = account(self.declaration, source=what)
        notes = "advice treated as public (erratum E-PAB-19)"
        caps = getattr(self, "_tuning_caps", ())
        if caps:
            notes += "; WARNING: the calibrated tuning sits on a cap (" + ", ".join(caps)
            notes += "): the bound's minimiser lies beyond it"
        if self.tuning == "calibrated" and self.bound >= self.horizon:
            notes += (
                f"; WARNING: the calibrated regret bound ({self.bound:.4g}) is not below "
                f"T = {self.horizon}: at this (N, K, T, epsilon) the learner is not expected to "
                "beat following a random expert"
            )
        if not self._certified:
            notes += f"; advanced composition only certifies epsilon'={declared.epsilon:.4g}"
            stated = Guarantee(self.epsilon, self.delta, "paper: " + declared.accountant)
            return self._claim(stated, certified=False, notes=notes)
        # min() only absorbs the float rounding of recomputing the bisection's feasible end.
        certified = Guarantee(
            min(declared.epsilon, self.epsilon), declared.delta, declared.accountant
        )
        return self._claim(certified, notes=notes)

    @property
    def declaration(self) -> Mechanism | None:
        """The batch estimates (or per-round losses) + Laplace, one release per disjoint batch."""
        if not self.is_private:
            return None
        n = self.n_experts
        if self.composition_used == "parallel":
            rounds = Parallel(
                LaplaceRelease(
                    "the observed loss",
                    (1,),
                    self.noise.effective_sensitivity(1.0, 1),
                    float(self.noise_scale),
                ),
                "rounds of complete batches (each loss is privatised once, on arrival)",
                copies=min(self.n_batches * self.tau, self.horizon - 1),
            )
            return PostProcessing(rounds, "the experts' batch estimates and EXP4's plays")
        if self.composition_used == "pure":
            release: Mechanism = LaplaceRelease(
                "the N-vector of batch-mean loss estimates",
                (n,),
                self.noise.effective_sensitivity(self._release_sensitivity, n),
                float(self.noise_scale),
            )
        else:
            release = Repeated(
                LaplaceRelease(
                    "one expert's batch-mean loss estimate",
                    (1,),
                    self.noise.effective_sensitivity(self._release_sensitivity, 1),
                    float(self.noise_scale),
                ),
                n,
                delta_prime=self.delta if self.composition_used == "advanced" else 0.0,
                what="the N experts' coordinates",
            )
        batches = Parallel(
            release,
            "disjoint batches of tau rounds",
            copies=min(self.n_batches, (self.horizon - 1) // self.tau),
        )
        return PostProcessing(batches, "EXP4's plays")

    def _init_state(self) -> None:
        self._init_weights()
        self._acc = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, obs: BanditObs) -> None:
        if self.t > self.n_batches * self.tau:
            return  # trailing partial batch: never released, never learned from
        loss = self._observed_loss(obs)
        if self.release == "loss" and not self._noiseless:
            loss = laplace_mechanism(
                loss,
                l1_sensitivity=1.0,
                epsilon=self._release_epsilon,
                rng=self.rng,
                noise=self.noise,
            ).value
        self._acc += self._estimates(loss)
        if self.t % self.tau == 0:
            release = self._acc / self.tau
            if self.release == "estimates" and not self._noiseless:
                release = laplace_mechanism(
                    release,
                    l1_sensitivity=self._release_sensitivity,
                    epsilon=self._release_epsilon,
                    rng=self.rng,
                    noise=self.noise,
                    per_coordinate=self.composition == "advanced",
                ).value
            self.core.update(release)
            self._acc[:] = 0.0

    def _choose(self, obs: BanditObs) -> np.ndarray:
        return self._sample(obs.advice)

    def play_bandit_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """(K, b) actions of K rounds, bit for bit those of K ``act`` calls (the block protocol).

        Played in segments between weight updates (:mod:`agents._bandit_block`): a segment's first
        round through :meth:`act`, the rest as whole-array operations in the stream's order. Past
        the horizon, or ``release="loss"`` with a backend other than ``fast``, round by round.
        """
        k = int(losses.shape[0])
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        scale = 0.0
        if self.release == "loss" and not self._noiseless:
            scale = self._loss_release_scale()
        fast = type(get_backend(self.noise)) is FastBackend
        if self.t + k > self.horizon or (scale > 0.0 and not fast):
            play_rounds(self, first, advice, losses, rows, actions, 0, k)
            return actions
        if k and self._one_round_batches() and (self._noiseless or plain_fast_backend(self.noise)):
            from agents import _bandit_kernels as kernels

            if kernels.kernel_ready():
                actions = kernels.play_exp4_core(
                    self, first, advice, losses, rows,
                    loss0_of=self._observed_loss, scale=scale, clip=True,
                )
                self.action_probs = self.core.last_q
                return actions
        starts = segment_starts(self.t, k, self.tau, self.n_batches * self.tau)
        for lo, hi in zip(starts, [*starts[1:], k], strict=True):
            play_rounds(self, first, advice, losses, rows, actions, lo, lo + 1, lean=True)
            if hi - lo > 1:
                self._play_segment(first, advice, losses, rows, actions, lo, hi, scale)
        return actions

    def _one_round_batches(self) -> bool:
        """True for one-round batches with the released loss: ldp-exp4's rounds (its kernel).

        ``Acc = 0 + e`` then ``Acc / 1`` leave ``e``'s bits unchanged (a sum of nonzero terms is
        never negative zero).
        """
        return self.tau == 1 and self.release == "loss"

    def _play_segment(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
        actions: np.ndarray,
        lo: int,
        hi: int,
        scale: float,
    ) -> None:
        """Block rounds ``lo + 1 .. hi - 1`` after ``act`` played round ``lo`` (frozen weights)."""
        core, b, s = self.core, self.num_envs, hi - lo - 1
        runs = np.arange(b)
        # Every round of the segment learns (its clock is within the released batches) or none.
        learns = self.t <= self.n_batches * self.tau
        noisy = learns and scale > 0.0
        # The stream's order: per round, the released loss's uniform (if any), then the draw's.
        per_round = (samplers.LAPLACE_UNIFORMS if noisy else 0) + PLAY_UNIFORMS
        u = self.rng.random((per_round * s,))
        draws = u[:, per_round - 1 :: per_round].T  # (s, b)
        p = core.expert_distribution()  # what every round of the segment recomputes
        if advice is None:
            # The identity as act() parses it (a broadcast view, reshaped the same way).
            one = np.asarray(first["advice"], dtype=np.float64)
            one = one.reshape(-1, self.n_experts, self.n_arms)
            a_rest = np.broadcast_to(one, (s, *one.shape))
            q_one = np.einsum("bn,bnk->bk", p, one)
            q = np.broadcast_to(q_one, (s, *q_one.shape))
        else:
            a_rest = advice[lo + 1 : hi]
            q = np.einsum("bn,tbnk->tbk", p, a_rest)  # each (t, b) row as a round's einsum
        q = q / q.sum(axis=-1, keepdims=True)
        if core.gamma > 0.0:
            q = (1.0 - core.gamma) * q + core.gamma / core.n_arms
        played = categorical_rows(q, draws)  # BatchRNG.categorical, a round per row
        actions[lo + 1 : hi] = played
        steps = np.arange(s)[:, None]
        if learns:
            # Rounds lo .. hi - 2 are learned from at rounds lo + 1 .. hi - 1.
            loss = np.clip(played_losses(losses, rows, actions, lo, hi - 1), 0.0, 1.0)
            if noisy:
                loss = loss + samplers.laplace(u[:, 0::per_round], scale).T
            at_arm = np.empty((s, b, self.n_experts))
            at_arm[0] = core.last_advice_at_arm
            q_at = np.empty((s, b))
            q_at[0] = core.last_q_at_arm
            if s > 1:
                at_arm[1:] = a_rest[steps[:-1], runs, :, played[:-1]]
                q_at[1:] = q[steps[:-1], runs, played[:-1]]
            estimates = at_arm * (loss / q_at)[..., None]
            # acc += e round after round: accumulate (sequential), never a pairwise sum.
            estimates = np.concatenate([self._acc[None], estimates])
            self._acc[...] = np.add.accumulate(estimates, axis=0)[-1]
        last = played[-1]
        core.last_q = np.array(q[-1])
        core.last_advice_at_arm = a_rest[-1][runs, :, last]
        core.last_q_at_arm = core.last_q[runs, last]
        self.action_probs = core.last_q
        self.t += s
        self.last_actions = actions[hi - 1].copy()


def check_probability_open(name: str, value: float, *, allow_zero: bool) -> float:
    """A mixing weight in (0, 1] (or [0, 1] when ``allow_zero``)."""
    return check_float(name, value, minimum=0.0, maximum=1.0, min_inclusive=allow_zero)
