"""Dynamic-to-static reduction: a static private learner over meta-experts (switching sequences).

Source: Theorem 4.1 (Section 4) of Asi, Raman & Saha 2025, "Tracking the Best Expert Privately"
(oblivious adversaries), with a structured O(N S) form of Hedge over meta-experts derived for this
suite (not in the paper).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents._simplex import softmax
from agents.base import Agent, PrivacyClaim, clip_unit
from agents.meta_expert_tuning import (
    count_meta_experts,
    log_count_meta_experts,
    log_sum_exp,
    noisy_hedge_eta,
    public_tables,
    suffix_rows,
)
from agents.noisy_clipped_hedge import noisy_rounds
from agents.private import PrivateAgent, common_args
from agents.registry import make, register, spec
from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.privacy.declaration import Mechanism, PostProcessing, account
from dp_experts_env.privacy.guarantee import Guarantee
from dp_experts_env.privacy.mechanisms import laplace_epsilon
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["MetaExpertReduction", "METHODS", "count_meta_experts", "log_count_meta_experts"]

METHODS = ("structured", "enumerate")
NOISY_HEDGE = "noisy-hedge"


#: rounds of suffix counts computed together (a (chunk, S+1) table, refilled as t advances)
_SUFFIX_CHUNK = 512
# The ufunc reductions behind np.max / np.sum (the same values, without the Python wrappers).
_max_reduce = np.maximum.reduce
_add_reduce = np.add.reduce


@register(
    "meta-expert-reduction",
    private=True,
    summary="dynamic-to-static reduction over switching meta-experts (ARS Theorem 4.1)",
)
class MetaExpertReduction(PrivateAgent):
    """A static private learner run over all expert sequences with at most S switches.

    Source: Asi, Raman & Saha 2025, "Tracking the Best Expert Privately", Section 4 (Theorem
    4.1), oblivious adversaries; the structured O(N S) form is the suite's. A meta-expert maps
    [T] -> [N] with at most S switch points; a static learner picks one, the play is its expert.
    Claim: noisy Hedge is pure epsilon-DP (Laplace on each loss vector, L1 sensitivity N; the
    rest post-processing); another inner learner keeps its claim. ``mode="paper"`` draws
    ``Lap(1/epsilon)`` (erratum E-ARS-15, uncertified). Deviations: switch points in ``{2..T}``
    (E-ARS-14); losses clipped to [0, 1]; noisy Hedge, not Corollary 4.1.1's unstated learner.

    Args:
        n_switches: S (public; ``agents.make`` passes the env's); above ``T - 1`` read as T - 1.
        method: ``"structured"`` (default: exact Hedge over all meta-experts in log space,
            ``P(J_t = j) ~ sum_c F_t(j, c) G_t(c)``) or ``"enumerate"`` (runs ``inner`` over E).
        inner: ``"noisy-hedge"`` or a registered private full-information learner (enumerate).
        inner_params: extra keywords for the inner learner.
        max_meta_experts: enumeration guard (refused above it).
        eta: noisy Hedge's rate; default :func:`~agents.meta_expert_tuning.noisy_hedge_eta`.
        n_experts, horizon, epsilon, delta, mode, tuning, noise, num_envs, seed: as
            :class:`PrivateAgent`.

    Attributes:
        n_meta_experts: |E|. log_meta_experts: log |E|. noise_scale, noise_sensitivity, eta,
        effective_epsilon (noisy Hedge only). inner_agent (another inner learner only).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {
        "params": {"n_switches": 0},
        "exposed": {"eta": 100.0},
        "max_horizon": 8,
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
        method: str = "structured",
        inner: str = NOISY_HEDGE,
        inner_params: dict[str, Any] | None = None,
        max_meta_experts: int = 100_000,
        eta: float | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        self._s = min(self.n_switches, self.horizon - 1)
        self.method = check_choice("method", method, METHODS)
        self.max_meta_experts = check_int("max_meta_experts", max_meta_experts, minimum=1)
        self._count_meta_experts()
        self._check_inner_learner(inner, inner_params)
        self._delta_given = delta
        if self.method == "enumerate":
            self._check_enumeration()
            self._switch_times, self._labels = self._enumerate()
        self.inner_agent: Agent | None = None
        self._set_noise(eta)
        self.reset(seed)

    # ----------------------------------------------------------------- set-up
    def _count_meta_experts(self) -> None:
        """``log |E|`` and ``|E|`` (and the whole suffix table when it is small)."""
        n, t_max = self.n_experts, self.horizon
        tables = public_tables(n, t_max, self._s)
        if tables is None:
            self.log_meta_experts = log_count_meta_experts(n, t_max, self._s)
        else:  # the whole suffix table at once: _log_suffix_counts reads its rows
            self.log_meta_experts, self._suffix = tables
            self._suffix_start = 0
        self.n_meta_experts = count_meta_experts(n, t_max, self._s)

    def _check_inner_learner(self, inner: str, inner_params: dict[str, Any] | None) -> None:
        """Validate ``inner`` (and that it fits ``method``) and ``inner_params``."""
        self._inner_name = self._check_inner(inner)
        if inner_params is not None and not isinstance(inner_params, dict):
            raise TypeError(
                "inner_params must be a dict of keywords for the inner learner, got "
                f"{type(inner_params).__name__}"
            )
        self._inner_params = dict(inner_params or {})
        if self._inner_name != NOISY_HEDGE and self.method != "enumerate":
            raise ValueError(
                f"inner={inner!r} needs method='enumerate'; method='structured' is Hedge on "
                f"noisy losses only (inner='{NOISY_HEDGE}')"
            )

    def _check_enumeration(self) -> None:
        """Refuse ``method="enumerate"`` above ``max_meta_experts``."""
        if self.n_meta_experts > self.max_meta_experts:
            raise ValueError(
                f"method='enumerate' would list |E| = {self.n_meta_experts:.3g} meta-experts "
                f"for n_experts={self.n_experts}, horizon={self.horizon}, "
                f"n_switches={self._s}, above max_meta_experts={self.max_meta_experts}; use "
                "method='structured' or raise max_meta_experts"
            )

    def _set_noise(self, eta: float | None) -> None:
        """Noisy-Hedge parameters (public constants): noise scale, effective epsilon, eta."""
        n = self.n_experts
        self.noise_sensitivity = float(n) if self.mode == "strict" else 1.0
        self.noise_scale = (
            self.noise.effective_sensitivity(self.noise_sensitivity, n) / self.epsilon
        )
        self.effective_epsilon = laplace_epsilon(
            self.noise.effective_sensitivity(float(n), n), self.noise_scale
        )
        self._eta_given = eta is not None
        if eta is not None:
            self.eta = check_float("eta", eta, minimum=0.0, min_inclusive=False)
        else:
            self.eta = self._default_eta(self.noise_scale)
        # self.epsilon, or a (B, 1) column after set_run_epsilons.
        self._run_epsilon: float | np.ndarray = self.epsilon

    def _default_eta(self, noise_scale: float) -> float:
        """The noisy-Hedge rate for Laplace noise of scale ``noise_scale`` (public only)."""
        return noisy_hedge_eta(
            self.n_experts, self.horizon, self._s, self.log_meta_experts, self.tuning, noise_scale
        )

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon (noisy Hedge only); True when applied.

        Run b then equals an agent built at ``epsilons[b]`` (docs/algorithms.md, "Random streams
        and batching"); :attr:`privacy` then refuses to state one claim. False (nothing
        changed) for another inner learner or an infinite epsilon.
        """
        eps = np.asarray(epsilons, dtype=np.float64).reshape(-1)
        if eps.shape != (self.num_envs,):
            raise ValueError(f"epsilons must hold one value per run ({self.num_envs}), got {eps}")
        if self._inner_name != NOISY_HEDGE or not np.all(np.isfinite(eps) & (eps > 0)):
            return False
        values = [float(e) for e in eps]
        sensitivity = self.noise.effective_sensitivity(self.noise_sensitivity, self.n_experts)
        self._run_epsilon = eps[:, None]
        self._run_epsilons = values  # the declaration refuses several epsilons (PrivateAgent)
        if not self._eta_given:
            etas = {e: self._default_eta(sensitivity / e) for e in set(values)}
            self.eta = np.array([etas[e] for e in values])[:, None]
        return True

    def _check_inner(self, inner: str) -> str:
        if not isinstance(inner, str):
            raise TypeError(f"inner must be a learner name (str), got {type(inner).__name__}")
        if inner == NOISY_HEDGE:
            return inner
        entry = spec(inner)  # unknown names raise ValueError listing the names
        if not entry.private or entry.feedback != "full" or inner == self.name:
            raise ValueError(
                f"inner must be '{NOISY_HEDGE}' or a private full-information learner other than "
                f"{self.name!r}, got {inner!r}"
            )
        return inner

    def _enumerate(self) -> tuple[np.ndarray, np.ndarray]:
        """Switch times (|E|, S), padded with T+1, and labels (|E|, S+1) of every meta-expert."""
        n, t_max, s = self.n_experts, self.horizon, self._s
        times, labels = [], []
        for c in range(s + 1):
            combos = list(itertools.combinations(range(2, t_max + 1), c))
            combos = np.array(combos, dtype=np.int64).reshape(len(combos), c)
            labs = np.indices((n,) * (c + 1)).reshape(c + 1, -1).T
            rows = combos.shape[0] * labs.shape[0]
            tm = np.full((rows, s), t_max + 1, dtype=np.int64)
            tm[:, :c] = np.repeat(combos, labs.shape[0], axis=0)
            lb = np.zeros((rows, s + 1), dtype=np.int64)
            lb[:, : c + 1] = np.tile(labs, (combos.shape[0], 1))
            times.append(tm)
            labels.append(lb)
        return np.concatenate(times), np.concatenate(labels)

    def meta_plays(self, t: int) -> np.ndarray:
        """(|E|,) the expert each enumerated meta-expert plays at round ``t`` (1-based)."""
        seg = (self._switch_times <= t).sum(axis=1)
        return self._labels[np.arange(self._labels.shape[0]), seg]

    def reset(self, seed: int | Sequence[int] | None = None) -> None:
        """Start a new episode; an inner learner restarts on the same per-run seeds."""
        fresh = seed is not None or not hasattr(self, "rng")
        super().reset(seed)
        if self._inner_name == NOISY_HEDGE:
            return
        if self.inner_agent is None:
            params = dict(self._inner_params)
            if self._delta_given is not None:
                params.setdefault("delta", self._delta_given)
            params.setdefault("mode", self.mode)
            params.setdefault("noise", self.noise)
            self.inner_agent = make(
                self._inner_name,
                n_experts=self.n_meta_experts,
                horizon=self.horizon,
                epsilon=self.epsilon,
                num_envs=self.num_envs,
                seed=list(self.rng.seeds),
                **params,
            )
        else:
            self.inner_agent.reset(list(self.rng.seeds) if fresh else None)
        self._pending = np.zeros((self.num_envs, self.n_meta_experts))

    # ----------------------------------------------------------------- claim
    @property
    def privacy(self) -> PrivacyClaim:
        """Noisy Hedge: Laplace (L1 sensitivity N) + post-processing; else the inner's claim."""
        if not isinstance(self._run_epsilon, float) and np.ptp(self._run_epsilon) > 0:
            raise ValueError(
                "this agent plays several epsilons (set_run_epsilons): each run has its own "
                "claim; build an agent at each epsilon to read it"
            )
        if self._inner_name != NOISY_HEDGE:
            assert self.inner_agent is not None
            inner = self.inner_agent.privacy
            return dataclasses.replace(  # only the accountant changes
                inner,
                accountant=f"Thm 4.1: post-processing of {self._inner_name} on meta-loss vectors "
                f"[{inner.accountant}]",
            )
        if self.mode == "paper":
            stated = Guarantee(
                self.epsilon, 0.0, "paper-style: Lap(1/eps) per base coordinate, sensitivity 1"
            )
            return self._claim(
                stated,
                certified=False,
                notes=f"erratum E-ARS-15: the L1 sensitivity of a loss vector is N; the noise "
                f"used certifies only epsilon = {account(self.declaration).epsilon:g}",
            )
        return self._declared_claim(source="Asi, Raman & Saha 2025, Thm 4.1")

    @property
    def declaration(self) -> Mechanism | None:
        """Noisy Hedge: each loss vector's Laplace release; else the inner's, post-processed."""
        if self._inner_name != NOISY_HEDGE:
            inner = getattr(self.inner_agent, "declaration", None)
            return None if inner is None else PostProcessing(inner, "the meta-expert plays")
        return noisy_rounds(
            self.n_experts, self.noise, self.noise_scale, "Hedge's meta-expert plays", self.horizon
        )

    # ----------------------------------------------------------------- state
    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        if self._inner_name != NOISY_HEDGE:
            return
        if self.method == "structured":
            self._log_f = np.full((b, n, self._s + 1), -np.inf)
            self._log_f[:, :, 0] = 0.0
        else:
            self._log_w = np.zeros((b, self.n_meta_experts))

    def _log_suffix_counts(self, t: int) -> np.ndarray:
        """(S+1,) log G_t(c), completions of rounds t+1..T with <= S - c switches (chunked)."""
        start = getattr(self, "_suffix_start", None)
        if start is None or not start <= t < start + self._suffix.shape[0]:
            self._suffix = self._suffix_rows(np.arange(t, t + _SUFFIX_CHUNK))
            self._suffix_start = t
            start = t
        return self._suffix[t - start]

    def _suffix_rows(self, rounds: np.ndarray) -> np.ndarray:
        """(len(rounds), S+1) log G_t(c) for each t in ``rounds`` (elementwise, as one t)."""
        return suffix_rows(self.n_experts, self.horizon, self._s, rounds)

    def action_distribution(self) -> np.ndarray:
        """(B, N) law of the last ``act``'s action (noisy Hedge only; post-processing)."""
        if self._inner_name != NOISY_HEDGE:
            raise ValueError(f"action_distribution needs inner='{NOISY_HEDGE}'")
        return self._play_distribution(max(self.t, 1))

    def _play_distribution(self, rnd: int) -> np.ndarray:
        """(B, N) law of the play at round ``rnd`` given the losses learned so far."""
        if self.method == "structured":
            logits = log_sum_exp(self._log_f + self._log_suffix_counts(rnd), axis=2)
            # softmax(logits), through the ufunc reductions (the same floats)
            e = np.exp(logits - _max_reduce(logits, axis=-1, keepdims=True))
            return e / _add_reduce(e, axis=-1, keepdims=True)
        w = softmax(self._log_w)
        plays = self.meta_plays(rnd)
        out = np.zeros((self.num_envs, self.n_experts))
        for j in range(self.n_experts):  # loop over experts (not runs), for tests and users
            out[:, j] = w[:, plays == j].sum(axis=1)
        return out

    def _noise_scale(self) -> float | np.ndarray:
        """The Laplace scale ``laplace_mechanism`` would use: a float, or (B, 1) per-run scales."""
        sensitivity = self.noise.effective_sensitivity(self.noise_sensitivity, self.n_experts)
        return sensitivity / self._run_epsilon

    def noise_uniforms(self) -> int:
        """Uniforms per run a learning round's release reads (``fast``; 0 at epsilon = inf)."""
        scale = self._noise_scale()
        noiseless = isinstance(scale, float) and scale == 0.0
        return 0 if noiseless else self.n_experts * samplers.LAPLACE_UNIFORMS

    def _noisy(self, losses: np.ndarray) -> np.ndarray:
        scale = self._noise_scale()
        if isinstance(scale, float) and scale == 0.0:
            return losses.copy()
        return self.noise.add_laplace(self.rng, losses, scale)

    def _learn(self, obs: np.ndarray) -> None:
        losses = clip_unit(obs)  # the sensitivity bound assumes losses in [0, 1]
        t = self.t
        if self._inner_name != NOISY_HEDGE:
            self._pending = losses[:, self.meta_plays(t)]
            return
        step = self.eta * self._noisy(losses)
        if self.method == "enumerate":
            self._log_w -= step[:, self.meta_plays(t)]
            return
        a = self._log_f - step[:, :, None]  # (B, N, S+1), a fresh array
        if self._s > 0:
            # A switch point at t+1 may come from any expert at level c-1 and pick any label.
            switched = log_sum_exp(a[:, :, :-1], axis=1)  # (B, S), read before a is updated
            np.logaddexp(a[:, :, 1:], switched[:, None, :], out=a[:, :, 1:])
        self._log_f = a

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        rnd = self.t + 1
        if self._inner_name != NOISY_HEDGE:
            assert self.inner_agent is not None
            meta = np.atleast_1d(self.inner_agent.act(self._pending))
            return self.meta_plays(rnd)[meta]
        if self.method == "structured":
            return self.rng.categorical(self._play_distribution(rnd))
        w = np.exp(self._log_w - self._log_w.max(axis=1, keepdims=True))
        meta = self.rng.categorical(w)
        return self.meta_plays(rnd)[meta]

    def _forward_compiled(self, noisy: np.ndarray, history: np.ndarray, first: bool) -> None:
        """The K rounds' forward sums into ``history`` via :func:`agents._kernels.switch_round`."""
        from agents import _kernels

        # Resolved once: the kernels' per-call switch check would cost more than their work.
        switch_round, level_sums = _kernels.switch_round.resolve(), _kernels.level_sums.resolve()
        k = len(noisy)
        b, n, levels = self._log_f.shape
        s = levels - 1
        steps = self.eta * noisy  # (K, B, N): each row is the per-round product
        m = np.zeros((b, s))
        d = np.empty((b, n, s))
        e = np.empty((b, n, s))
        total = np.empty((b, 1, s))
        lt = np.zeros((b, 1, s))
        prev, pending = self._log_f, False
        with np.errstate(divide="ignore"):  # log(0) = -inf where a level is still empty
            for i in range(k):
                if i or not first:  # _learn of round self.t + i
                    switch_round(prev, pending, lt, m, steps[i], history[i], d, True)
                    np.exp(d, out=e)
                    if s > 1:
                        level_sums(e, total)
                    else:  # numpy sums a single level pairwise (level_sums adds in order)
                        _add_reduce(e, axis=1, keepdims=True, out=total)
                    np.log(total, out=lt)
                    prev, pending = history[i], True
                else:
                    history[i] = prev
            if pending:  # finish the last round
                switch_round(prev, True, lt, m, steps[0], prev, d, False)
        self._log_f = history[-1].copy()

    @staticmethod
    def _plays_compiled(history: np.ndarray, suffix: np.ndarray) -> np.ndarray:
        """The K rounds' play laws, float for float :meth:`play_block`'s numpy expression."""
        from agents._kernels import lse_shift, normalise_rows, row_sums, softmax_shift

        m = np.empty(history.shape[:3])
        d = np.empty(history.shape)
        lse_shift(history, suffix, m, d)
        np.exp(d, out=d)
        lt = np.empty(history.shape[:3])
        row_sums(d, lt)
        with np.errstate(divide="ignore"):
            np.log(lt, out=lt)
        z = np.empty(history.shape[:3])
        softmax_shift(lt, m, z)
        np.exp(z, out=z)
        normalise_rows(z, lt)
        return lt

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (structured noisy Hedge on ``fast``; else per round)."""
        from agents._kernels import (
            PLAY_UNIFORMS,
            block_uniforms,
            categorical_rows,
            check_block,
            finish_block,
            plain_fast_backend,
        )

        losses = check_block(self, obs)
        k = len(losses)
        structured = self._inner_name == NOISY_HEDGE and self.method == "structured"
        if k == 0 or not structured or not plain_fast_backend(self.noise):
            return np.array([self.act(row) for row in losses], dtype=np.int64).reshape(k, -1)
        first = self.t == 0
        clipped = clip_unit(losses)
        scale = self._noise_scale()
        draws = self.noise_uniforms()
        # Per round: the release's uniforms, then the play's; round 1 only draws its play.
        u = block_uniforms(self.rng, k, draws + PLAY_UNIFORMS, draws * int(first))
        noisy = clipped + samplers.laplace(u[:, :, :draws], scale) if draws else clipped.copy()
        history = np.empty((k, *self._log_f.shape))
        suffix = np.empty((k, self._s + 1))
        if self._s > 0 and jit_enabled():
            self._forward_compiled(noisy, history, first)
        else:
            log_f = self._log_f
            for i in range(k):
                if i or not first:  # _learn of round self.t + i
                    step = self.eta * noisy[i]
                    a = log_f - step[:, :, None]
                    if self._s > 0:
                        switched = log_sum_exp(a[:, :, :-1], axis=1)
                        np.logaddexp(a[:, :, 1:], switched[:, None, :], out=a[:, :, 1:])
                    log_f = a
                history[i] = log_f
            self._log_f = log_f
        for i in range(k):
            suffix[i] = self._log_suffix_counts(self.t + i + 1)
        if jit_enabled():
            probs = self._plays_compiled(history, suffix)
        else:
            logits = log_sum_exp(history + suffix[:, None, None, :], axis=3)
            e = np.exp(logits - _max_reduce(logits, axis=-1, keepdims=True))
            probs = e / _add_reduce(e, axis=-1, keepdims=True)
        actions = categorical_rows(probs, np.ascontiguousarray(u[:, :, draws]))
        return finish_block(self, actions)
