"""Native vector environments: the batched core with B = ``num_envs``.

Run ``b`` reset with seed ``s`` is, bit for bit, the single env reset with seed ``s + b``; runs
end together; autoreset is Gymnasium's ``NEXT_STEP``. ``copies``, ``info_rounds`` and blocks
change no value (docs/environments.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dp_experts_env._validation import check_int
from dp_experts_env.batch_rng import run_seeds
from dp_experts_env.envs.common import (
    SEED_HIGH,
    SHARED_KEYWORDS_DOC,
    GameSetup,
    families_doc,
    parse_options,
)
from dp_experts_env.kinds import kinds_of

__all__ = ["ExpertsVectorEnv", "BanditAdviceVectorEnv"]


class _VectorEnv(GameSetup, VectorEnv):
    """Common vector-env protocol over :class:`~dp_experts_env.envs.core.GameCore`."""

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        kind: str | None = None,
        *,
        render_mode: str | None = None,
        copies: int = 1,
        **params: Any,
    ) -> None:
        self.num_envs = check_int("num_envs", num_envs, minimum=1)
        copies = check_int("copies", copies, minimum=1)
        if self.num_envs % copies:
            raise ValueError(
                f"copies must divide num_envs: {self.num_envs} runs cannot share streams in "
                f"groups of {copies}"
            )
        # The env keywords (EnvParams) and the family's knobs are told apart by build_game.
        kind = self.kinds[0] if kind is None else kind
        single_obs, single_act = self._setup(kind, self.num_envs, render_mode, params, copies)
        self.copies = copies
        self.num_streams = self.num_envs // copies
        self.single_observation_space = single_obs
        self.single_action_space = single_act
        self._observation_space: Any = None  # built on first access (see observation_space)
        self.action_space = batch_space(single_act, self.num_envs)
        self.render_mode = None
        self._run_rngs: list[np.random.Generator] | None = None
        self._needs_autoreset = False
        self._info_rounds: frozenset[int] | None = None

    @property
    def observation_space(self) -> Any:
        """The batched observation space, built on first access (its bounds can be huge)."""
        if self._observation_space is None:
            self._observation_space = batch_space(self.single_observation_space, self.num_envs)
        return self._observation_space

    @observation_space.setter
    def observation_space(self, space: Any) -> None:
        self._observation_space = space

    @property
    def info_rounds(self) -> frozenset[int] | None:
        """Rounds after which ``step`` builds ``info`` (None: every round, the default)."""
        return self._info_rounds

    @info_rounds.setter
    def info_rounds(self, rounds: Iterable[int] | None) -> None:
        if rounds is None:
            self._info_rounds = None
            return
        if isinstance(rounds, (str, bytes)) or not hasattr(rounds, "__iter__"):
            raise TypeError(f"info_rounds must be None or a collection of rounds, got {rounds!r}")
        self._info_rounds = frozenset(
            check_int("info_rounds", r, minimum=1, maximum=self.horizon) for r in rounds
        )

    def reset(
        self,
        *,
        seed: int | Sequence[int] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start B episodes.

        Args:
            seed: an int ``s`` (runs get ``s, ..., s+B-1``), a sequence of B ints (one per stream
                with ``copies``), or None (each run's own generator).
            options: ``{"neighbor": {"round": t, "loss": vector}}`` replaces round t's protected
                datum in every run.

        Returns:
            (batched observation, {}).
        """
        neighbor = parse_options(options, self.core)
        streams = self.num_streams
        if seed is None:
            if self._run_rngs is None:
                self._run_rngs = [seeding.np_random(s)[0] for s in run_seeds(None, streams)]
            seeds = [int(g.integers(SEED_HIGH)) for g in self._run_rngs]
        else:
            if self.copies > 1 and isinstance(seed, Sequence) and len(seed) != streams:
                raise ValueError(
                    f"seed must hold one seed per stream: {streams} (num_envs {self.num_envs} / "
                    f"copies {self.copies}), got {len(seed)}"
                )
            seeds = run_seeds(seed, streams)
            self._run_rngs = [seeding.np_random(s)[0] for s in seeds]
            self._np_random_seed = seeds[0]
        self._np_random = self._run_rngs[0]
        self._needs_autoreset = False
        return self.core.reset(seeds, neighbor), {}

    def step(
        self, actions: Any
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play one round in every run; (B,) actions, batched returns."""
        b = self.num_envs
        if self._needs_autoreset:
            obs, info = self.reset()
            return obs, np.zeros(b), np.zeros(b, dtype=bool), np.zeros(b, dtype=bool), info
        rounds = self._info_rounds
        obs, charged, info = self.core.step(actions, rounds is None or self.core.t + 1 in rounds)
        done = self.core.t >= self.horizon
        self._needs_autoreset = done
        # Gymnasium's ``_key`` masks: one fresh all-True block per step, a row per key.
        if info:
            masks = np.ones((len(info), b), dtype=bool)
            for key, mask in zip(list(info), masks, strict=True):
                info[f"_{key}"] = mask
        return obs, 0.0 - charged, np.full(b, done), np.zeros(b, dtype=bool), info

    def next_block(self, k: int) -> Any:
        """The next ``min(k, T - t)`` rounds, a :class:`~dp_experts_env.envs.core.RoundBlock`.

        Oblivious games only; :meth:`step_block` plays it (K :meth:`step` calls bit for bit).
        """
        if self._needs_autoreset:
            raise RuntimeError("the episode is over: call reset() before next_block()")
        return self.core.next_block(k)

    def step_block(
        self, actions: Any
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play the pending block with (K, B) actions.

        Returns:
            (last observation, rewards (K, B), terminated (B,), truncated (B,), the last round's
            info, per ``info_rounds``).
        """
        rounds = self._info_rounds
        last = self.core.t + len(np.asarray(actions))
        obs, charged, info = self.core.step_block(actions, rounds is None or last in rounds)
        done = self.core.t >= self.horizon
        self._needs_autoreset = done
        b = self.num_envs
        if info:
            masks = np.ones((len(info), b), dtype=bool)
            for key, mask in zip(list(info), masks, strict=True):
                info[f"_{key}"] = mask
        return obs, 0.0 - charged, np.full(b, done), np.zeros(b, dtype=bool), info


class ExpertsVectorEnv(_VectorEnv):
    """Vector version of :class:`~dp_experts_env.envs.ExpertsEnv` (full information).

    Observations (B, N); actions, rewards, terminations, truncations and ``info`` values (B,).

    Args:
        num_envs: B, the number of runs played in lockstep.
        kind: one of ``kinds`` (the full-information rows of the kind table; set by the id).
    """

    kinds = kinds_of("full")


class BanditAdviceVectorEnv(_VectorEnv):
    """Vector version of :class:`~dp_experts_env.envs.BanditAdviceEnv` (bandit feedback).

    Observations: ``advice`` (B, N*K), ``last_action`` (B,), ``last_loss`` (B, 1).

    Args:
        num_envs: B, the number of runs played in lockstep.
        kind: one of ``kinds`` (the bandit rows of the kind table; set by the id).
    """

    kinds = kinds_of("bandit")


ExpertsVectorEnv.__doc__ = (
    (ExpertsVectorEnv.__doc__ or "") + SHARED_KEYWORDS_DOC + families_doc(ExpertsVectorEnv.kinds)
)
BanditAdviceVectorEnv.__doc__ = (
    (BanditAdviceVectorEnv.__doc__ or "")
    + SHARED_KEYWORDS_DOC
    + families_doc(BanditAdviceVectorEnv.kinds)
)
