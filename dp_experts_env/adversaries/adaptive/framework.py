"""The adaptive framework: action history, policies, base data and :class:`PolicyAdversary`.

Timing and randomness rules: :mod:`dp_experts_env.adversaries.adaptive`.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_choice, check_float, check_int, check_loss_array
from dp_experts_env.adversaries.base import ADVICE_STREAM, DATA_STREAM, Adversary, Round
from dp_experts_env.adversaries.params import BaseLossParams
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "ActionHistory",
    "AdaptivePolicy",
    "BaseLosses",
    "PolicyAdversary",
    "PolicyAdversaryParams",
    "BASES",
    "make_base",
]

BASES = ("bernoulli", "zeros", "uniform")


def _nbytes_of(obj: object, skip: tuple[object, ...] = ()) -> int:
    """Bytes in numpy arrays held by ``obj`` (and by members that report ``state_nbytes``)."""
    total = 0
    for value in vars(obj).values():
        if any(value is s for s in skip):
            continue
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif hasattr(value, "state_nbytes") and value is not obj and not isinstance(value, type):
            total += value.state_nbytes()
    return int(total)


class ActionHistory:
    """The last ``window`` actions of B runs, in a ring buffer (O(B * window) memory).

    Args:
        num_runs: B.
        window: how many past rounds to keep (0 keeps none, only the count).
    """

    def __init__(self, num_runs: int, window: int) -> None:
        self.num_runs = int(num_runs)
        self.window = int(window)
        self.count = 0  # rounds recorded so far (= t - 1 while round t is being computed)
        self._buf = np.zeros((self.num_runs, self.window), dtype=np.int64)
        self._pos = 0

    def push(self, actions: np.ndarray) -> np.ndarray | None:
        """Append one round's actions (B,); return the evicted column when the window was full."""
        self.count += 1
        if self.window == 0:
            return None
        evicted = None
        if self.count > self.window:
            evicted = self._buf[:, self._pos].copy()
        self._buf[:, self._pos] = actions
        self._pos = (self._pos + 1) % self.window
        return evicted

    def last(self, k: int | None = None) -> np.ndarray:
        """The last ``k`` actions (all kept if None), newest (``J_{t-1}``) first: (B, <= k)."""
        kept = min(self.count, self.window)
        k = kept if k is None else max(0, min(int(k), kept))
        if k == 0:
            return np.zeros((self.num_runs, 0), dtype=np.int64)
        idx = (self._pos - 1 - np.arange(k)) % self.window
        return self._buf[:, idx]

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays."""
        return int(self._buf.nbytes)


class AdaptivePolicy(ABC):
    """How losses react to past actions; subclass it to write your own adaptive adversary.

    One policy serves B runs (leading run axis). The adversary calls:

    * ``reset(num_runs, n_experts, horizon, rng)`` each episode; ``rng`` (public coins, the
      ADVICE stream) is the only randomness allowed, a fixed number of draws per round.
    * ``losses(t, z, history)`` each round ``t`` (1-based): ``z`` (B, N) in [0, 1] is the
      protected base datum (keep no reference), ``history`` the :class:`ActionHistory` of rounds
      ``< t``; return (B, N) losses in [0, 1].
    * ``record(t, actions)`` after round ``t`` ((B,) int64): update whole-past statistics here.

    Class attributes a subclass may set:
        window: past actions kept for ``history`` (0 = none; the horizon costs O(B T) memory).
        default_switches: the comparator switch budget S an env should use by default.
        has_segments: True when ``segment(t)`` returns a block index.
    """

    window: int = 0
    default_switches: int = 0
    has_segments: bool = False

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Start B new episodes (the base implementation stores the arguments)."""
        self.num_runs = int(num_runs)
        self.n_experts = int(n_experts)
        self.horizon = int(horizon)
        self.rng = rng

    @abstractmethod
    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Round ``t``'s loss vectors (B, N) in [0, 1] from the datum and past actions only."""

    def record(self, t: int, actions: np.ndarray) -> None:
        """Receive round ``t``'s actions (B,) after the round was played."""
        return None

    def segment(self, t: int) -> int | np.ndarray | None:
        """Index of the block round ``t`` belongs to (only when ``has_segments``)."""
        return None

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays by this policy."""
        return _nbytes_of(self)


class BaseLosses:
    """Generator of the protected base datum ``z_t`` (B, N): a pure function of (seed, t).

    Subclasses implement ``draw`` with a fixed number of uniforms per round (the DATA stream).
    """

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Start B new episodes on the data stream ``rng``."""
        self.num_runs = int(num_runs)
        self.n_experts = int(n_experts)
        self.horizon = int(horizon)
        self.rng = rng

    def draw(self, t: int) -> np.ndarray:
        """Round ``t``'s base datum, shape (B, N), values in [0, 1]."""
        raise NotImplementedError

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays by this generator."""
        return _nbytes_of(self)


class _ZerosBase(BaseLosses):
    def draw(self, t: int) -> np.ndarray:
        return np.zeros((self.num_runs, self.n_experts))


class _UniformBase(BaseLosses):
    def draw(self, t: int) -> np.ndarray:
        return self.rng.random((self.n_experts,))


class _BernoulliBase(BaseLosses):
    def __init__(self, mean: np.ndarray) -> None:
        self.mean = mean

    def draw(self, t: int) -> np.ndarray:
        return self.rng.bernoulli(self.mean, (self.n_experts,))


def make_base(base: Any, n_experts: int, base_mean: Any) -> BaseLosses:
    """The base datum generator of the ``base``/``base_mean`` knobs (every adaptive family).

    Args:
        base: ``"bernoulli"`` (i.i.d. Bernoulli(base_mean)), ``"zeros"``, ``"uniform"``
            (U[0, 1)) or a :class:`BaseLosses` object (returned as it is).
        n_experts: the number of experts N.
        base_mean: the Bernoulli means (a number or N numbers in [0, 1]; default 0.5), only
            with ``base="bernoulli"``.

    Raises:
        ValueError: an unknown base, a mean out of [0, 1], or ``base_mean`` with another base.
        TypeError: ``base`` is neither a name nor a :class:`BaseLosses`.
    """
    if isinstance(base, BaseLosses):
        if base_mean is not None:
            raise ValueError(
                "base_mean applies only to base='bernoulli', not to a BaseLosses object"
            )
        return base
    if not isinstance(base, str):
        raise TypeError(
            f"base must be one of {BASES} or a BaseLosses object, got {type(base).__name__}"
        )
    check_choice("base", base, BASES)
    if base != "bernoulli":
        if base_mean is not None:
            raise ValueError(f"base_mean applies only to base='bernoulli', got base={base!r}")
        return _ZerosBase() if base == "zeros" else _UniformBase()
    if base_mean is None:
        base_mean = 0.5
    if isinstance(base_mean, numbers.Real) and not isinstance(base_mean, bool):
        mean = np.full(n_experts, check_float("base_mean", base_mean, minimum=0.0, maximum=1.0))
    else:
        mean = check_loss_array("base_mean", base_mean, ndim=1, shape=(n_experts,))
    return _BernoulliBase(mean)


def _check_actions(actions: Any, num_runs: int, n_experts: int) -> np.ndarray:
    arr = np.asarray(actions)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"actions must be integers in [0, {n_experts}), got dtype {arr.dtype}")
    if arr.ndim == 0 and num_runs == 1:
        arr = arr.reshape(1)
    if arr.shape != (num_runs,):
        raise ValueError(f"actions must have shape ({num_runs},), got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_experts):
        raise ValueError(f"actions must lie in [0, {n_experts}), got {arr.min()}..{arr.max()}")
    return arr.astype(np.int64, copy=True)


class PolicyAdversary(Adversary):
    """An adaptive adversary: base datum ``z_t`` (protected) turned into losses by a policy.

    Args:
        n_experts: N.
        horizon: T.
        policy: an :class:`AdaptivePolicy` (built-in or user-defined).
        params: the base datum (:class:`PolicyAdversaryParams`, or its knobs as keywords), as
            :func:`make_base` reads ``base`` and ``base_mean``.

    The policy's ``default_switches`` and ``has_segments`` become the adversary's; the env calls
    ``record(actions)`` after every round.
    """

    oblivious = False
    knows_means = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: PolicyAdversaryParams | None = None,
        *,
        policy: AdaptivePolicy,
        **knobs: Any,
    ) -> None:
        p = PolicyAdversaryParams.resolve(params, knobs)
        base, base_mean = p.base, p.base_mean
        super().__init__(n_experts, horizon)
        if not isinstance(policy, AdaptivePolicy):
            raise TypeError(
                "policy must be an AdaptivePolicy instance (subclass "
                "dp_experts_env.adversaries.AdaptivePolicy and implement losses(t, z, history)); "
                f"got {type(policy).__name__}"
            )
        self.policy = policy
        self.base = make_base(base, self.n_experts, base_mean)
        self.default_switches = check_int(
            "policy.default_switches", policy.default_switches, minimum=0
        )
        # The class attribute of Adversary is a default; a policy with blocks reports segments.
        self.has_segments = bool(policy.has_segments)  # type: ignore[misc]
        self._window = min(check_int("policy.window", policy.window, minimum=0), self.horizon)
        self._history: ActionHistory | None = None
        self._recorded = 0
        self._prev_segment: np.ndarray | None = None

    def _reset(self, seeds: list[int]) -> None:
        self._start(BatchRNG(seeds, DATA_STREAM), BatchRNG(seeds, ADVICE_STREAM))

    def _start(self, data_rng: BatchRNG, coin_rng: BatchRNG) -> None:
        """Start an episode on given streams (also runs this game as one block of another)."""
        self.num_runs = data_rng.num_runs
        self.t = 0
        self._recorded = 0
        self._prev_segment = None
        self.base.reset(self.num_runs, self.n_experts, self.horizon, data_rng)
        self.policy.reset(self.num_runs, self.n_experts, self.horizon, coin_rng)
        self._history = ActionHistory(self.num_runs, self._window)

    def _draw(self, t: int) -> np.ndarray:
        if self._recorded != t - 1:
            raise RuntimeError(
                f"record(actions) of round {t - 1} must be called before the losses of round {t} "
                "are computed (adaptive adversaries react to every past action)"
            )
        return self.base.draw(t)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        assert self._history is not None
        raw = self.policy.losses(t, z, self._history)
        losses = np.asarray(raw, dtype=np.float64)
        shape = (self.num_runs, self.n_experts)
        if losses.shape != shape:
            raise ValueError(
                f"{type(self.policy).__name__}.losses must return shape {shape}, got {losses.shape}"
            )
        if not np.all(np.isfinite(losses)) or losses.min() < 0.0 or losses.max() > 1.0:
            raise ValueError(
                f"{type(self.policy).__name__}.losses must return finite values in [0, 1] "
                f"(round {t}); got range [{np.nanmin(losses)}, {np.nanmax(losses)}]"
            )
        if not self.has_segments:
            return Round(losses=losses)
        seg = np.broadcast_to(np.asarray(self.policy.segment(t), dtype=np.int64), (self.num_runs,))
        seg = seg.copy()
        prev = self._prev_segment
        shift = np.zeros(self.num_runs, dtype=bool) if prev is None else seg != prev
        self._prev_segment = seg
        return Round(losses=losses, segment=seg, shift=shift)

    def record(self, actions: np.ndarray) -> None:
        """Receive the actions of the round just played and pass them to the policy."""
        if self.t == 0 or self._recorded == self.t:
            raise RuntimeError(
                "record(actions) must follow next_round(), exactly once per round "
                f"(round {self.t}, already recorded {self._recorded})"
            )
        acts = _check_actions(actions, self.num_runs, self.n_experts)
        self.policy.record(self.t, acts)
        assert self._history is not None
        self._history.push(acts)
        self._recorded = self.t


@dataclass(frozen=True)
class PolicyAdversaryParams(BaseLossParams):
    """Knobs of :class:`PolicyAdversary` besides its policy (an env wrapping a policy object)."""
