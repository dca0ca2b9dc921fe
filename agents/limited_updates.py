"""Limited updates: switch expert only at t = 2^m, picking privately from a disjoint window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import PrivacyClaim, clip_unit
from agents.private import PrivateAgent, common_args
from agents.registry import register
from dp_experts_env._validation import check_choice
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.declaration import (
    ExponentialMechanism,
    Mechanism,
    Parallel,
    ReportNoisyMin,
)
from dp_experts_env.privacy.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_runs,
    report_noisy_min,
    report_noisy_min_runs,
)
from dp_experts_env.privacy.noise import NoiseBackend

__all__ = [
    "LimitedUpdates",
    "SELECTORS",
    "private_select",
    "selection",
    "selection_scale",
]

SELECTORS = ("rnm", "em")


def selection_scale(selector: str, epsilon: float, noise: NoiseBackend) -> float:
    """Noise scale of one epsilon-DP selection over window sums (each score 1-sensitive).

    ``"rnm"``: Laplace ``2 D / epsilon`` (non-monotone scores; Asi, Raman & Saha, Lemma 2.3), D
    the backend's effective sensitivity; ``"em"``: Gumbel ``2 / epsilon``.
    """
    check_choice("selector", selector, SELECTORS)
    if selector == "em":
        return 2.0 / epsilon
    return 2.0 * noise.effective_sensitivity(1.0, dim=1) / epsilon


def selection(selector: str, n: int, scale: float, noise: NoiseBackend) -> Mechanism:
    """The declared selection over ``n`` 1-sensitive window sums at noise ``scale``."""
    if selector == "em":
        return ExponentialMechanism("experts by window loss sum", n, 1.0, scale)
    sens = noise.effective_sensitivity(1.0, dim=1)
    return ReportNoisyMin("experts by window loss sum", n, sens, scale)


def private_select(
    rng: BatchRNG, scores: np.ndarray, selector: str, epsilon: float, noise: NoiseBackend
) -> np.ndarray:
    """Private argmin of (B, N) 1-sensitive loss sums (N variates per run, data-free)."""
    mechanism = report_noisy_min if selector == "rnm" else exponential_mechanism
    return mechanism(scores, sensitivity=1.0, epsilon=epsilon, rng=rng, noise=noise).value


def is_power_of_two(x: np.ndarray | int) -> np.ndarray | bool:
    """True where ``x >= 2`` is a power of two (the update times 2, 4, 8, ...)."""
    x = np.asarray(x, dtype=np.int64)
    return (x >= 2) & ((x & (x - 1)) == 0)


@register(
    "limited-updates",
    private=True,
    summary="lazy private selection at t = 2^m on disjoint doubling windows (ARS Algorithm 1)",
)
class LimitedUpdates(PrivateAgent):
    """Plays one expert between the update times t = 2, 4, 8, ...; selects privately at each.

    Source: Asi, Raman & Saha 2025, "Tracking the Best Expert Privately", Alg. 1 / Thm 3.1
    (Section 3.1); Asi, Feldman, Koren & Talwar 2023, Alg. 2 (Section 3.2). Built for i.i.d.
    losses. At ``t = 2^m`` it selects privately on the window sums ``S(j) = sum_{s=t/2}^{t-1}
    l_s(j)`` with ``selector`` ``"rnm"`` (default: report-noisy-min) or ``"em"`` (exponential
    mechanism, E-AFKT-16). Claim: pure epsilon-DP vs adaptive (1-sensitive scores, disjoint
    windows, plays post-processing). ``mode`` and ``tuning`` change nothing; epsilon = inf takes
    the exact argmin. Deviations: argmin, not the printed argmax, in both modes (E-ARS-1); a
    uniform first expert (E-ARS-2); losses clipped to [0, 1].

    Attributes:
        selection_scale: the Laplace (rnm) or Gumbel (em) scale ``2/epsilon`` used per selection.
        selection_epsilon: epsilon spent on each selection (= epsilon).
    """

    #: public settings under which the declared mechanisms are most exposed (the audit)
    audit_hints: ClassVar[Mapping[str, Any]] = {"variants": [{"selector": "em"}]}

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
        selector: str = "rnm",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, **common_args(locals()))
        self.selector = check_choice("selector", selector, SELECTORS)
        self.selection_epsilon = self.epsilon
        self.selection_scale = selection_scale(self.selector, self.epsilon, self.noise)
        self._selection_runs: np.ndarray | None = None  # (B,) per-run epsilons, if set
        self.reset(seed)

    def set_run_epsilons(self, epsilons: Sequence[float]) -> bool:
        """Give each run its own finite epsilon; True when applied (False: nothing changed).

        Run b then equals an agent built at ``epsilons[b]``; :attr:`privacy` refuses one claim.
        """
        values = self._accept_run_epsilons(epsilons)
        if values is None:
            return False
        self._run_epsilons = values
        self._selection_runs = np.array(values)
        return True

    @property
    def declaration(self) -> Mechanism:
        """One private selection per doubling window, on that window's 1-sensitive loss sums."""
        return Parallel(
            # The scale the selection draws at (from selection_epsilon, as private_select does).
            selection(
                self.selector,
                self.n_experts,
                selection_scale(self.selector, self.selection_epsilon, self.noise),
                self.noise,
            ),
            "the disjoint doubling windows (one selection at each t = 2^m)",
        )

    @property
    def privacy(self) -> PrivacyClaim:
        """Pure epsilon-DP, parallel composition over the disjoint doubling windows."""
        self._check_one_epsilon()
        return self._declared_claim(
            source="Asi, Raman & Saha 2025, Alg. 1; Asi, Feldman, Koren & Talwar 2023, Alg. 2"
        )

    def _init_state(self) -> None:
        b, n = self.num_envs, self.n_experts
        self._window = np.zeros((b, n))
        self._expert = np.zeros(b, dtype=np.int64)

    def _learn(self, obs: np.ndarray) -> None:
        self._window += clip_unit(obs)  # sensitivity 1 needs losses in [0, 1]

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        rnd = self.t + 1  # the round about to be played (same for every run)
        if rnd == 1:
            self._expert = self.rng.integers(self.n_experts)
        elif is_power_of_two(rnd):
            if self._selection_runs is None:
                self._expert = private_select(
                    self.rng, self._window, self.selector, self.selection_epsilon, self.noise
                )
            else:
                rnm = self.selector == "rnm"
                select = report_noisy_min_runs if rnm else exponential_mechanism_runs
                self._expert = select(
                    self._window,
                    sensitivity=1.0,
                    epsilons=self._selection_runs,
                    rng=self.rng,
                    noise=self.noise,
                )
            self._window[:] = 0.0
        return self._expert.copy()

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once, bit for bit.

        Update times run ``act``'s hooks; the rounds between them are one in-order sum.
        """
        from agents._kernels import check_block, hook_loop, hook_round, running_total

        cls = type(self)
        if cls._learn is not LimitedUpdates._learn or cls._choose is not LimitedUpdates._choose:
            return hook_loop(self, obs)
        losses = check_block(self, obs)
        k = len(losses)
        actions = np.empty((k, self.num_envs), dtype=np.int64)
        clipped: np.ndarray | None = None
        i = 0
        while i < k:
            rnd = self.t + 1  # the round row i plays
            if rnd == 1 or is_power_of_two(rnd):  # a draw or a selection: act's hooks
                actions[i] = hook_round(self, losses[i])
                i += 1
                continue
            # Rounds rnd .. up to the next power of two learn and replay the held expert.
            stop = min(k, i + (1 << rnd.bit_length()) - rnd)
            if clipped is None:
                clipped = clip_unit(losses)
            sums = clipped[i:stop]
            sums[0] += self._window  # window + loss: IEEE addition commutes
            self._window[...] = running_total(sums)
            actions[i:stop] = self._expert
            self.t += stop - i
            i = stop
        if k:
            self.last_actions = actions[-1].copy()
        return actions
