"""The adversary contract: batched, seeded loss models with no Gymnasium inside.

B games at once, each round in two phases: ``_draw(t)`` produces the protected datum ``z_t``
(B, D) with a fixed number of uniforms, ``_finish(t, z)`` turns it into a :class:`Round` (past
actions allowed, never the current one). A neighbouring game (``reset(..., neighbor=...)``)
replaces ``z_t`` between the two phases and leaves every other round and stream untouched.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_int, check_loss_array

__all__ = ["Adversary", "Neighbor", "Round", "DATA_STREAM", "STRUCTURE_STREAM", "ADVICE_STREAM"]

# Stream identifiers for BatchRNG: one seed feeds several independent streams.
DATA_STREAM = 0  # the protected per-round data z_t
STRUCTURE_STREAM = 1  # change points, segment means, planted experts: drawn at reset
ADVICE_STREAM = 2  # public per-round randomness (advice, adaptive policy coins)


@dataclass
class Round:
    """One round of B games.

    Attributes:
        losses: (B, N) expert losses, or (B, K) arm losses for bandit models.
        means: expected values of ``losses`` (same shape), when the model knows them.
        advice: (B, N, K) experts' distributions over arms (bandit models only).
        segment: (B,) index of the stationary segment the round belongs to, when defined.
        shift: (B,) True on the first round of a new segment (never on round 1).
    """

    losses: np.ndarray
    means: np.ndarray | None = None
    advice: np.ndarray | None = None
    segment: np.ndarray | None = None
    shift: np.ndarray | None = None


@dataclass(frozen=True)
class Neighbor:
    """Replace the datum of one round (1-based) by ``vector`` in every run."""

    round: int
    vector: np.ndarray


class Adversary(ABC):
    """Base class of every loss model.

    Subclasses validate their parameters in ``__init__``, allocate per-episode state in
    ``_reset`` and implement ``_draw``; they override ``_finish`` when losses are not the datum
    and ``record`` when they react to actions.

    Class attributes:
        feedback: ``"full"`` (learner sees the loss vector) or ``"bandit"`` (advice models).
        oblivious: True when losses never depend on the learner's actions.
        knows_means: True when rounds carry ``means`` (pseudo-regret is then reported).
        has_segments: True when rounds carry ``segment``/``shift``.

    Subclasses also keep ``default_switches``, the env's default comparator switch budget S.
    """

    feedback: ClassVar[str] = "full"
    oblivious: ClassVar[bool] = True
    knows_means: ClassVar[bool] = False
    has_segments: ClassVar[bool] = False

    def __init__(self, n_experts: int, horizon: int, n_arms: int | None = None) -> None:
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.horizon = check_int("horizon", horizon, minimum=1)
        if self.feedback == "bandit":
            self.n_arms: int | None = check_int("n_arms", n_arms, minimum=2)
        else:
            self.n_arms = None
        self.default_switches = 0
        self.num_runs = 0
        self.t = 0
        self._neighbor: Neighbor | None = None

    @property
    def datum_size(self) -> int:
        """Length D of one round's protected datum (N for full information, K for bandits)."""
        return self.n_arms if self.feedback == "bandit" else self.n_experts

    def reset(self, seeds: Sequence[int], neighbor: Neighbor | None = None) -> None:
        """Start B = ``len(seeds)`` new games; run ``b`` is a pure function of ``seeds[b]``."""
        seeds = [int(s) for s in seeds]
        if not seeds:
            raise ValueError("seeds must hold at least one seed")
        if neighbor is not None:
            neighbor = self.check_neighbor(neighbor)
        self._neighbor = neighbor
        self.num_runs = len(seeds)
        self.t = 0
        self._reset(seeds)

    def check_neighbor(self, neighbor: Any) -> Neighbor:
        """Validate a neighbour specification against this game's horizon and datum size."""
        if isinstance(neighbor, dict):
            unknown = set(neighbor) - {"round", "loss"}
            if unknown or "round" not in neighbor or "loss" not in neighbor:
                raise ValueError(
                    "neighbor must be a dict with exactly the keys 'round' (1..T) and 'loss' "
                    f"(a vector of {self.datum_size} values in [0, 1]); got keys {sorted(neighbor)}"
                )
            neighbor = Neighbor(neighbor["round"], neighbor["loss"])
        if not isinstance(neighbor, Neighbor):
            raise TypeError(f"neighbor must be a dict or Neighbor, got {type(neighbor).__name__}")
        rnd = check_int("neighbor['round']", neighbor.round, minimum=1, maximum=self.horizon)
        vec = check_loss_array(
            "neighbor['loss']", neighbor.vector, ndim=1, shape=(self.datum_size,)
        )
        return Neighbor(rnd, vec)

    def next_round(self) -> Round:
        """Advance to the next round and return its data (computed from past actions only)."""
        if self.num_runs == 0:
            raise RuntimeError("call reset() before next_round()")
        if self.t >= self.horizon:
            raise RuntimeError(f"the game is over: all {self.horizon} rounds were played")
        self.t += 1
        z = self._draw(self.t)
        if self._neighbor is not None and self._neighbor.round == self.t:
            z = np.broadcast_to(self._neighbor.vector, z.shape).copy()
        return self._finish(self.t, z)

    def next_rounds(self, k: int) -> Round | None:
        """Rounds t+1..t+k as ``k`` :meth:`next_round` calls give them (k, B, ...), or None."""
        return None

    def record(self, actions: np.ndarray) -> None:
        """Receive the actions played in the current round (adaptive models override)."""
        return None

    @abstractmethod
    def _reset(self, seeds: list[int]) -> None:
        """Allocate the per-episode state of B runs (streams, change points, means)."""

    @abstractmethod
    def _draw(self, t: int) -> np.ndarray:
        """Return round ``t``'s datum, shape (B, D), values in [0, 1]."""

    def _finish(self, t: int, z: np.ndarray) -> Round:
        """Turn the datum into the round; the default: losses are the datum, no means."""
        return Round(losses=z)

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays by this adversary (for memory-bound tests)."""
        total = 0
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                total += value.nbytes
            elif hasattr(value, "state_nbytes") and value is not self:
                total += value.state_nbytes()
        return int(total)
