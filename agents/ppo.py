"""PPO as a non-private RL baseline that takes part in comparisons (``agents.make("ppo", ...)``).

It trains across simulated episodes of the env's public description, then plays frozen: "what a
learner tuned to this class of environments reaches", not an online algorithm. It imports the env
layer and the ``sb3`` extra lazily, when built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import Agent, PrivacyClaim, no_privacy
from agents.registry import register

__all__ = ["PPOBaseline"]

# Trained policies by their full training description, reused within a process.
_TRAINED: dict[tuple, Any] = {}
_SPEC_NOISE = ("num_envs", "vectorization_mode", "render_mode")


@register(
    "ppo",
    private=False,
    summary="PPO (Stable-Baselines3) trained on simulated episodes of the env, then frozen; "
    "non-private RL baseline (needs the sb3 extra)",
)
class PPOBaseline(Agent):
    """PPO trained on the env's public description, playing with a per-expert scoring policy.

    Source: Schulman et al. (2017), "Proximal Policy Optimization Algorithms", as implemented by
    Stable-Baselines3, with :class:`dp_experts_env.rl.ExpertScorePolicy` on
    :class:`dp_experts_env.wrappers.LossFeatures` observations. Not private.

    Args:
        n_experts: N (also ``horizon`` T, ``num_envs`` B; ``n_arms`` unused).
        seed: seeds the action sampling (run b uses seed + b).
        env_spec: the env's Gymnasium spec (``agents.make(..., env=env)`` passes it).
        env_id: instead of ``env_spec``: the env id to train on (with ``env_kwargs``).
        timesteps: training steps (rounds over all parallel training runs).
        train_seed: seeds training; the policy is a function of the env description, ``timesteps``,
            ``train_seed`` and the features.
        windows: recent-window lengths of the features.
        deterministic: play the highest-scoring expert instead of sampling the policy.
    """

    feedback: ClassVar[str] = "full"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
        env_spec: Any = None,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        timesteps: int = 100_000,
        train_seed: int = 0,
        windows: Sequence[int] = (16, 128),
        deterministic: bool = False,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        if env_id is None:
            if env_spec is None:
                raise ValueError(
                    "env_id: the PPO baseline trains on the env before playing; build it with "
                    "agents.make('ppo', env=env) or pass env_id= (and env_kwargs=)"
                )
            env_id = env_spec.id
            spec_kwargs = {k: v for k, v in env_spec.kwargs.items() if k not in _SPEC_NOISE}
            env_kwargs = {**spec_kwargs, **dict(env_kwargs or {})}
        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a string, got {type(env_id).__name__}")
        if not isinstance(deterministic, bool):
            raise TypeError(f"deterministic must be a bool, got {deterministic!r}")
        from dp_experts_env.wrappers import LossFeatures

        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.deterministic = deterministic
        self.timesteps, self.train_seed = int(timesteps), int(train_seed)
        self.features = LossFeatures(self.n_experts, self.horizon, windows=tuple(windows))
        # Training waits for the first action: building the learner stays cheap.
        self.model: Any = None
        self.reset(seed)

    def train(self) -> Any:
        """Train (or fetch from this process's cache) the policy; returns the SB3 model.

        Raises:
            ValueError: the training env's N or T differs from the agent's.
        """
        if self.model is None:
            model, features = self._trained(
                self.env_id, self.env_kwargs, self.timesteps, self.train_seed, self.features.windows
            )
            if (features.n_experts, features.horizon) != (self.n_experts, self.horizon):
                raise ValueError(
                    f"env_kwargs: the training env has N={features.n_experts}, "
                    f"T={features.horizon} but the agent plays N={self.n_experts}, "
                    f"T={self.horizon}"
                )
            self.model = model
        return self.model

    @staticmethod
    def _trained(
        env_id: str, env_kwargs: dict[str, Any], timesteps: int, train_seed: int, windows: tuple
    ) -> tuple[Any, Any]:
        from dp_experts_env.rl import train_ppo  # the sb3 extra, only when a PPO agent is built

        key = (env_id, repr(sorted(env_kwargs.items())), timesteps, train_seed, windows)
        if key not in _TRAINED:
            _TRAINED[key] = train_ppo(
                env_id, env_kwargs, timesteps=timesteps, seed=train_seed, windows=windows
            )
        return _TRAINED[key]

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private."""
        return no_privacy("full")

    def _init_state(self) -> None:
        self._obs = self.features.reset(self.num_envs)

    def _learn(self, obs: np.ndarray) -> None:
        self._obs = self.features.update(obs)

    def _choose(self, obs: np.ndarray) -> np.ndarray:
        import torch

        model = self.train()
        with torch.no_grad():
            tensor = torch.as_tensor(self._obs, dtype=torch.float32)
            logits = policy_log_probs(model.policy, tensor).numpy().astype(np.float64)
        if self.deterministic:
            return np.argmax(logits, axis=1)
        # Gumbel-max with the agent's own per-run streams: run b is reproducible from seed + b.
        return np.argmax(logits + self.rng.gumbel((self.n_experts,)), axis=1)


def policy_log_probs(policy: Any, obs: Any) -> Any:
    """The normalised action logits SB3's ``policy.get_distribution(obs)`` holds, without it.

    The same torch operations in the same order (features, actor, action net, then the
    ``logits - logsumexp`` normalisation of torch's ``Categorical``), so the same floats
    (``tests/test_ppo_play.py``); skipping the distribution objects and their argument checks
    is most of a round's cost at small batches.
    """
    from stable_baselines3.common.policies import BaseModel

    features = BaseModel.extract_features(policy, obs, policy.pi_features_extractor)
    raw = policy.action_net(policy.mlp_extractor.forward_actor(features))
    if raw.isnan().any():  # torch's Categorical refuses NaN logits: so do we, not play expert 0
        raise ValueError("the PPO policy's action logits contain NaN (a diverged policy)")
    return raw - raw.logsumexp(dim=-1, keepdim=True)

