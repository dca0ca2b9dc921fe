"""dp-experts-env: differentially private online learning with expert advice.

Importing the package registers every environment id with Gymnasium (string entry points); the
env classes load on first use, so layers that need only the lower modules never import an env.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from dp_experts_env.registration import ENV_IDS, ENVS, env_entry, register_envs  # noqa: E402

register_envs()

#: Env classes exported here, loaded from :mod:`dp_experts_env.envs` on first access.
_ENV_CLASSES = (
    "BanditAdviceEnv",
    "BanditAdviceVectorEnv",
    "ExpertsEnv",
    "ExpertsVectorEnv",
    "OCOEnv",
    "OCOVectorEnv",
)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ loads them
    from dp_experts_env.envs import (
        BanditAdviceEnv,
        BanditAdviceVectorEnv,
        ExpertsEnv,
        ExpertsVectorEnv,
        OCOEnv,
        OCOVectorEnv,
    )


def __getattr__(name: str) -> Any:
    if name in _ENV_CLASSES:
        value = getattr(import_module("dp_experts_env.envs"), name)
        globals()[name] = value  # later lookups (and tools reading __dict__) find it directly
        return value
    raise AttributeError(f"module 'dp_experts_env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ENV_CLASSES})


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
