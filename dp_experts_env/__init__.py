"""dp-experts-env: differentially private online learning with expert advice.

Importing the package registers every environment id with Gymnasium.
"""

__version__ = "0.1.0"

from dp_experts_env.envs import (  # noqa: E402
    BanditAdviceEnv,
    BanditAdviceVectorEnv,
    ExpertsEnv,
    ExpertsVectorEnv,
    OCOEnv,
    OCOVectorEnv,
)
from dp_experts_env.registration import ENV_IDS, ENVS, env_entry, register_envs  # noqa: E402

register_envs()

__all__ = [
    "__version__",
    "ExpertsEnv",
    "BanditAdviceEnv",
    "ExpertsVectorEnv",
    "BanditAdviceVectorEnv",
    "OCOEnv",
    "OCOVectorEnv",
    "ENV_IDS",
    "ENVS",
    "env_entry",
    "register_envs",
]
