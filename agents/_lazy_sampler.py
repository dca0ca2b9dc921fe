"""Batched core of the private shrinking-dartboard family: lazy exponential weights ``exp(-c L)``.

Private shrinking dartboard (Asi, Feldman, Koren & Talwar, Algorithm 1; ``c = ln(1/(1 - eta))``),
its batched variant (their Theorem 5) and private lazy Hedge (P-COMW's discrete form; ``c =
beta``): keep the held expert unless a forced coin (p) or the stay coin (``exp(-c g)``) says
move, then draw from ``exp(-c L)`` while the resample budget lasts (docs/algorithms.md, "Notes on
the lazy private learners"). Only the ``fast`` backend; an audit's multiplier m is the rate c / m.
"""

from __future__ import annotations

import math

import numpy as np

from agents.base import clip_unit
from agents.private import PrivateAgent
from dp_experts_env.privacy.mechanisms import exponential_mechanism_probabilities
from dp_experts_env.privacy.noise import noise_multiplier

__all__ = ["LazySampler"]


class LazySampler(PrivateAgent):
    """Private lazy exponential weights, batched over runs (see the module docstring).

    Subclasses set ``inverse_temperature`` (c), ``p`` (forced-resample probability),
    ``max_resamples`` and ``batch`` (rounds per decision) before ``self.reset(seed)``.

    Attributes:
        resamples: (B,) fresh draws made so far (each counts against ``max_resamples``).
        switches: (B,) rounds whose expert differs from the previous round's.
    """

    inverse_temperature: float
    p: float
    max_resamples: int
    batch: int = 1
    #: Uniforms per run each decision reads, whatever the data: forced coin, stay coin, draw.
    DECISION_UNIFORMS = 3
    noise_backends = ("fast",)
    noise_refusal = (
        "its privacy comes from sampling probabilities (two coins and an exponential-mechanism "
        "draw by float inverse CDF), not from a Laplace release, so the lattice backend has "
        "nothing to replace"
    )

    def _rate(self) -> float | np.ndarray:
        """Inverse temperature in use: ``c`` (per run after ``set_run_epsilons``) / multiplier."""
        m = noise_multiplier(self.noise)
        c = self.inverse_temperature
        return c if m == 1.0 else (c / m if m > 0.0 else math.inf)

    def _apply_run_parameters(
        self, values: list[float], parameters: dict[float, tuple[int, float, float, int]]
    ) -> bool:
        """Per-run ``(batch, c, p, max_resamples)``; False if block sizes differ."""
        if len({parameters[e][0] for e in values}) != 1:
            return False
        self._run_epsilons = values
        self.inverse_temperature = np.array([parameters[e][1] for e in values])
        self.p = np.array([parameters[e][2] for e in values])
        self.max_resamples = np.array([parameters[e][3] for e in values], dtype=np.int64)
        return True

    def _probabilities(self, rows: np.ndarray, c: float | np.ndarray) -> np.ndarray:
        """The exponential mechanism's law ``exp(-c L)`` over the experts for the runs ``rows``."""
        if not isinstance(c, np.ndarray):
            return exponential_mechanism_probabilities(
                self.cum_loss[rows], sensitivity=1.0 / self.batch, epsilon=2.0 * c / self.batch
            )
        # Per-run rates: the same operations as exponential_mechanism_probabilities, row-wise.
        logits = -self._temperature(c[rows])[:, None] * self.cum_loss[rows]
        logits -= logits.max(axis=-1, keepdims=True)
        w = np.exp(logits)
        return w / w.sum(axis=-1, keepdims=True)

    def _temperature(self, c: float | np.ndarray) -> float | np.ndarray:
        """The exponential mechanism's ``eps / (2 sens)`` (sens 1 / batch, eps 2c / batch)."""
        return (2.0 * c / self.batch) / (2.0 * (1.0 / self.batch))

    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self.cum_loss = np.zeros((b, n))  # sum of block-averaged losses (private state)
        self._block_sum = np.zeros((b, n))
        self._held_loss = np.zeros(b)
        self._expert = np.zeros(b, dtype=np.int64)
        self.resamples = np.zeros(b, dtype=np.int64)
        self.switches = np.zeros(b, dtype=np.int64)
        self._runs = np.arange(b)

    def _learn(self, obs: np.ndarray) -> None:
        # Sensitivity 1 (1/batch after averaging) needs losses in [0, 1].
        losses = clip_unit(obs)
        if self.batch == 1:
            block = losses
        else:
            self._block_sum += losses
            if self.t % self.batch:
                return
            block = self._block_sum / self.batch
            self._block_sum = np.zeros_like(self._block_sum)
        self.cum_loss += block
        self._held_loss = block[self._runs, self._expert]

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        if self.t == 0:
            self._expert = self.rng.integers(self.n_experts)
            return self._expert
        if self.t % self.batch:
            return self._expert
        c = self._rate()
        u = self.rng.random((self.DECISION_UNIFORMS,))
        # Noise removed (audit mutant): exp(-inf * 0) would be nan.
        if not isinstance(c, np.ndarray) and math.isinf(c):
            stay = np.where(self._held_loss > 0.0, 0.0, 1.0)
        else:
            stay = np.exp(-c * self._held_loss)
        attempt = (u[:, 0] < self.p) | (u[:, 1] >= stay)
        move = attempt & (self.resamples < self.max_resamples)
        if not move.any():  # most decisions: every run keeps its expert
            return self._expert.copy()
        self.resamples += move
        new = self._expert.copy()
        rows = np.flatnonzero(move)
        if rows.size:
            # Exponential mechanism on L (sensitivity 1/batch, epsilon 2c/batch): exp(-c L), the
            # per-resample cost the accountants charge; inverse CDF, only for the runs that move.
            probs = self._probabilities(rows, c)
            cdf = np.cumsum(probs, axis=1)
            draw = np.sum(cdf <= u[rows, 2:3] * cdf[:, -1:], axis=1)
            new[rows] = np.minimum(draw, self.n_experts - 1)
        self.switches += new != self._expert
        self._expert = new
        return new

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once (:func:`agents._lazy_kernel.lazy_rounds`), bit for bit.

        An infinite or refused rate, or no numpy ``exp`` loop, plays through ``act``'s hooks.
        """
        from agents._kernels import check_block, finish_block, hook_loop
        from agents._lazy_kernel import lazy_rounds
        from agents._numpy_loops import register, ufunc_loop
        from dp_experts_env._jit import jit_enabled

        b, n, batch, t0 = self.num_envs, self.n_experts, int(self.batch), int(self.t)
        rate = np.broadcast_to(np.asarray(self._rate(), dtype=np.float64), (b,))
        temperature = self._temperature(rate)
        compiled = jit_enabled()
        loop = ufunc_loop(np.exp, (8, 8)) if compiled else np.zeros(3, dtype=np.int64)
        finite = np.isfinite(temperature).all() and (rate > 0.0).all()
        if loop is None or not finite:  # act's refusals and infinite-rate branches, as act runs
            return hook_loop(self, obs)
        losses = check_block(self, obs)
        k = len(losses)
        if k == 0:
            return finish_block(self, np.zeros((0, b), dtype=np.int64))
        # Decisions at the clocks t0 .. t0 + k - 1 that are positive multiples of the batch.
        first, last = max(t0, 1), t0 + k - 1
        decisions = max(0, last // batch - (first - 1) // batch)
        # Round 1 draws one uniform (its uniform expert), each decision its own.
        u = self.rng.random((int(t0 == 0) + self.DECISION_UNIFORMS * decisions,))
        if t0 == 0:
            self._expert = np.minimum(np.floor(u[:, 0] * n).astype(np.int64), n - 1)
            u = u[:, 1:]
        for name in ("cum_loss", "_block_sum"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float64))
        expert = np.array(self._expert, dtype=np.int64)
        held = np.array(self._held_loss, dtype=np.float64)
        if compiled:
            register()
        run = lazy_rounds if compiled else lazy_rounds.py_func  # type: ignore[attr-defined]
        actions = run(
            np.ascontiguousarray(clip_unit(losses)), t0, batch, self._block_sum, self.cum_loss,
            held, expert, self.resamples, self.switches, np.ascontiguousarray(-rate),
            np.ascontiguousarray(-temperature),
            np.broadcast_to(np.asarray(self.p, dtype=np.float64), (b,)).copy(),
            np.broadcast_to(np.asarray(self.max_resamples, dtype=np.int64), (b,)).copy(),
            np.ascontiguousarray(u).reshape(b, decisions, self.DECISION_UNIFORMS), loop,
        )
        self._expert = expert
        self._held_loss = held
        return finish_block(self, actions)
