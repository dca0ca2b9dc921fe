"""Simple adaptive policies: punish the learner's recent or frequent choices.

The ``punish_last`` (the adaptive kind's default) and ``punish_frequent`` families, after Asi,
Raman & Saha, Section 2.1: each is a :class:`~dp_experts_env.adversaries.adaptive.framework.
PolicyAdversary` over a base datum, with a policy that reads past actions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_int
from dp_experts_env.adversaries.adaptive.framework import (
    ActionHistory,
    AdaptivePolicy,
    PolicyAdversary,
)
from dp_experts_env.adversaries.params import BaseLossParams
from dp_experts_env.adversaries.registry import register_family
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "PunishLastPolicy",
    "PunishFrequentPolicy",
    "PunishLastParams",
    "PunishFrequentParams",
    "punish_last",
    "punish_frequent",
]


class PunishLastPolicy(AdaptivePolicy):
    """Loss 1 on every expert played in the last ``k`` rounds, the base datum elsewhere."""

    def __init__(self, k: int = 1) -> None:
        self.k = check_int("k", k, minimum=1)
        self.window = self.k

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Punish the recently played experts."""
        out = np.array(z, dtype=np.float64, copy=True)
        recent = history.last(self.k)
        if recent.shape[1]:
            out[np.arange(out.shape[0])[:, None], recent] = 1.0
        return out


class PunishFrequentPolicy(AdaptivePolicy):
    """Loss 1 on the ``n_punished`` experts played most often in the last ``window`` rounds.

    Only experts played in the window are punished; ties go to the lower index (no coins).
    """

    def __init__(self, window: int = 100, n_punished: int = 1) -> None:
        self.frequency_window = check_int("window", window, minimum=1)
        self.n_punished = check_int("n_punished", n_punished, minimum=1)

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Clear the window counts."""
        super().reset(num_runs, n_experts, horizon, rng)
        if self.n_punished > n_experts:
            raise ValueError(
                f"n_punished must be <= n_experts ({n_experts}), got {self.n_punished}"
            )
        self._recent = ActionHistory(num_runs, min(self.frequency_window, horizon))
        self._counts = np.zeros((num_runs, n_experts), dtype=np.int64)
        # Tie-break key: a higher count wins, then a lower index.
        self._rank_offset = (n_experts - 1 - np.arange(n_experts)).astype(np.int64)

    def record(self, t: int, actions: np.ndarray) -> None:
        """Slide the window by one round."""
        rows = np.arange(self.num_runs)
        evicted = self._recent.push(actions)
        self._counts[rows, actions] += 1
        if evicted is not None:
            self._counts[rows, evicted] -= 1

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Punish the most frequent recent experts."""
        played = self._counts > 0
        if self.n_punished >= self.n_experts:
            mask = played
        else:
            score = self._counts * self.n_experts + self._rank_offset
            top = np.argpartition(-score, self.n_punished - 1, axis=1)[:, : self.n_punished]
            mask = np.zeros_like(played)
            mask[np.arange(self.num_runs)[:, None], top] = True
            mask &= played
        return np.where(mask, 1.0, z)


@dataclass(frozen=True)
class PunishLastParams(BaseLossParams):
    """Knobs of :func:`punish_last`: the memory ``k`` and the base datum."""

    k: int = 1


@dataclass(frozen=True)
class PunishFrequentParams(BaseLossParams):
    """Knobs of :func:`punish_frequent`: the window, the number punished and the base datum."""

    window: int = 100
    n_punished: int = 1


@register_family("adaptive", "punish_last", PunishLastParams)
def punish_last(
    n_experts: int,
    horizon: int,
    params: PunishLastParams | None = None,
    **knobs: Any,
) -> PolicyAdversary:
    """The default adaptive family, the suite's example; knobs: :class:`PunishLastParams`."""
    p = PunishLastParams.resolve(params, knobs)
    return PolicyAdversary(
        n_experts, horizon, policy=PunishLastPolicy(p.k), base=p.base, base_mean=p.base_mean
    )


@register_family("adaptive", "punish_frequent", PunishFrequentParams)
def punish_frequent(
    n_experts: int,
    horizon: int,
    params: PunishFrequentParams | None = None,
    **knobs: Any,
) -> PolicyAdversary:
    """PunishFrequent(W, m) (the suite's example); knobs: :class:`PunishFrequentParams`."""
    p = PunishFrequentParams.resolve(params, knobs)
    n_experts = check_int("n_experts", n_experts, minimum=1)
    n_punished = check_int("n_punished", p.n_punished, minimum=1, maximum=n_experts)
    return PolicyAdversary(
        n_experts,
        horizon,
        policy=PunishFrequentPolicy(p.window, n_punished),
        base=p.base,
        base_mean=p.base_mean,
    )
