"""Stable-Baselines3 on the native vector env: :class:`SB3VecEnv` and :func:`make_sb3_vec_env`.

The native Gymnasium ``VectorEnv`` seen through SB3's ``VecEnv`` protocol without a Python loop
over the game; ``venv.seed(s)`` plays run ``b`` with seed ``s + b``, as ``DummyVecEnv`` does
(docs/rl.md). Needs the ``sb3`` extra.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

__all__ = ["SB3VecEnv", "make_sb3_vec_env", "quiet_logger"]


def quiet_logger() -> Any:
    """An SB3 logger that writes nothing (the default leaves an empty temporary folder per call)."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


class SB3VecEnv(VecEnv):
    """A Gymnasium vector env seen through Stable-Baselines3's ``VecEnv`` interface.

    Args:
        env: a native vector env, optionally wrapped in Gymnasium vector wrappers; its runs
            must end their episodes together, as every env of the suite does.

    Raises:
        TypeError: ``env`` is not a Gymnasium ``VectorEnv``.
    """

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        if not isinstance(env, gym.vector.VectorEnv):
            raise TypeError(
                "env must be a Gymnasium VectorEnv (gym.make_vec(id, num_envs=B, "
                f"vectorization_mode='vector_entry_point')), got {type(env).__name__}"
            )
        self.venv = env
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self._actions: np.ndarray | None = None

    @property
    def spec(self) -> Any:
        """The Gymnasium spec of the wrapped env (id and keywords), or None."""
        return getattr(self.venv, "spec", None) or getattr(self.venv.unwrapped, "spec", None)

    def reset(self) -> VecEnvObs:
        """Reset every run; uses the seeds and options set by ``seed``/``set_options`` once."""
        seeds = None if all(s is None for s in self._seeds) else self._seeds
        if seeds is not None and any(s is None for s in seeds):
            raise ValueError("seeds must be given for all runs or for none")
        options = self._options[0] if self._options else {}
        if any(o != options for o in self._options):
            # One adversary core plays all runs: a neighbouring-dataset option applies to all.
            raise ValueError("options must be the same for every run of a native vector env")
        obs, info = self.venv.reset(seed=seeds, options=options or None)
        self.reset_infos = self._split_info(info)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store the (B,) actions for :meth:`step_wait`."""
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        """Play one round in every run; on the last round, return the next episode's obs."""
        if self._actions is None:
            raise RuntimeError("step_wait called without step_async")
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        self._actions = None
        dones = np.logical_or(terminated, truncated)
        infos = self._split_info(info)
        for row, cut in zip(
            infos, _truncated_only(terminated, truncated, self.num_envs), strict=True
        ):
            row["TimeLimit.truncated"] = cut
        if dones.any():
            if not dones.all():
                raise RuntimeError(
                    "runs of a native vector env must end their episodes together (fixed "
                    f"horizon); runs {np.flatnonzero(dones).tolist()} ended alone"
                )
            for i in range(self.num_envs):
                infos[i]["terminal_observation"] = _row(obs, i)
            # SB3 wants the next episode's first observation now: NEXT_STEP's reset, one step early.
            obs, reset_info = self.venv.reset()
            self.reset_infos = self._split_info(reset_info)
        return obs, np.asarray(reward, dtype=np.float32), dones, infos

    def close(self) -> None:
        """Close the wrapped vector env."""
        self.venv.close()

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the game (one value shared by all runs), once per index."""
        target = self.venv.unwrapped
        if attr_name == "render_mode":
            value = getattr(target, "render_mode", None)
        else:
            value = getattr(target, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the game; runs share it, so only all indices at once."""
        if len(self._indices(indices)) != self.num_envs:
            raise ValueError("indices: the runs of a native vector env share their attributes")
        setattr(self.venv.unwrapped, attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call a method of the vector env once (it acts on all runs); its result per index."""
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """False: runs are not single Gymnasium envs, so no per-env wrapper can be present."""
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No rendering of vector runs."""
        return [None for _ in range(self.num_envs)]

    def _split_info(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """Gymnasium's dict of (B,) arrays with ``_key`` masks -> SB3's list of B dicts."""
        b = self.num_envs
        out: list[dict[str, Any]] = [{} for _ in range(b)]
        for key, values in info.items():
            if key.startswith("_"):
                continue
            mask = info.get(f"_{key}")
            arr = np.asarray(values)
            if _whole_row(arr, mask, b):
                # Every run's value at once: ``tolist`` gives each element's ``item()``.
                for row, value in zip(out, arr.tolist(), strict=True):
                    row[key] = value
                continue
            for i in range(b):
                if mask is None or mask[i]:
                    out[i][key] = arr[i].item() if arr[i].ndim == 0 else arr[i]
        return out


#: dtype kinds whose elements ``tolist`` turns into the Python scalars ``item()`` gives.
_SCALAR_KINDS = frozenset("biufc")


def _whole_row(arr: np.ndarray, mask: Any, b: int) -> bool:
    """True when an info value is B numeric scalars, all present (no ``_key`` mask off)."""
    if arr.ndim != 1 or arr.shape[0] != b or arr.dtype.kind not in _SCALAR_KINDS:
        return False
    if mask is None:
        return True
    return bool(
        type(mask) is np.ndarray and mask.dtype == np.bool_ and mask.shape == (b,) and mask.all()
    )


def _truncated_only(terminated: Any, truncated: Any, b: int) -> list[bool]:
    """Per run: truncated and not terminated (SB3's ``TimeLimit.truncated``)."""
    if all(
        type(x) is np.ndarray and x.dtype == np.bool_ and x.shape == (b,)
        for x in (terminated, truncated)
    ):
        return (truncated & ~terminated).tolist()
    return [bool(truncated[i] and not terminated[i]) for i in range(b)]


def _row(obs: Any, i: int) -> Any:
    """Run i's observation (dict observations keep their keys)."""
    if isinstance(obs, dict):
        return {k: np.array(v[i]) for k, v in obs.items()}
    return np.array(obs[i])


def make_sb3_vec_env(
    env_id: str,
    num_envs: int = 1,
    *,
    wrappers: Iterable[Any] = (),
    **env_kwargs: Any,
) -> SB3VecEnv:
    """Build the native vector env of ``env_id`` and adapt it for Stable-Baselines3.

    Args:
        env_id: a registered ``DPExperts-*`` id.
        num_envs: B, runs played in lockstep.
        wrappers: callables ``venv -> venv`` applied in order before the adaptation.
        **env_kwargs: the env's constructor keywords.

    Returns:
        An SB3 ``VecEnv`` (wrap it in ``VecMonitor`` for episode returns).
    """
    import dp_experts_env  # noqa: F401 - registers the ids

    venv = gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs
    )
    for wrap in wrappers:
        venv = wrap(venv)
    return SB3VecEnv(venv)
