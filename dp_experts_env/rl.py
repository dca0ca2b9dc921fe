"""PPO (Stable-Baselines3) trained on the suite's full-information envs: the RL baseline's engine.

:class:`~dp_experts_env.wrappers.LossFeatures` observations, one network shared by the experts
(:class:`ExpertScorePolicy`), discount 0 (docs/rl.md, "The PPO baseline"). Needs the ``sb3`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from dp_experts_env._validation import check_int
from dp_experts_env.sb3 import SB3VecEnv, quiet_logger
from dp_experts_env.wrappers import LossFeatures, VectorLossStatistics

__all__ = ["ExpertScorePolicy", "train_ppo", "PPO_DEFAULTS"]

#: PPO settings of :func:`train_ppo` (chosen on DPExperts-Shift-v0's training seeds only).
PPO_DEFAULTS: dict[str, Any] = {
    "n_steps": 128,
    "batch_size": 256,
    "n_epochs": 4,
    "learning_rate": 1e-3,
    "gamma": 0.0,
    "gae_lambda": 0.0,
    "ent_coef": 0.0,
}


class _ExpertScorer(nn.Module):
    """Actor: one shared MLP per expert -> N logits. Critic: an MLP on all features."""

    def __init__(self, n_experts: int, n_groups: int, round_index: bool, hidden: int) -> None:
        super().__init__()
        self.n_experts, self.n_groups, self.round_index = n_experts, n_groups, round_index
        per_expert = n_groups + int(round_index)
        dim = n_groups * n_experts + int(round_index)
        self.latent_dim_pi = n_experts
        self.latent_dim_vf = hidden
        self.score = nn.Sequential(nn.Linear(per_expert, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.value = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh())

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        n, g = self.n_experts, self.n_groups
        per = features[:, : g * n].reshape(-1, g, n).transpose(1, 2)  # (B, N, groups)
        if self.round_index:
            per = torch.cat([per, features[:, -1:, None].expand(-1, n, 1)], dim=2)
        return self.score(per).squeeze(-1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value(features)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class ExpertScorePolicy(ActorCriticPolicy):
    """Actor-critic whose action logits are a shared per-expert score (permutation-equivariant).

    Args:
        *args: as for SB3's ``ActorCriticPolicy``.
        n_experts: N.
        n_groups: per-expert feature groups in the observation (cumulative + windows).
        round_index: whether the last feature is t / T (given to every expert's scorer).
        hidden: width of the scorer and critic.
        **kwargs: as for SB3's ``ActorCriticPolicy``.
    """

    def __init__(
        self,
        *args: Any,
        n_experts: int,
        n_groups: int,
        round_index: bool = True,
        hidden: int = 32,
        **kwargs: Any,
    ) -> None:
        self._scorer_args = (n_experts, n_groups, round_index, hidden)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _ExpertScorer(*self._scorer_args)

    def _build(self, lr_schedule: Callable[[float], float]) -> None:
        super()._build(lr_schedule)
        # The scorer outputs one logit per expert: no extra layer mixing experts (equivariance).
        self.action_net = nn.Identity()
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )


def feature_kwargs_of(features: LossFeatures) -> dict[str, Any]:
    """The policy keywords matching a :class:`LossFeatures` layout."""
    return {
        "n_experts": features.n_experts,
        "n_groups": len(features.windows) + int(features.cumulative),
        "round_index": features.round_index,
    }


def train_ppo(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    timesteps: int = 200_000,
    seed: int = 0,
    num_envs: int = 16,
    windows: Sequence[int] = (16, 128),
    cumulative: bool = True,
    round_index: bool = True,
    ppo_kwargs: Mapping[str, Any] | None = None,
) -> tuple[PPO, LossFeatures]:
    """Train PPO with :class:`ExpertScorePolicy` on simulated episodes of a full-information env.

    Args:
        env_id: a full-information ``DPExperts-*`` id.
        env_kwargs: the env's keywords (N, T, family, ...): the public description of the game.
        timesteps: environment steps of training (rounds summed over the parallel runs).
        seed: seeds PPO and the training episodes (through ``SeedSequence([seed, 0x5EED])``,
            away from evaluation seeds).
        num_envs: runs played in parallel during training (one native vector env).
        windows: recent-window lengths of the features.
        cumulative: include the cumulative mean losses.
        round_index: include t / T.
        ppo_kwargs: overrides of :data:`PPO_DEFAULTS`.

    Returns:
        (trained model, the feature map its policy expects).
    """
    timesteps = check_int("timesteps", timesteps, minimum=1)
    num_envs = check_int("num_envs", num_envs, minimum=1)
    import dp_experts_env  # noqa: F401 - registers the ids

    env_kwargs = dict(env_kwargs or {})
    venv = gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs
    )
    wrapped = VectorLossStatistics(
        venv, windows=windows, cumulative=cumulative, round_index=round_index
    )
    sb3_env = SB3VecEnv(wrapped)
    train_seed = int(np.random.SeedSequence([int(seed), 0x5EED]).generate_state(1)[0])
    sb3_env.seed(train_seed)
    settings = {**PPO_DEFAULTS, **dict(ppo_kwargs or {})}
    # Tiny networks: thread hand-offs cost more than they save.
    torch.set_num_threads(1)
    model = PPO(
        ExpertScorePolicy,
        sb3_env,
        policy_kwargs=feature_kwargs_of(wrapped.features),
        seed=int(seed),
        device="cpu",
        verbose=0,
        **settings,
    )
    model.set_logger(quiet_logger())  # no SB3-<date> folder left in the temporary folder
    model.learn(total_timesteps=timesteps)
    features = LossFeatures(
        int(venv.unwrapped.n_experts),
        int(venv.unwrapped.horizon),
        windows=windows,
        cumulative=cumulative,
        round_index=round_index,
    )
    return model, features
