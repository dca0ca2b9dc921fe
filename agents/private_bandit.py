"""Batch-and-Laplace private bandit learners ("Faster Rates for Private Adversarial Bandits").

One choice per batch of tau rounds, the batch-mean loss plus ``Lap(1/(tau epsilon))`` fed to a
non-private base learner: over the K arms (Alg. 1) or the N experts as meta-arms (Alg. 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._bandit_block import play_rounds, played_losses, segment_starts
from agents._kernels import categorical_rows, plain_fast_backend
from agents.bandit_core import (
    AdaptiveFtplRate,
    BanditCore,
    Exp3Core,
    FtplGRCore,
    TsallisInfCore,
)
from agents.base import BanditObs, PrivacyClaim
from agents.private import PrivateAgent, common_args
from agents.private_bandit_tuning import (
    BASES,
    DEFAULT_FTPL_RATE,
    BatchedBanditTuning,
    laplace_max_mean,
    tune_batched_bandit,
)
from agents.registry import register
from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.privacy.declaration import (
    LaplaceRelease,
    Mechanism,
    Parallel,
    PostProcessing,
)
from dp_experts_env.privacy.mechanisms import laplace_calibration
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["PrivateBatchedBandit", "PrivateBanditOverExperts", "TAILS"]

TAILS = ("hold", "sample")

# Which constructor overrides each base learner understands.
_BASE_KEYS = {
    "tsallis-inf": ("sigma",),
    "exp3": ("eta", "gamma"),
    "ftpl-gr": ("eta", "resample_cap"),
}


def _check_own_action(obs: BanditObs, played: np.ndarray) -> None:
    """The feedback must be the loss of the arm this learner played (not another run's)."""
    if not np.array_equal(obs.last_action, played):
        raise ValueError(
            f"obs['last_action'] {obs.last_action.tolist()} differs from the arms this agent "
            f"played {played.tolist()}; reset the agent whenever the env is reset"
        )


class _BatchedConversion(PrivateAgent):
    """Alg. 1 over ``m`` choices; subclasses say what a choice is and how it is played."""

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {"params": {"tau": 1}}

    feedback = "bandit"
    pure_dp = True
    _OVER_EXPERTS = False  # a choice is an expert whose advice is played (else an arm)

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
        base: str = "tsallis-inf",
        tau: int | None = None,
        eta: float | None = None,
        gamma: float | None = None,
        sigma: float | None = None,
        resample_cap: int | None = None,
        rate: str | None = None,
        tail: str = "hold",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.base = check_choice("base", base, BASES)
        self.tail = check_choice("tail", tail, TAILS)
        overrides = {"eta": eta, "gamma": gamma, "sigma": sigma, "resample_cap": resample_cap}
        for key, value in overrides.items():
            if value is not None and key not in _BASE_KEYS[self.base]:
                raise ValueError(
                    f"{key} does not apply to base={self.base!r} (it takes "
                    f"{', '.join(_BASE_KEYS[self.base])})"
                )
        m = self._n_choices()
        if rate is None:
            ftpl = self.base == "ftpl-gr" and self.tuning == "calibrated"
            rate = DEFAULT_FTPL_RATE if ftpl else "fixed"
        self.rate = rate
        if tau is not None:
            tau = check_int("tau", tau, minimum=1, maximum=self.horizon)
        self.tuned: BatchedBanditTuning = tune_batched_bandit(
            self.base,
            m,
            self.horizon,
            self.epsilon,
            self.tuning,
            tau=tau,
            gamma_given=gamma is not None,
            rate=rate,
        )
        self.tau = self.tuned.tau
        self.n_batches = self.tuned.n_batches
        params: dict[str, Any] = dict(self.tuned.params)
        params.update({k: v for k, v in overrides.items() if v is not None})
        self.base_params = self._check_base_params(params)
        # Sensitivity of a batch mean of losses in [0, 1] when one loss is replaced: 1/tau.
        self.noise_scale = self._calibrate_laplace(1.0 / self.tau)
        self._release_epsilon = self.epsilon  # what the releases spend (tests weaken it)
        self._noiseless = False  # test hook: the non-private batched base learner
        self.reset(seed)

    def _n_choices(self) -> int:
        raise NotImplementedError

    def _check_base_params(self, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.base == "tsallis-inf":
            out["sigma"] = check_float("sigma", params["sigma"], minimum=0.0, min_inclusive=False)
        elif self.base == "exp3":
            out["eta"] = check_float("eta", params["eta"], minimum=0.0, min_inclusive=False)
            out["gamma"] = check_float("gamma", params["gamma"], minimum=0.0, maximum=1.0)
        else:
            # The adaptive rate's eta is its cap eta_max, infinite at epsilon = inf.
            out["eta"] = check_float(
                "eta", params["eta"], minimum=0.0, min_inclusive=False, allow_inf="q0" in params
            )
            out["resample_cap"] = check_int("resample_cap", int(params["resample_cap"]), minimum=1)
            if "q0" in params:
                out["q0"] = check_float("q0", params["q0"], minimum=0.0, min_inclusive=False)
        return out

    @property
    def bound(self) -> float:
        """Regret bound ``tau R~_B(T_B, m, 1/(epsilon tau)) + tau`` at the tuned constants."""
        return self.tuned.bound

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP, central (Lemma 3 / Thm 7)."""
        notes = self._claim_notes()
        if self.epsilon > 1:
            notes += "; epsilon > 1 lies outside the paper's theorems (privacy still holds)"
        return self._declared_claim(
            source="Lemma 3: disjoint batches, actions are post-processing", notes=notes
        )

    @property
    def declaration(self) -> Mechanism:
        """The batch-mean loss (sensitivity 1/tau) + Laplace, once per disjoint batch."""
        return PostProcessing(
            Parallel(
                LaplaceRelease(
                    "the batch-mean loss of the batch's choice",
                    (1,),
                    self.noise.effective_sensitivity(1.0 / self.tau, 1),
                    float(self.noise_scale),
                ),
                "disjoint batches of tau rounds (the trailing partial batch is never released)",
                copies=min(self.n_batches, (self.horizon - 1) // self.tau),
            ),
            "the base learner's plays",
        )

    def _claim_notes(self) -> str:
        return "trailing partial batch never released" + self._tuning_warnings()

    def _tuning_warnings(self) -> str:
        """Warnings for the claim's notes: caps the tuning sits on, a vacuous bound."""
        out = ""
        if self.tuned.caps:
            out += "; WARNING: the calibrated tuning sits on a cap (" + ", ".join(self.tuned.caps)
            out += "): the bound's minimiser lies beyond it"
        if self.tuning == "calibrated" and self.tuned.bound >= self.horizon:
            out += (
                f"; WARNING: the calibrated regret bound ({self.tuned.bound:.4g}) is not below "
                f"T = {self.horizon}: the theory promises nothing at this (m, T, epsilon)"
            )
        return out

    def _init_state(self) -> None:
        # A fresh core per episode: the core holds the (possibly replaced) self.rng.
        p, m = self.base_params, self._n_choices()
        self.base_learner: BanditCore
        if self.base == "tsallis-inf":
            self.base_learner = TsallisInfCore(self.rng, m, sigma=p["sigma"])
        elif self.base == "exp3":
            self.base_learner = Exp3Core(self.rng, m, eta=p["eta"], gamma=p["gamma"])
        else:
            adaptive = None
            if "q0" in p:  # rate="adaptive": eta is the cap, the rate reads the releases
                adaptive = AdaptiveFtplRate(laplace_max_mean(m), p["q0"], p["eta"])
            eta = 1.0 if adaptive is not None else p["eta"]  # unused when adaptive
            self.base_learner = FtplGRCore(
                self.rng, m, eta=eta, max_resamples=p["resample_cap"], adaptive=adaptive
            )
        self.choice = np.zeros(self.num_envs, dtype=np.int64)
        self._batch_sum = np.zeros(self.num_envs)

    def _learn(self, obs: BanditObs) -> None:
        _check_own_action(obs, self.last_actions)
        if self.t > self.n_batches * self.tau:
            return  # trailing partial batch: never released, never learned from (E-PAB-2)
        # Lemma 3's sensitivity 1/tau assumes losses in [0, 1].
        self._batch_sum += np.clip(obs.last_loss, 0.0, 1.0)
        if self.t % self.tau == 0:
            release = self._batch_sum / self.tau
            if not self._noiseless:
                scale = self._release_scale()
                # laplace_mechanism's draw at its calibrated scale; epsilon = inf draws nothing.
                if scale != 0.0:
                    release = self.noise.add_laplace(self.rng, release, scale)
            self.base_learner.update(self.choice, release)
            self._batch_sum[:] = 0.0

    def _release_scale(self) -> float:
        """The Laplace scale of a batch release (sensitivity 1/tau), calibrated once per epsilon."""
        cached = self.__dict__.get("_scale_for")
        if cached is None or cached[0] != self._release_epsilon:
            scale, _ = laplace_calibration(1.0 / self.tau, self._release_epsilon, noise=self.noise)
            cached = self._scale_for = (self._release_epsilon, scale)
        return cached[1]

    def _choose(self, obs: BanditObs) -> np.ndarray:
        if self.t % self.tau == 0:
            in_batches = self.t < self.n_batches * self.tau
            if in_batches or self.tail == "sample":
                self.choice = self.base_learner.sample()
        return self._play(obs)

    def _play(self, obs: BanditObs) -> np.ndarray:
        raise NotImplementedError

    def play_bandit_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """(K, b) actions of K rounds, bit for bit those of K ``act`` calls (the block protocol).

        Played in segments between batch ends (:mod:`agents._bandit_block`): a segment's first round
        through :meth:`act`, the frozen choice after it (:meth:`_play_rest`). Past the horizon,
        round by round.
        """
        k = int(losses.shape[0])
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        if self.t + k > self.horizon:
            play_rounds(self, first, advice, losses, rows, actions, 0, k)
            return actions
        if k and self._tsallis_kernel():
            return self._play_tsallis_block(first, advice, losses, rows)
        last_release = self.n_batches * self.tau
        starts = segment_starts(self.t, k, self.tau, last_release)
        for lo, hi in zip(starts, [*starts[1:], k], strict=True):
            play_rounds(self, first, advice, losses, rows, actions, lo, lo + 1, lean=True)
            if hi - lo == 1:
                continue
            s = hi - lo - 1
            if advice is None:
                rest = None
            else:
                rest = advice[lo + 1 : hi]
            actions[lo + 1 : hi] = self._play_rest(first, rest, s)
            if self.t <= last_release:  # the segment's rounds learn (all of them, or none)
                clipped = np.clip(played_losses(losses, rows, actions, lo, hi - 1), 0.0, 1.0)
                # batch_sum += loss round after round: accumulate (sequential), not pairwise.
                total = np.add.accumulate(np.concatenate([self._batch_sum[None], clipped]))
                self._batch_sum[...] = total[-1]
            self.t += s
            self.last_actions = actions[hi - 1].copy()
        return actions

    def _tsallis_kernel(self) -> bool:
        """True when a block runs in :mod:`agents._bandit_tsallis`'s compiled kernel."""
        from agents import _bandit_tsallis as tsallis

        return (
            type(self.base_learner) is TsallisInfCore
            and (self._noiseless or plain_fast_backend(self.noise))
            and tsallis.tsallis_ready()
        )

    def _play_tsallis_block(
        self,
        first: dict[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """The whole block in one compiled call (HTINF base, ``fast`` noise): K ``act`` calls."""
        from agents import _bandit_kernels as kernels
        from agents import _bandit_tsallis as tsallis

        k = len(losses)
        over = self._OVER_EXPERTS
        batch, _, _, _ = kernels.block_inputs(self, first, advice, k, uses_advice=False)
        t = self.t + np.arange(k)
        last_release = self.n_batches * self.tau
        learns = (t > 0) & (t <= last_release)
        releases = learns & (t % self.tau == 0)
        samples = (t % self.tau == 0) & ((t < last_release) | (self.tail == "sample"))
        loss0 = np.zeros(self.num_envs)
        if self.t > 0:
            _check_own_action(batch, self.last_actions)
            loss0 = batch.last_loss
        scale = 0.0 if self._noiseless else self._release_scale()
        choice = np.array(self.choice, dtype=np.int64)
        actions = tsallis.run_tsallis_block(
            self.base_learner, self.rng, choice=choice, batch_sum=self._batch_sum,
            learns=learns, releases=releases, samples=samples, scale=scale, private=True,
            tau=self.tau, losses=losses, rows=rows, loss0=loss0,
            first_advice=batch.advice if over else None, block_advice=advice if over else None,
        )
        self.choice = choice
        self.t += k
        self.last_actions = actions[-1].copy()
        return actions

    def _play_rest(
        self, first: dict[str, np.ndarray], advice: np.ndarray | None, s: int
    ) -> np.ndarray:
        """(s, b) actions of ``s`` rounds inside a batch (the choice frozen), drawn in order."""
        raise NotImplementedError


@register(
    "private-batched-bandit",
    private=True,
    summary="private batched bandit (Algorithm 1): batch mean + Laplace fed to a base learner",
)
class PrivateBatchedBandit(_BatchedConversion):
    """Non-private-to-private conversion for adversarial K-armed bandits.

    Source: Algorithm 1, Lemma 3, Theorem 1 and Corollaries 2 (HTINF), 22 (EXP3) and 24 (FTPL-GR) of
    "Faster Rates for Private Adversarial Bandits" (Section 3, Appendix E). Advice is ignored.

    Privacy: pure ``epsilon``-DP, central, against adaptive adversaries (Lemma 3: sensitivity 1/tau
    per batch mean, disjoint batches); the trailing ``T mod tau`` rounds are never released
    (E-PAB-2). Modes coincide; ``epsilon=math.inf`` feeds exact batch means. Tunings and deviations
    (errata E-PAB-1/2/5/12/24, clipped losses): docs/algorithms.md (this learner's row).

    Args:
        n_experts: N (also ``horizon``, ``n_arms`` >= 2, ``mode``, ``noise``, ``num_envs``,
            ``seed``: see :class:`~agents.private.PrivateAgent`).
        epsilon: privacy parameter (> 0); delta must be 0 (pure DP).
        tuning: ``"calibrated"`` (default: tau minimising the base's noisy bound,
            ``tau <= T // 10``) or ``"paper"`` (``tau = ceil(1/epsilon)``, lemma-level base
            constants).
        base: ``"tsallis-inf"`` (default), ``"exp3"`` or ``"ftpl-gr"``.
        tau: batch length in [1, T] (also the base constants ``sigma``, ``eta``, ``gamma``,
            ``resample_cap``); default from ``tuning``.
        rate: FTPL-GR's rate rule, ``"fixed"`` (default) or ``"adaptive"``.
        tail: the trailing partial batch's play: ``"hold"`` (default) or ``"sample"`` (a fresh
            draw).

    Attributes:
        base_learner: the batched base learner (also ``n_batches``, ``noise_scale``, ``tuned``,
            ``choice`` (B,): the current batch's choice).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # _BatchedConversion.play_bandit_block plays a segment's first round through act (_play) and
    # the rest through _play_rest (this class's block form of _play), or, with the tsallis-inf
    # base, the compiled kernel plays the choice itself; _n_choices sizes the core.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset({"_n_choices", "_play", "_play_rest"})

    def _n_choices(self) -> int:
        return int(self.n_arms)

    def _play(self, obs: BanditObs) -> np.ndarray:
        return self.choice

    def _play_rest(
        self, first: dict[str, np.ndarray], advice: np.ndarray | None, s: int
    ) -> np.ndarray:
        return np.broadcast_to(self.choice, (s, self.num_envs))


@register(
    "private-bandit-over-experts",
    private=True,
    summary="private bandit-over-experts (Thm 7): experts as meta-arms of Algorithm 1",
)
class PrivateBanditOverExperts(_BatchedConversion):
    """Private bandit over experts: Algorithm 5 (experts as meta-arms) applied to Algorithm 1.

    Source: Algorithm 5, Theorems 6-7 and Corollary 8 of "Faster Rates for Private Adversarial
    Bandits" (Section 4, Appendix F.1-F.2).

    An expert is held for a batch and each round plays ``I_t ~`` its advice. Advice is public
    (erratum E-PAB-19): the chosen experts are private, the played arms are not. Privacy, modes,
    tunings and arguments: those of :class:`PrivateBatchedBandit`, over the N experts.
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # _BatchedConversion.play_bandit_block plays a segment's first round through act (_play) and
    # the rest through _play_rest (this class's block form of _play), or, with the tsallis-inf
    # base, the compiled kernel plays _play's draws itself (as _OVER_EXPERTS tells it);
    # _n_choices sizes the core; _claim_notes is the claim's text.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_OVER_EXPERTS", "_claim_notes", "_n_choices", "_play", "_play_rest"}
    )

    _OVER_EXPERTS = True

    def _n_choices(self) -> int:
        return int(self.n_experts)

    def _claim_notes(self) -> str:
        return (
            "trailing partial batch never released; advice treated as public (erratum "
            "E-PAB-19): the chosen experts are also private with respect to the advice (Thm 7 "
            "remark), but the played arms are not, since each is drawn from that round's advice"
        ) + self._tuning_warnings()

    def _play(self, obs: BanditObs) -> np.ndarray:
        rows = np.arange(self.num_envs)
        return self.rng.categorical(obs.advice[rows, self.choice])

    def _play_rest(
        self, first: dict[str, np.ndarray], advice: np.ndarray | None, s: int
    ) -> np.ndarray:
        # BatchRNG.categorical round after round: one uniform per run and round, in order.
        runs = np.arange(self.num_envs)
        draws = self.rng.random((s,)).T  # (s, b)
        if advice is None:  # identity advice, as act() parses it
            one = np.asarray(first["advice"], dtype=np.float64)
            probs = one.reshape(-1, self.n_experts, self.n_arms)[runs, self.choice]
            return categorical_rows(np.broadcast_to(probs, (s, *probs.shape)), draws)
        return categorical_rows(advice[:, runs, self.choice], draws)
