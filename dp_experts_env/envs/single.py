"""Single Gymnasium environments: the batched core with B = 1."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from dp_experts_env._validation import check_int
from dp_experts_env.envs.common import (
    SEED_HIGH,
    SHARED_KEYWORDS_DOC,
    GameSetup,
    families_doc,
    parse_options,
)
from dp_experts_env.envs.render import RENDER_MODES, render_ansi, render_rgb
from dp_experts_env.kinds import kinds_of

__all__ = ["ExpertsEnv", "BanditAdviceEnv"]


class _SingleEnv(GameSetup, gym.Env):
    """Common single-env protocol (B = 1 over :class:`~dp_experts_env.envs.core.GameCore`)."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 30}

    def __init__(
        self,
        kind: str | None = None,
        *,
        render_mode: str | None = None,
        **params: Any,
    ) -> None:
        # The env keywords (EnvParams) and the family's knobs are told apart by build_game.
        kind = self.kinds[0] if kind is None else kind
        self.observation_space, self.action_space = self._setup(kind, 1, render_mode, params)
        self.render_mode = render_mode
        self._last: dict[str, Any] | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: the adversary's run seed; None draws one from the env's ``np_random``.
            options: ``{"neighbor": {"round": t, "loss": vector}}`` replays the game with round t's
                protected datum (loss vector, arm losses, adaptive base losses) replaced.

        Returns:
            (observation, {}): all-zero losses (full information) or round 1's advice (bandit).
        """
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
        neighbor = parse_options(options, self.core)
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(SEED_HIGH))
        obs = self.core.reset([run_seed], neighbor)
        self._last = None
        return self._unbatch_obs(obs), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Play one round: charge round t's loss of ``action`` and reveal the feedback."""
        a = self._scalar_action(action)
        obs_1, loss, info_1 = self.core.step_one(a)
        reward = 0.0 - loss
        terminated = self.core.t >= self.horizon
        if self.render_mode is not None:
            self._remember(a, obs_1, info_1)
        return obs_1, reward, terminated, False, info_1

    def next_block(self, k: int) -> Any:
        """The next ``min(k, T - t)`` rounds as a :class:`~dp_experts_env.envs.core.RoundBlock`."""
        return self.core.next_block(k)

    def step_block(self, actions: Any) -> tuple[Any, np.ndarray, bool, bool, dict[str, Any]]:
        """Play the pending block with (K,) actions: K :meth:`step` calls, bit for bit.

        Returns:
            (last observation, rewards (K,), terminated, False, the last round's info).
        """
        arr = np.asarray(actions)
        if arr.ndim != 1:
            raise ValueError(f"actions must have shape (K,), got {arr.shape}")
        obs, charged, info = self.core.step_block(arr[:, None])
        info_1 = {key: value[0].item() for key, value in info.items()}
        terminated = self.core.t >= self.horizon
        return self._unbatch_obs(obs), 0.0 - charged[:, 0], terminated, False, info_1

    def render(self) -> str | np.ndarray | None:
        """The last round as text (``"ansi"``) or bars (``"rgb_array"``); None without a mode."""
        if self.render_mode == "ansi":
            return render_ansi(self.horizon, self._last)
        if self.render_mode == "rgb_array":
            return render_rgb(self.core.n_actions, self._last)
        return None

    def _remember(self, action: int, obs: Any, info: dict[str, Any]) -> None:
        if isinstance(obs, dict):
            feedback = np.full(self.core.n_actions, np.nan)
            feedback[action] = obs["last_loss"][0]
        else:
            feedback = np.array(obs)
        self._last = {"action": action, "feedback": feedback, "info": info}

    def _scalar_action(self, action: Any) -> int:
        hi = self.core.n_actions - 1
        value: Any = action
        if isinstance(action, np.ndarray) and action.size == 1 and action.ndim <= 1:
            value = action.reshape(-1)[0]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(
                f"action must be an integer in [0, {hi}]; got {action!r} ({type(action).__name__})"
            )
        a = int(value)
        if not 0 <= a <= hi:
            raise ValueError(f"action must lie in [0, {hi}], got {a}")
        return a

    def _unbatch_obs(self, obs: Any) -> Any:
        if isinstance(obs, dict):
            advice = obs["advice"][0]
            return {
                # Fresh data on every call (a vector env's identity advice is a shared view).
                "advice": advice.copy() if self.core.identity_advice else advice,
                "last_action": np.int64(obs["last_action"][0]),
                "last_loss": obs["last_loss"][0],
            }
        return obs[0]


class ExpertsEnv(_SingleEnv):
    """Prediction with expert advice under full information (docs/environments.md, "Protocol").

    The learner picks an expert ``a`` (``Discrete(N)``), is charged ``l_t[a]`` (``reward =
    -l_t[a]``) and sees ``l_t`` (``Box(0, 1, (N,), float64)``; zeros after ``reset``);
    ``terminated`` after round T. ``info`` is for evaluation only: agents must not read it.

    Args:
        kind: one of ``kinds`` (the full-information rows of the kind table; set by the id).
    """

    kinds = kinds_of("full")


class BanditAdviceEnv(_SingleEnv):
    """Bandits with expert advice (the bandit kinds of :mod:`dp_experts_env.kinds`).

    The learner pulls an arm (``Discrete(K)``) and sees only its loss. Observation:
    ``Dict(advice: Box(0, 1, (N*K,)), last_action: Discrete(K), last_loss: Box(0, 1, (1,)))``,
    ``advice[j*K + i]`` expert j's probability of arm i for the round about to be played (zeros
    after the last round), ``last_*`` the previous round's (zeros after ``reset``). Experts' losses
    are ``<advice_j, l_t>``; the ``bandit`` kind has the K identity experts.

    Args:
        kind: one of ``kinds`` (the bandit rows of the kind table; set by the id).
    """

    kinds = kinds_of("bandit")


ExpertsEnv.__doc__ = (
    (ExpertsEnv.__doc__ or "") + SHARED_KEYWORDS_DOC + families_doc(ExpertsEnv.kinds)
)
BanditAdviceEnv.__doc__ = (
    (BanditAdviceEnv.__doc__ or "") + SHARED_KEYWORDS_DOC + families_doc(BanditAdviceEnv.kinds)
)
