"""Observation wrappers that give RL policies the statistics online learners keep to themselves.

Each expert's mean loss over all rounds so far and over recent windows, centred across experts and
scaled by sqrt(rounds averaged), plus t / T (docs/rl.md, "Observation wrappers for RL
policies").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from dp_experts_env._validation import check_int

__all__ = ["LossFeatures", "LossStatistics", "VectorLossStatistics"]


class LossFeatures:
    """Batched running statistics of full-information loss vectors (pure numpy).

    Args:
        n_experts: N.
        horizon: T (for the round index and the feature bounds).
        windows: lengths of the recent windows (each >= 1; longer than T means T).
        cumulative: include the mean loss over all rounds so far.
        round_index: include t / T.

    Raises:
        ValueError: a bad size or window, or no feature selected.
        TypeError: a non-integer size or window.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        windows: Sequence[int] = (16, 128),
        cumulative: bool = True,
        round_index: bool = True,
    ) -> None:
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.horizon = check_int("horizon", horizon, minimum=1)
        if isinstance(windows, (str, bytes)) or not isinstance(windows, Sequence):
            raise TypeError(f"windows must be a sequence of ints, got {windows!r}")
        # Cut at T so the defaults fit any T; duplicates after the cut are dropped.
        cut = [min(check_int("windows", w, minimum=1), self.horizon) for w in windows]
        self.windows = tuple(dict.fromkeys(cut))
        self.cumulative = bool(cumulative)
        self.round_index = bool(round_index)
        if not (self.windows or self.cumulative or self.round_index):
            raise ValueError("select at least one feature (windows, cumulative or round_index)")
        groups = len(self.windows) + int(self.cumulative)
        self.dim = groups * self.n_experts + int(self.round_index)
        # Centred means lie in [-1, 1]; the sqrt(count) scale is at most sqrt(T).
        bound = math.sqrt(self.horizon)
        self.observation_space = gym.spaces.Box(
            low=np.float32(-bound), high=np.float32(bound), shape=(self.dim,), dtype=np.float32
        )
        self._ring = max(self.windows, default=0) + 1
        self.reset(1)

    def reset(self, num_runs: int) -> np.ndarray:
        """Forget everything; return the features before the first round (all zero)."""
        self.t = 0
        self._num_runs = check_int("num_runs", num_runs, minimum=1)
        # Prefix sums of the last max(windows) rounds in a ring: a window mean is a difference.
        self._prefix = np.zeros((self._ring, num_runs, self.n_experts))
        return self.features()

    def update(self, losses: np.ndarray) -> np.ndarray:
        """Add one round's (B, N) loss vectors; return the (B, dim) features."""
        losses = np.asarray(losses, dtype=np.float64).reshape(self._num_runs, self.n_experts)
        previous = self._prefix[self.t % self._ring]
        self.t += 1
        self._prefix[self.t % self._ring] = previous + losses
        return self.features()

    def update_block(self, losses: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`update` at once: their (K, B, dim) features, the same floats.

        The prefix sums accumulate in the same order (a sequential ``cumsum`` from the last one
        kept), the window sums are the same differences and the means reduce over the same axis,
        so row k is bit for bit what the k-th ``update`` call returns; the state afterwards (round
        count and ring) is the state after those K calls.

        Args:
            losses: (K, B, N) loss vectors of K rounds (K may be 0).

        Raises:
            ValueError: ``losses`` is not K rounds of (B, N) values.
        """
        b, n = self._num_runs, self.n_experts
        losses = np.asarray(losses, dtype=np.float64)
        if losses.ndim != 3 or losses.shape[1:] != (b, n):
            raise ValueError(f"losses must have shape (K, {b}, {n}), got {losses.shape}")
        k, t0, ring = len(losses), self.t, self._ring
        if k == 0:
            return np.zeros((0, b, self.dim), dtype=np.float32)
        # sums[j] is the prefix sum after round t0 - kept + j: the ring's last ones, then the K new.
        kept = min(t0, ring - 1)
        sums = np.empty((kept + 1 + k, b, n))
        sums[: kept + 1] = self._prefix[np.arange(t0 - kept, t0 + 1) % ring]
        sums[kept + 1 :] = losses
        np.cumsum(sums[kept:], axis=0, out=sums[kept:])  # P_t0 + l_1, then + l_2, ...: in order
        rounds = np.arange(t0 + 1, t0 + k + 1)
        now = sums[kept + 1 :]
        parts = []
        if self.cumulative:
            parts.append(self._scaled_rows(now, rounds))
        for w in self.windows:
            counts = np.minimum(w, rounds)
            parts.append(self._scaled_rows(now - sums[kept + 1 + np.arange(k) - counts], counts))
        if self.round_index:
            parts.append(np.broadcast_to((rounds / self.horizon)[:, None, None], (k, b, 1)))
        out = np.concatenate(parts, axis=2).astype(np.float32)
        # The ring after K updates: the last min(K, ring) prefix sums at their slots.
        last = rounds[-min(k, ring) :]
        self._prefix[last % ring] = sums[kept + 1 + last - (t0 + 1)]
        self.t = t0 + k
        return out

    @staticmethod
    def _scaled_rows(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """:meth:`_scaled` of K rounds at once, round k's ``count`` ``counts[k]`` (all >= 1)."""
        means = sums / counts[:, None, None].astype(np.float64)
        return (means - means.mean(axis=2, keepdims=True)) * np.sqrt(counts)[:, None, None]

    def features(self) -> np.ndarray:
        """The (B, dim) float32 features after ``t`` rounds."""
        t = self.t
        now = self._prefix[t % self._ring]
        parts = []
        if self.cumulative:
            parts.append(self._scaled(now, t))
        for w in self.windows:
            count = min(w, t)
            parts.append(self._scaled(now - self._prefix[(t - count) % self._ring], count))
        out = np.concatenate(parts, axis=1) if parts else np.zeros((self._num_runs, 0))
        if self.round_index:
            out = np.concatenate([out, np.full((self._num_runs, 1), t / self.horizon)], axis=1)
        return out.astype(np.float32)

    @staticmethod
    def _scaled(sums: np.ndarray, count: int) -> np.ndarray:
        if count == 0:
            return np.zeros_like(sums)
        means = sums / count
        return (means - means.mean(axis=1, keepdims=True)) * math.sqrt(count)


def _check_full_information(env: Any) -> tuple[int, int]:
    base = env.unwrapped
    if getattr(base, "feedback", None) != "full":
        raise ValueError(
            "env must be a full-information DPExperts env (loss-vector observations); "
            f"got feedback={getattr(base, 'feedback', None)!r}"
        )
    return int(base.n_experts), int(base.horizon)


class LossStatistics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Single env: observations become :class:`LossFeatures` of the losses seen so far.

    Args:
        env: a full-information ``DPExperts-*`` env.
        **feature_kwargs: as for :class:`LossFeatures`.
    """

    def __init__(self, env: gym.Env, **feature_kwargs: Any) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, **feature_kwargs)
        gym.Wrapper.__init__(self, env)
        n, horizon = _check_full_information(env)
        self.features = LossFeatures(n, horizon, **feature_kwargs)
        self.observation_space = self.features.observation_space

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the env and the statistics."""
        _, info = self.env.reset(**kwargs)
        return self.features.reset(1)[0], info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play a round; the observation is the statistics including this round's losses."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self.features.update(obs[None, :])[0], reward, terminated, truncated, info


class VectorLossStatistics(gym.vector.VectorWrapper, gym.utils.RecordConstructorArgs):
    """Native vector env: (B, N) loss observations become (B, dim) :class:`LossFeatures`.

    Follows the env's ``NEXT_STEP`` autoreset (the statistics restart with the episodes).

    Args:
        env: a full-information native vector env.
        **feature_kwargs: as for :class:`LossFeatures`.
    """

    def __init__(self, env: gym.vector.VectorEnv, **feature_kwargs: Any) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, **feature_kwargs)
        gym.vector.VectorWrapper.__init__(self, env)
        n, horizon = _check_full_information(env)
        self.features = LossFeatures(n, horizon, **feature_kwargs)
        self.single_observation_space = self.features.observation_space
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, env.num_envs
        )
        self._autoreset = False

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every run and the statistics."""
        _, info = self.env.reset(seed=seed, options=options)
        self._autoreset = False
        return self.features.reset(self.num_envs), info

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play a round in every run (or, after the last round, the env's autoreset step)."""
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self._autoreset:
            features = self.features.reset(self.num_envs)
        else:
            features = self.features.update(obs)
        self._autoreset = bool(np.all(np.logical_or(terminated, truncated)))
        return features, reward, terminated, truncated, info
