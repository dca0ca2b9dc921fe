"""Randomized-prefix softmax (Cesari & Colomboni 2026): horizon-free private FTL.

The restart variants for shifting losses are the suite's additions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import PrivacyClaim, clip_unit
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env._validation import check_choice, check_float, check_int
from dp_experts_env.privacy.declaration import ExponentialMechanism, Mechanism, Parallel
from dp_experts_env.privacy.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    exponential_mechanism_runs,
)
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = ["PREFIXES", "RESTARTS", "RandomizedPrefixSoftmax", "selection_law"]

RESTARTS = ("none", "periodic", "capped")
PREFIXES = ("random", "full")


def selection_law(block_losses: np.ndarray, eta: float, prefix: str = "random") -> np.ndarray:
    """Exact law of the action chosen from one block's losses (Section 4 with Lemma 3).

    Args:
        block_losses: (n, N) loss vectors of the block, in order (n = 1 or an even length).
        eta: inverse temperature.
        prefix: ``"random"`` (the prefix length uniform on ``{n/2 + 1, ..., n}``, 1 when ``n = 1``)
            or ``"full"`` (the whole block).

    Returns:
        (N,) probabilities ``mean_m softmax(-eta L(m))`` over the prefix lengths m.
    """
    x = np.asarray(block_losses, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"block_losses must have shape (n, N) with n >= 1, got {x.shape}")
    n = x.shape[0]
    if n > 1 and n % 2:
        raise ValueError(f"block length must be 1 or even, got {n}")
    check_choice("prefix", prefix, PREFIXES)
    lengths = np.array([n]) if (prefix == "full" or n == 1) else np.arange(n // 2 + 1, n + 1)
    sums = np.cumsum(x, axis=0)[lengths - 1]
    probs = exponential_mechanism_probabilities(sums, sensitivity=1.0, epsilon=2.0 * eta)
    return probs.mean(axis=0)


@register(
    "randomized-prefix-softmax",
    private=True,
    summary="horizon-free private FTL (Cesari & Colomboni): softmax on a random block prefix",
)
class RandomizedPrefixSoftmax(PrivateAgent):
    """Randomized-prefix softmax: one exponential-mechanism pick per dyadic block.

    Source: Cesari & Colomboni 2026, Section 4 (algorithm), Lemma 3 and Proposition 1 (privacy),
    Theorem 1 (regret on i.i.d. losses with a unique best expert; no guarantee on other sequences,
    e.g. the oblivious family ``dyadic_alternating``).

    Block r + 1 plays ``softmax(-eta L_r(M_r))``, the sum of a random prefix of block r's losses,
    with ``eta = min(epsilon / 2, eta_cap)``; the prefix is drawn at the block's start (equal in
    law). Claim: pure ``2 eta``-DP of the actions, replace-one-round neighbours, vs oblivious
    losses; losses clipped. Deviation: ``eta_cap = inf`` by default (the paper's 1/8 is
    ``randomized-prefix-softmax:paper``, :mod:`agents.paper_modes`).

    Args:
        n_experts: N (also ``horizon``, ``epsilon``, ``num_envs``, ``seed``; ``mode``, ``tuning``
            change nothing).
        eta_cap: cap on the inverse temperature.
        prefix: ``"random"`` (paper) or ``"full"`` (ablation, regret theorem void).
        restarts: ``"none"`` (paper), ``"periodic"`` (every ``window`` rounds) or ``"capped"``
            (blocks ``min(2^r, window)``).
        window: default ``T / (S + 1)`` from ``n_switches`` S (capped: down to a power of two).
        noise: ``"fast"`` only (Gumbel-max sampling is float under every backend).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {"params": {"eta_cap": math.inf}}

    default_delta = 0.0
    noise_backends = ("fast",)
    noise_refusal = (
        "its only noise is the Gumbel noise of the exponential mechanism, float under every "
        "backend, so noise='grid' would run the same draws under another name"
    )

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
        eta_cap: float = math.inf,
        prefix: str = "random",
        restarts: str = "none",
        window: int | None = None,
        n_switches: int | None = None,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.eta_cap = check_float(
            "eta_cap", eta_cap, minimum=0.0, min_inclusive=False, allow_inf=True
        )
        self.eta = min(self.epsilon / 2.0, self.eta_cap)
        self.epsilon_spent = 2.0 * self.eta
        self.prefix = check_choice("prefix", prefix, PREFIXES)
        self.restarts = check_choice("restarts", restarts, RESTARTS)
        switches = 0 if n_switches is None else check_int("n_switches", n_switches, minimum=0)
        self.window = self._window(window, switches)
        self._pick_epsilons: np.ndarray | None = None  # (B,) per-run 2 eta, if set
        self.reset(seed)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Run b plays as if built with ``epsilon=epsilons[b]`` (finite); True when applied.

        :attr:`privacy` then refuses to state one claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        self._run_epsilons = values
        self._pick_epsilons = 2.0 * self._per_run(values, lambda e: min(e / 2.0, self.eta_cap))
        return True

    def _window(self, window: int | None, switches: int) -> int | None:
        if window is not None:  # refused even when restarts="none" would ignore it
            check_int("window", window, minimum=1)
        if self.restarts == "none":
            return None
        span = self.horizon / (switches + 1)
        if self.restarts == "periodic":
            if window is None:
                return max(1, round(span))
            return check_int("window", window, minimum=1)
        if window is None:
            return 1 << max(0, math.floor(math.log2(max(span, 1.0))))
        w = check_int("window", window, minimum=1)
        if w & (w - 1):
            raise ValueError(f"window must be a power of two for restarts='capped', got {w}")
        return w

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure DP: exponential mechanism per block, each loss in one block (Prop. 1)."""
        self._check_one_epsilon()
        return self._declared_claim(
            source="Lemma 3; Proposition 1 factorisation",
            holds_against="oblivious",
            notes=f"eta={self.eta:.4g}, spends 2 eta = {self.epsilon_spent:.4g}; restarts="
            f"{self.restarts}, window={self.window}; privacy proven for fixed loss sequences; "
            "regret guarantee for i.i.d. losses only",
        )

    @property
    def declaration(self) -> Mechanism:
        """One exponential-mechanism pick per block on 1-sensitive prefix sums (2 eta-DP)."""
        return Parallel(
            ExponentialMechanism(
                "experts by the loss sums of a random prefix of the previous block",
                self.n_experts,
                1.0,
                1.0 / float(np.max(self.eta)),  # one epsilon: equal rates
            ),
            "blocks (each loss vector feeds one pick)",
        )

    def _block_length(self, r: int) -> int:
        n = 1 << r
        return min(n, self.window) if self.restarts == "capped" else n

    def _draw_prefix(self, n: int) -> np.ndarray:
        if self.prefix == "full" or n == 1:
            return np.full(self.num_envs, n, dtype=np.int64)
        half = n // 2
        return half + 1 + self.rng.integers(half)

    def _start_epoch(self) -> None:
        b, n = self.num_envs, self.n_experts
        self.block_index = 0
        self._position = 0
        self.prefix_length = np.ones(b, dtype=np.int64)
        self._prefix_sum = np.zeros((b, n))
        self._expert = self.rng.integers(n)

    def _init_state(self) -> None:
        self._start_epoch()

    def _learn(self, obs: np.ndarray) -> None:
        self._position += 1
        inside = (self._position <= self.prefix_length)[:, None]
        # Sensitivity 1 (Lemma 3) needs losses in [0, 1].
        self._prefix_sum += np.where(inside, clip_unit(obs), 0.0)
        if self._position < self._block_length(self.block_index):
            return
        if self._pick_epsilons is None:
            self._expert = exponential_mechanism(
                self._prefix_sum,
                sensitivity=1.0,
                epsilon=2.0 * self.eta,
                rng=self.rng,
                noise=self.noise,
            ).value
        else:
            self._expert = exponential_mechanism_runs(
                self._prefix_sum,
                sensitivity=1.0,
                epsilons=self._pick_epsilons,
                rng=self.rng,
                noise=self.noise,
            )
        self.block_index += 1
        self._position = 0
        self._prefix_sum = np.zeros_like(self._prefix_sum)
        self.prefix_length = self._draw_prefix(self._block_length(self.block_index))

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        upcoming = self.t + 1  # 1-based round about to be played
        if self.restarts == "periodic" and upcoming > 1 and (upcoming - 1) % self.window == 0:
            self._start_epoch()
        return self._expert

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once: the same actions, state and draws, bit for bit.

        Rounds between events are one masked sequential sum (:func:`agents._kernels.running_total`);
        events (round 1, a block's end, a periodic restart) run ``act``'s hooks. A subclass
        overriding a hook plays round by round (:func:`agents._kernels.hook_loop`).
        """
        from agents._kernels import check_block, hook_loop, hook_round, running_total

        cls = type(self)
        mine = RandomizedPrefixSoftmax
        if cls._learn is not mine._learn or cls._choose is not mine._choose:
            return hook_loop(self, obs)
        losses = check_block(self, obs)
        k = len(losses)
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        clipped: np.ndarray | None = None
        periodic = self.restarts == "periodic"
        i = 0
        while i < k:
            t = self.t
            # Plain rounds from row i: learning that does not end the block, and (periodic)
            # no restart, which comes at the first t' >= t with t' % window == 0.
            plain = self._block_length(self.block_index) - self._position - 1
            if periodic:
                plain = min(plain, -t % self.window)
            plain = min(plain, k - i) if t > 0 else 0
            if plain <= 0:  # an event: act's hooks
                actions[i] = hook_round(self, losses[i])
                i += 1
                continue
            stop = i + plain
            if clipped is None:
                clipped = clip_unit(losses)
            positions = self._position + 1 + np.arange(plain)
            inside = positions[:, None] <= self.prefix_length[None, :]
            sums = np.where(inside[:, :, None], clipped[i:stop], 0.0)
            sums[0] += self._prefix_sum  # sum + loss: IEEE addition commutes
            self._prefix_sum[...] = running_total(sums)
            self._position += plain
            actions[i:stop] = self._expert
            self.t += plain
            i = stop
        if k:
            self.last_actions = actions[-1].copy()
        return actions
