"""bench-v2's frozen PPO adversary: package data pinned by digest, played by numpy alone."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT",
    "SHIPPED",
    "FrozenPolicy",
    "actor_arrays",
    "actor_json",
    "load_shipped",
    "policy_digest",
]

#: The shipped adversary of ``bench-v2``: package data of ``dp_experts_env.bench``.
SHIPPED = "protocols/learned_adversary_v2.json"
#: Layout of a frozen actor's JSON file.
FORMAT = "dp-experts-frozen-actor/1"

_ACTOR = ("w/mlp_extractor.policy_net.", "w/action_net.")


def actor_arrays(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The acting arrays (``architecture`` and the actor's float32 weights) of a policy.

    Args:
        arrays: :func:`dp_experts_env.attack.model.policy_arrays`'s output.

    Raises:
        ValueError: an actor that is not a Tanh or ReLU MlpPolicy without extractor weights.
    """
    arch = json.loads(str(arrays["architecture"]))
    if arch.get("activation") not in ("Tanh", "ReLU") or arch.get("policy") != "MlpPolicy":
        raise ValueError(f"only an MlpPolicy with Tanh or ReLU is frozen, got {arch}")
    if any(k.startswith("w/features_extractor") or k.startswith("w/pi_features") for k in arrays):
        raise ValueError("only a policy whose features extractor has no weights is frozen")
    out: dict[str, np.ndarray] = {"architecture": np.array(json.dumps(arch, sort_keys=True))}
    for name in sorted(k for k in arrays if k.startswith(_ACTOR)):
        out[name] = np.ascontiguousarray(arrays[name], dtype=np.float32)
    return out


def policy_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 (hex) of an actor: its architecture text and every array's name, shape, bytes."""
    h = hashlib.sha256()
    h.update(str(arrays["architecture"]).encode())
    for name in sorted(k for k in arrays if k != "architecture"):
        value = np.ascontiguousarray(arrays[name], dtype=np.float32)
        h.update(f"\n{name}:{list(value.shape)}:".encode())
        h.update(value.astype("<f4").tobytes())
    return h.hexdigest()


def actor_json(arrays: Mapping[str, np.ndarray], training: Mapping[str, Any]) -> str:
    """The JSON text that ships ``arrays`` (read back bit for bit by :func:`load_shipped`).

    Args:
        arrays: :func:`actor_arrays`'s output.
        training: the training run's settings, recorded beside the arrays.
    """
    data = {
        "format": FORMAT,
        "training": dict(training),
        "digest": policy_digest(arrays),
        "architecture": str(arrays["architecture"]),
        "arrays": {
            name: {
                "shape": list(np.shape(arrays[name])),
                "float32_le_base64": base64.b64encode(
                    np.ascontiguousarray(arrays[name], dtype="<f4").tobytes()
                ).decode(),
            }
            for name in sorted(k for k in arrays if k != "architecture")
        },
    }
    return json.dumps(data, indent=1) + "\n"


def load_shipped(digest: str, path: str | Path | None = None) -> dict[str, np.ndarray]:
    """An actor's arrays from its JSON file (default the shipped one), checked against ``digest``.

    Raises:
        ValueError: the file is not a frozen actor, or its arrays' digest is not ``digest`` (an
            edited or re-trained adversary needs a new protocol version).
    """
    if path is None:
        name, file = SHIPPED, resources.files("dp_experts_env.bench").joinpath(SHIPPED)
    else:
        name, file = str(path), Path(path)
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{name} is not a frozen actor ({FORMAT})")
    arrays: dict[str, np.ndarray] = {"architecture": np.array(data["architecture"])}
    for key, entry in data["arrays"].items():
        raw = np.frombuffer(base64.b64decode(entry["float32_le_base64"]), dtype="<f4")
        arrays[key] = raw.reshape(entry["shape"]).astype(np.float32)
    found = policy_digest(arrays)
    if found != digest:
        raise ValueError(
            f"the adversary {name} has digest {found}, the protocol pins {digest}: "
            "a re-trained or edited adversary needs a new protocol version"
        )
    return arrays


class FrozenPolicy:
    """The deterministic action of a frozen actor (the Gaussian's mean clipped to the box).

    Computed in float64; torch's float32 pass agrees to about 1e-6 (tests/test_bench_learned.py).

    Args:
        arrays: :func:`actor_arrays`'s output (or :func:`load_shipped`'s).
    """

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        arch = json.loads(str(arrays["architecture"]))
        self.obs_size = int(np.prod(arch["observation"]["shape"]))
        self.low, self.high = float(arch["action"]["low"]), float(arch["action"]["high"])
        self._act = np.tanh if arch["activation"] == "Tanh" else (lambda x: np.maximum(x, 0.0))
        net = "w/mlp_extractor.policy_net."
        index = sorted({int(k[len(net) :].split(".")[0]) for k in arrays if k.startswith(net)})
        self.layers = [
            (
                np.asarray(arrays[f"{net}{i}.weight"], dtype=np.float64).T.copy(),
                np.asarray(arrays[f"{net}{i}.bias"], dtype=np.float64),
            )
            for i in index
        ]
        self.head = (
            np.asarray(arrays["w/action_net.weight"], dtype=np.float64).T.copy(),
            np.asarray(arrays["w/action_net.bias"], dtype=np.float64),
        )
        self.digest = policy_digest(arrays)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """(B, obs_size) observations -> (B, n_actions) actions in the action box."""
        x = np.asarray(obs, dtype=np.float32).astype(np.float64).reshape(-1, self.obs_size)
        for weight, bias in self.layers:
            x = self._act(x @ weight + bias)
        mean = x @ self.head[0] + self.head[1]
        return np.clip(mean, self.low, self.high)
