"""PPO as a non-private RL baseline that takes part in comparisons (``agents.make("ppo", ...)``).

It trains across simulated episodes of the env's public description, then plays frozen: "what a
learner tuned to this class of environments reaches", not an online algorithm. It imports the env
layer and the ``sb3`` extra lazily, when built.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from agents._kernels import check_block, finish_block, hook_loop, hook_round, own_hooks
from agents.base import Agent, PrivacyClaim, no_privacy
from agents.registry import register

__all__ = ["PPOBaseline", "LogitBound", "policy_log_probs"]

# Trained policies by their full training description, reused within a process.
_TRAINED: dict[tuple, Any] = {}
_SPEC_NOISE = ("num_envs", "vectorization_mode", "render_mode")
#: Floats of the scorer's hidden layer per forward of a block (rows x N x hidden): 8 MB.
HIDDEN_FLOATS = 1 << 21


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

    Attributes:
        replays: rows played in blocks (``"rows"``) and those of them decided by the round's
            own forward (``"replayed"``; :meth:`play_block`).
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
        #: Rows of play_block's blocks, and those decided by the round's own forward.
        self.replays = {"rows": 0, "replayed": 0}
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
        logits = _round_logits(self.train().policy, self._obs)
        if self.deterministic:
            return np.argmax(logits, axis=1)
        # Gumbel-max with the agent's own per-run streams: run b is reproducible from seed + b.
        return np.argmax(logits + self.rng.gumbel((self.n_experts,)), axis=1)

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """K rounds of :meth:`act` at once: the same actions, features and stream after.

        The block's features come from :meth:`LossFeatures.update_block` (the same floats), the
        policy runs once on the block's (K B, dim) rows (in parts of :data:`HIDDEN_FLOATS`), the
        K rounds' Gumbel draws are one read of each run's stream. torch may round a row of a
        large batch differently from the same row in a round's (B, dim) batch, so a row whose
        best score leads the next by no more than :class:`LogitBound`'s margin is decided by the
        round's own forward, as ``act`` decides it (docs/algorithms.md, "PPO in blocks");
        ``replays`` counts such rows.
        """
        from dp_experts_env.wrappers import LossFeatures

        if not own_hooks(self, PPOBaseline, ("_learn", "_choose", "_init_state")):
            return hook_loop(self, obs)  # a subclass's own hooks: the learner its act is
        if type(self.features) is not LossFeatures:  # its update_block may not be its update
            return hook_loop(self, obs)
        losses = check_block(self, obs)
        k, b, n = len(losses), self.num_envs, self.n_experts
        if k == 0:
            return finish_block(self, np.empty((0, b)))
        policy = self.train().policy
        bound = LogitBound.of(policy)
        if bound is None:  # a policy the margin does not cover: round by round
            return np.stack([hook_round(self, row) for row in losses])
        if self.t == 0:  # round 1 learns nothing: its features are the reset's
            rest = self.features.update_block(losses[1:])
            features = np.concatenate([self._obs[None], rest])
        else:
            features = self.features.update_block(losses)
        logits = _block_logits(policy, features.reshape(k * b, -1)).reshape(k, b, n)
        noise = None if self.deterministic else self.rng.gumbel((k, n)).transpose(1, 0, 2)
        scores = logits if noise is None else logits + noise
        actions = np.argmax(scores, axis=2)
        close = bound.close_rows(features, logits, scores)
        for i in np.flatnonzero(close.any(axis=1)):
            rows = close[i]
            # A fresh array, as act's features are (a library may pick kernels by alignment).
            single = _round_logits(policy, features[i].copy())[rows]
            actions[i, rows] = np.argmax(single if noise is None else single + noise[i, rows], 1)
        self.replays["rows"] += k * b
        self.replays["replayed"] += int(close.sum())
        self._obs = features[-1].copy()
        return finish_block(self, actions)


def _gamma(terms: int) -> float:
    """Higham's gamma_n in float32.

    A sum of ``terms`` rounded products (or terms), added in any order, errs by at most gamma_n
    times the sum of their magnitudes (Higham 2002, "Accuracy and Stability of Numerical
    Algorithms", §3.1).
    """
    u = 2.0**-24
    return terms * u / (1.0 - terms * u)


#: Absolute error allowed of torch's float32 tanh: 8 ulps of a value in [0.5, 1) (MKL's VML in
#: its high-accuracy mode and SLEEF's u10 kernels err by 1 ulp, glibc's ``tanhf`` by 2).
TANH_ERROR = 8 * 2.0**-24
#: Margin over the derivation (the bound's own float64 evaluation is inside it by far).
SAFETY = 2.0


@dataclass(frozen=True)
class LogitBound:
    """How far torch's log-probability of a row may move when the row's batch changes.

    For :class:`dp_experts_env.rl.ExpertScorePolicy` in float32 (exact float32 matmuls): an
    expert's score is ``w2 . tanh(W1 x + b1) + b2`` on its own features ``x``; any order of
    summation (any GEMM blocking) and any tanh within :data:`TANH_ERROR` puts two evaluations
    of it within ``2 gamma_(d+1) (|x| . v + |b1| . |w2|) + 2 TANH_ERROR |w2|_1 +
    2 gamma_(h+1) (|w2|_1 + |b2|)`` (``v = |W1|^T |w2|``, d and h the fan-ins, ``|tanh| <= 1``).
    The log-softmax subtracts one logsumexp per row from every score, which does not change
    their differences beyond each subtraction's rounding (half a float32 ulp), and the Gumbel
    noise adds the same float64 to both evaluations (half a float64 ulp). A row whose best
    score leads the second by more than :meth:`margins` has the same argmax in both
    evaluations (docs/algorithms.md, "PPO in blocks").

    Args:
        reach: (d,) ``v = |W1|^T |w2|``, the weight of each input's magnitude.
        offset: ``|b1| . |w2|``.
        constant: the terms that do not depend on the row.
        gamma_in: gamma_(d+1) of the first layer.
        n_groups: per-expert feature groups (cumulative + windows).
        round_index: whether the last feature is t / T (every expert's last input).
    """

    reach: np.ndarray
    offset: float
    constant: float
    gamma_in: float
    n_groups: int
    round_index: bool

    @classmethod
    def of(cls, policy: Any) -> LogitBound | None:
        """The bound of ``policy``; None unless it is an exact-float32 ``ExpertScorePolicy``."""
        import torch
        from torch import nn

        from dp_experts_env.rl import ExpertScorePolicy

        if type(policy) is not ExpertScorePolicy or not exact_float32_matmul():
            return None
        if not tanh_within_error():  # this machine's tanh kernels break the premise
            return None
        from stable_baselines3.common.torch_layers import FlattenExtractor

        if type(policy.pi_features_extractor) is not FlattenExtractor:  # it may rescale x
            return None
        layers = list(policy.mlp_extractor.score)
        kinds = [type(layer) for layer in layers]
        if kinds != [nn.Linear, nn.Tanh, nn.Linear] or type(policy.action_net) is not nn.Identity:
            return None
        if any(p.dtype != torch.float32 for p in policy.parameters()):
            return None
        w1, b1 = _magnitudes(layers[0])
        w2, b2 = _magnitudes(layers[2])
        w2, b2 = w2[0], float(b2[0])
        hidden, fan_in = w1.shape
        norm = float(w2.sum())
        constant = 2 * TANH_ERROR * norm + 2 * _gamma(hidden + 1) * (norm + b2)
        scorer = policy.mlp_extractor
        return cls(
            reach=w1.T @ w2,
            offset=float(b1 @ w2),
            constant=constant,
            gamma_in=_gamma(fan_in + 1),
            n_groups=int(scorer.n_groups),
            round_index=bool(scorer.round_index),
        )

    def score_errors(self, features: np.ndarray) -> np.ndarray:
        """(K, B, N) bounds on two evaluations' score difference, from (K, B, dim) features."""
        k, b = features.shape[:2]
        g = self.n_groups
        n = (features.shape[2] - int(self.round_index)) // g
        groups = features[..., : g * n].reshape(k, b, g, n)
        reach = np.abs(groups[:, :, 0]) * self.reach[0]
        for i in range(1, g):
            reach += np.abs(groups[:, :, i]) * self.reach[i]
        if self.round_index:
            reach += np.abs(features[..., -1:]) * self.reach[g]
        return 2 * self.gamma_in * (reach + self.offset) + self.constant

    def margins(self, features: np.ndarray, logits: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """(K, B) leads above which a row's argmax is the same in any evaluation."""
        margin = 2 * self.score_errors(features).max(axis=2)
        margin += 4 * 2.0**-23 * (np.abs(logits).max(axis=2) + 1.0)  # the log-softmax's rounding
        if scores is not logits:
            margin += 4 * 2.0**-52 * np.abs(scores).max(axis=2)  # + noise, rounded in float64
        return SAFETY * margin

    def close_rows(
        self, features: np.ndarray, logits: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """(K, B) True where the best score's lead is within :meth:`margins` (ties included)."""
        n = scores.shape[2]
        if n == 1:
            return np.zeros(scores.shape[:2], dtype=bool)
        top = np.partition(scores, n - 2, axis=2)[..., n - 2 :]
        # not (lead > margin): a NaN lead or margin (no order to prove) is replayed too.
        return ~(top[..., 1] - top[..., 0] > self.margins(features, logits, scores))


def exact_float32_matmul() -> bool:
    """True when torch multiplies float32 matrices in float32 (no TF32 or bfloat16 shortcuts).

    Reads both of torch's switches: the legacy ``get_float32_matmul_precision`` and the
    ``fp32_precision`` of the backends, oneDNN and its matmuls (where this torch has them), and
    oneDNN's own default math mode (``ONEDNN_DEFAULT_FPMATH_MODE`` or its old name
    ``DNNL_DEFAULT_FPMATH_MODE``: anything but ``STRICT`` lets oneDNN, which serves torch's float32
    matmuls on some CPUs such as AArch64 with ACL, compute them in bfloat16 or TF32).
    """
    import torch

    for name in ("ONEDNN_DEFAULT_FPMATH_MODE", "DNNL_DEFAULT_FPMATH_MODE"):
        if os.environ.get(name, "strict").strip().lower() not in ("", "strict"):
            return False
    mkldnn = getattr(torch.backends, "mkldnn", None)
    for level in (torch.backends, mkldnn, getattr(mkldnn, "matmul", None)):
        if getattr(level, "fp32_precision", "none") not in ("none", "ieee"):
            return False
    try:
        return torch.get_float32_matmul_precision() == "highest"
    except RuntimeError:  # the legacy and the new switches both set: trust neither
        return False


@functools.cache
def tanh_within_error() -> bool:
    """True when torch's float32 tanh here is within :data:`TANH_ERROR` and ``|tanh| <= 1``.

    The margin's premise, spot-checked once per process on this machine's kernels (its vector
    loops at every tail length and a long run that parallel loops split) against float64's
    tanh: a check of the kernels actually dispatched, not a proof for every input.
    """
    import torch

    rng = np.random.default_rng(20261129)  # fixed probe points (no learner's randomness)
    for size in [*range(1, 70), 100_003]:
        x = (rng.standard_normal(size) * rng.choice([0.01, 1.0, 4.0], size)).astype(np.float32)
        with torch.no_grad():
            got = torch.tanh(torch.from_numpy(x)).numpy().astype(np.float64)
        error = np.abs(got - np.tanh(x.astype(np.float64)))
        if not (np.abs(got).max() <= 1.0 and error.max() <= TANH_ERROR):
            return False
    return True


def _magnitudes(layer: Any) -> tuple[np.ndarray, np.ndarray]:
    """A linear layer's |weight| and |bias| in float64 (a missing bias is zeros)."""
    weight = np.abs(layer.weight.detach().numpy().astype(np.float64))
    bias = layer.bias
    if bias is None:
        return weight, np.zeros(weight.shape[0])
    return weight, np.abs(bias.detach().numpy().astype(np.float64))


def _round_logits(policy: Any, features: np.ndarray) -> np.ndarray:
    """A round's (B, N) float64 log-probabilities: one forward on its (B, dim) features."""
    import torch

    with torch.no_grad():
        tensor = torch.as_tensor(features, dtype=torch.float32)
        return policy_log_probs(policy, tensor).numpy().astype(np.float64)


def _block_logits(policy: Any, rows: np.ndarray) -> np.ndarray:
    """(R, N) float64 log-probabilities of R feature rows, in parts of :data:`HIDDEN_FLOATS`."""
    import torch

    scorer = policy.mlp_extractor
    step = max(1, HIDDEN_FLOATS // (scorer.n_experts * scorer.latent_dim_vf))
    out = np.empty((len(rows), scorer.n_experts))
    with torch.no_grad():
        for lo in range(0, len(rows), step):
            part = torch.from_numpy(np.ascontiguousarray(rows[lo : lo + step]))
            out[lo : lo + step] = policy_log_probs(policy, part).numpy()
    return out


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

