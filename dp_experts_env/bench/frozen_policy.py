"""A trained adversary frozen as data and played with numpy alone (the learned-adversary task).

The ``learned-adversary`` task of ``bench-v2`` (docs/bench.md) plays every learner against one
PPO adversary trained once, offline (``scripts/train_bench_adversary.py``). Its weights ship
as a Python data module (:data:`SHIPPED`: the actor's arrays base64-encoded, no pickle) and
are identified by :func:`policy_digest`, which the protocol pins. :class:`FrozenPolicy` is the
policy's deterministic action -- the mean of its Gaussian, clipped to the action box, as
Stable-Baselines3's ``predict(obs, deterministic=True)`` returns it -- computed by a forward
pass of the MLP in float64 numpy, so playing the task needs neither torch nor
Stable-Baselines3. (Torch computes in float32: the two agree to about 1e-6,
tests/test_bench_learned.py.)

Only the actor is shipped: the value network and the log standard deviation do not act.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from importlib import import_module
from typing import Any

import numpy as np

__all__ = [
    "SHIPPED",
    "FrozenPolicy",
    "actor_arrays",
    "load_shipped",
    "module_text",
    "policy_digest",
]

#: The data module holding the shipped adversary of ``bench-v2``.
SHIPPED = "dp_experts_env.bench.protocols.learned_adversary_v2"

_ACTOR = ("w/mlp_extractor.policy_net.", "w/action_net.")


def actor_arrays(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays that act, from :func:`dp_experts_env.attack.model.policy_arrays`'s output.

    Keeps ``architecture`` and the actor's weights (``mlp_extractor.policy_net.*``,
    ``action_net.*``) as float32, in a fixed order.

    Raises:
        ValueError: a policy whose actor is not an MLP of this layout (another activation, a
            separate features extractor with weights).
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


def module_text(arrays: Mapping[str, np.ndarray], header: str) -> str:
    """The Python data module that ships ``arrays`` (``ARCHITECTURE``, ``ARRAYS``, ``DIGEST``).

    ``header`` is its docstring: a summary line, a blank line, then lines of at most 100
    characters.
    """
    lines = [f'"""{header}\n"""', "", f'DIGEST = "{policy_digest(arrays)}"']
    arch = str(arrays["architecture"])
    parts = "\n".join(f"    {arch[i : i + 80]!r}" for i in range(0, len(arch), 80))
    lines.append(f"ARCHITECTURE = (\n{parts}\n)")
    lines.append("# name: (shape, little-endian float32 bytes in base64)")
    lines.append("ARRAYS = {")
    for name in sorted(k for k in arrays if k != "architecture"):
        value = np.ascontiguousarray(arrays[name], dtype="<f4")
        text = base64.b64encode(value.tobytes()).decode()
        chunks = [text[i : i + 88] for i in range(0, len(text), 88)]
        body = "\n".join(f'        "{c}"' for c in chunks)
        lines.append(f'    "{name}": (\n        {list(value.shape)},\n{body},\n    ),')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _decode(module: Any) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {"architecture": np.array(module.ARCHITECTURE)}
    for name, (shape, text) in module.ARRAYS.items():
        raw = np.frombuffer(base64.b64decode(text), dtype="<f4")
        arrays[name] = raw.reshape(shape).astype(np.float32)
    return arrays


def load_shipped(digest: str, module: str = SHIPPED) -> dict[str, np.ndarray]:
    """The shipped actor's arrays, checked against the digest a protocol pins.

    Raises:
        ValueError: the arrays' digest is not ``digest`` (the data module was edited or
            re-trained without a new protocol version).
    """
    arrays = _decode(import_module(module))
    found = policy_digest(arrays)
    if found != digest:
        raise ValueError(
            f"the shipped adversary {module} has digest {found}, the protocol pins {digest}: "
            "a re-trained or edited adversary needs a new protocol version"
        )
    return arrays


class FrozenPolicy:
    """The deterministic action of a frozen actor, by a float64 numpy forward pass.

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
