"""Gymnasium mechanics: spaces, the step protocol, validation, single and vector envs."""

from dp_experts_env.envs.core import INFO_KEYS, MEANS_KEYS, SEGMENT_KEYS, GameCore
from dp_experts_env.envs.factory import (
    ENV_KEYWORDS,
    KINDS,
    EnvParams,
    Game,
    KindSpec,
    build_game,
    feedback_of,
)
from dp_experts_env.envs.oco import OCOEnv, OCOVectorEnv
from dp_experts_env.envs.single import BanditAdviceEnv, ExpertsEnv
from dp_experts_env.envs.vector import BanditAdviceVectorEnv, ExpertsVectorEnv

__all__ = [
    "ExpertsEnv",
    "BanditAdviceEnv",
    "ExpertsVectorEnv",
    "BanditAdviceVectorEnv",
    "OCOEnv",
    "OCOVectorEnv",
    "GameCore",
    "INFO_KEYS",
    "MEANS_KEYS",
    "SEGMENT_KEYS",
    "KINDS",
    "KindSpec",
    "EnvParams",
    "ENV_KEYWORDS",
    "Game",
    "build_game",
    "feedback_of",
]
