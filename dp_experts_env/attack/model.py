"""The trained adversary saved as data: weights as arrays, the policy's architecture as JSON.

``PPO.load`` of someone else's file runs their code, so ``adversary.npz`` holds plain arrays
read with ``allow_pickle=False`` (docs/attack.md, "The saved adversary"). Supported: what the
attack trains, an ``MlpPolicy`` on Box spaces without state-dependent exploration.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MODEL_FILE", "PickledModel", "load_policy", "policy_arrays", "save_policy"]

#: File name of the saved adversary in an attack's output folder.
MODEL_FILE = "adversary.npz"
_FORMAT = 1
_ACTIVATIONS = ("Tanh", "ReLU")
_PICKLED_SUFFIXES = (".zip", ".pkl", ".pickle", ".pt", ".pth", ".cloudpickle")


class PickledModel(ValueError):
    """A model file that could only be loaded by unpickling it (running its code)."""


def _box(space: Any) -> dict[str, Any]:
    low, high = np.unique(space.low), np.unique(space.high)
    if len(low) != 1 or len(high) != 1:
        raise ValueError("only Box spaces with one bound for every coordinate are saved")
    return {
        "shape": list(space.shape),
        "low": float(low[0]),
        "high": float(high[0]),
        "dtype": str(space.dtype),
    }


def policy_arrays(model: Any) -> dict[str, np.ndarray]:
    """The arrays of ``adversary.npz`` for a trained SB3 model (or its policy).

    Raises:
        ValueError: a policy this format does not describe (not an MLP, another activation,
            state-dependent exploration, non-Box spaces).
    """
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.torch_layers import FlattenExtractor

    policy = getattr(model, "policy", model)
    if type(policy) is not ActorCriticPolicy:
        raise ValueError(f"only an MlpPolicy is saved as data, not {type(policy).__name__}")
    params = policy._get_constructor_parameters()
    activation = params["activation_fn"].__name__
    if (
        activation not in _ACTIVATIONS
        or params["features_extractor_class"] is not FlattenExtractor
        or params["use_sde"]
        or params["squash_output"]
    ):
        raise ValueError("only an MLP with a Tanh or ReLU activation and no SDE is saved as data")
    architecture = {
        "format": _FORMAT,
        "policy": "MlpPolicy",
        "observation": _box(params["observation_space"]),
        "action": _box(params["action_space"]),
        "net_arch": params["net_arch"],
        "activation": activation,
        "log_std_init": float(params["log_std_init"]),
        "share_features_extractor": bool(policy.share_features_extractor),
    }
    arrays = {"architecture": np.array(json.dumps(architecture, sort_keys=True))}
    for name, tensor in policy.state_dict().items():
        arrays[f"w/{name}"] = tensor.detach().cpu().numpy().copy()
    return arrays


def save_policy(model: Any, path: str | Path) -> Path:
    """Write ``adversary.npz`` atomically (never through a planted link); its path."""
    from dp_experts_env.evaluation.store import write_atomic

    buffer = io.BytesIO()
    np.savez(buffer, **policy_arrays(model))
    return write_atomic(path, lambda fh: fh.write(buffer.getvalue()), text=False)


def _refuse_pickles(path: Path, raw: bytes) -> None:
    name = path.name
    if path.suffix.lower() in _PICKLED_SUFFIXES and path.suffix.lower() != ".npz":
        raise PickledModel(
            f"{name} is a pickled model ({path.suffix}: Stable-Baselines3 / torch / pickle); "
            f"loading it would run code from the file: refused (use {MODEL_FILE})"
        )
    try:
        members = zipfile.ZipFile(io.BytesIO(raw)).namelist()
    except zipfile.BadZipFile:
        raise ValueError(f"{name} is not an {MODEL_FILE} archive") from None
    others = [m for m in members if not m.endswith(".npy")]
    if others:
        raise PickledModel(
            f"{name} holds {others[:3]} besides plain arrays (a pickled model such as a "
            "Stable-Baselines3 zip); loading it would run code from the file: refused"
        )


def load_policy(path: str | Path) -> Any:
    """The ``ActorCriticPolicy`` saved in an ``adversary.npz``, rebuilt from data alone.

    Raises:
        PickledModel: the file is (or holds) a pickle; it is not opened further.
        ValueError: not a saved adversary of this format (the message names the file).
    """
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticPolicy

    from dp_experts_env.evaluation.store import read_plain

    path = Path(path)
    raw = read_plain(path)
    _refuse_pickles(path, raw)
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        arch = json.loads(str(arrays.pop("architecture")))
        if not isinstance(arch, dict) or arch.get("format") != _FORMAT:
            raise ValueError(f"unknown format {arch.get('format')!r}")
        if arch["activation"] not in _ACTIVATIONS or arch["policy"] != "MlpPolicy":
            raise ValueError(f"unsupported policy {arch['policy']!r} / {arch['activation']!r}")
        boxes = [
            spaces.Box(b["low"], b["high"], tuple(b["shape"]), dtype=np.dtype(b["dtype"]))
            for b in (arch["observation"], arch["action"])
        ]
        policy = ActorCriticPolicy(
            boxes[0],
            boxes[1],
            lambda _: 0.0,
            net_arch=arch["net_arch"],
            activation_fn=getattr(torch.nn, arch["activation"]),
            log_std_init=arch["log_std_init"],
            share_features_extractor=arch["share_features_extractor"],
        )
        state = {k[2:]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("w/")}
        policy.load_state_dict(state, strict=True)
    except PickledModel:
        raise
    except (ValueError, KeyError, TypeError, RuntimeError, RecursionError) as err:
        raise ValueError(f"{path.name} is not a saved adversary of this version ({err})") from None
    policy.set_training_mode(False)
    return policy
