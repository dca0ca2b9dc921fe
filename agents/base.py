"""The agent contract shared by every learner: :class:`Agent`, its privacy claim, its observations.

An agent plays B = ``num_envs`` runs at once (batch-first state). The loop::

    obs, info = env.reset(seed=0)
    while True:
        action = agent.act(obs)          # learns from the feedback in obs, then chooses
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

Agents see observations only, never ``info``. Run ``b`` of an agent seeded ``s`` equals a single
agent seeded ``s + b`` bit for bit. Subclasses implement ``_init_state``, ``_learn(obs)`` (feedback
of round ``self.t``) and ``_choose(obs)``; ``self.t`` counts completed rounds.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_choice, check_int, real_array
from dp_experts_env.batch_rng import BatchRNG, run_seeds

__all__ = ["Agent", "BanditObs", "PrivacyClaim", "no_privacy", "clip_unit", "AGENT_STREAM"]

AGENT_STREAM = 7  # the agents' BatchRNG stream id: never the env's streams for the same seed

NEIGHBOURING = "replace one round's loss vector"

#: what a claim's summary says of the ``fast`` noise backend (docs/privacy.md,
#: "Why `fast` is simulation-grade").
FAST_NOISE_CAVEAT = (
    "fast (simulation-grade floats: the certificate holds for the ideal mechanism, not for its "
    "float64 sampler; use noise='grid' for a floating-point-safe release)"
)

# ufunc reductions without ndarray.min/max's wrapper layers; NaN propagates, so it fails the checks.
_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce


def _clip_ufunc() -> np.ufunc | None:
    """The ufunc ``np.clip`` ends in for arrays (numpy >= 2 exposes it), or None."""
    umath = getattr(getattr(np, "_core", None), "umath", None)
    clip = getattr(umath, "clip", None)
    return clip if isinstance(clip, np.ufunc) else None


_CLIP = _clip_ufunc()


def clip_unit(values: np.ndarray) -> np.ndarray:
    """``np.clip(values, 0.0, 1.0)`` without np.clip's Python wrapper layers (same values)."""
    if _CLIP is None:
        return np.clip(values, 0.0, 1.0)
    return _CLIP(values, 0.0, 1.0)


@dataclass(frozen=True)
class PrivacyClaim:
    """What an agent promises, and on whose authority.

    Attributes:
        epsilon: privacy parameter (``inf`` for non-private learners).
        delta: approximate-DP slack (0 for pure DP).
        neighbouring: the neighbouring relation of datasets the claim is about.
        feedback: ``"full"`` or ``"bandit"``: what the learner reads each round.
        model: ``"central"``, ``"local"`` (each datum privatised before use) or ``"none"``.
        certified: False when the agent knowingly departs from a correct accounting
            (``mode="paper"`` reproducing an erratum).
        accountant: the theorem or composition rule the numbers come from.
        holds_against: the strongest adversary covered: ``"adaptive"`` or ``"oblivious"``.
        notes: anything a reader of the claim must know.
        noise_backend: the noise backend that ran (``"fast"``, ``"grid"``, ``"none"``).
        requested_epsilon: the epsilon asked for (``epsilon``, certified for the parameters
            actually used, may be smaller).
    """

    epsilon: float
    delta: float = 0.0
    neighbouring: str = NEIGHBOURING
    feedback: str = "full"
    model: str = "central"
    certified: bool = True
    accountant: str = ""
    holds_against: str = "adaptive"
    notes: str = ""
    noise_backend: str = "none"
    requested_epsilon: float = math.nan

    def __post_init__(self) -> None:
        if not (self.epsilon > 0):
            raise ValueError(f"epsilon must be > 0 (inf for no privacy), got {self.epsilon}")
        if not (0.0 <= self.delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta}")
        check_choice("feedback", self.feedback, ("full", "bandit"))
        check_choice("model", self.model, ("central", "local", "none"))
        check_choice("holds_against", self.holds_against, ("adaptive", "oblivious"))

    @property
    def is_private(self) -> bool:
        """True when the claim bounds privacy loss (finite epsilon)."""
        return math.isfinite(self.epsilon)

    def summary(self) -> str:
        """One line: '(1, 0)-DP central, adaptive, certified [basic composition]'."""
        if not self.is_private:
            return "not private"
        kind = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        asked = ""
        requested = self.requested_epsilon
        # A certified value equal to the request up to float rounding (a bisection, a product
        # of scales) is the request: only a real difference is shown.
        if math.isfinite(requested) and not math.isclose(requested, self.epsilon, rel_tol=1e-9):
            asked = f" (requested epsilon {requested:g})"
        noise = self.noise_backend
        if noise == "fast":
            noise = FAST_NOISE_CAVEAT
        if not self.certified:
            return (
                f"NOT CERTIFIED: states {kind}{asked} {self.model}, vs {self.holds_against} "
                f"[{self.accountant}; noise: {noise}]"
            )
        return (
            f"{kind}{asked} {self.model}, vs {self.holds_against}, certified "
            f"[{self.accountant}; noise: {noise}]"
        )


def no_privacy(feedback: str = "full") -> PrivacyClaim:
    """The claim of a non-private learner."""
    return PrivacyClaim(
        epsilon=math.inf,
        feedback=feedback,
        model="none",
        accountant="none",
        notes="non-private baseline",
    )


@dataclass
class BanditObs:
    """A batch of bandit-with-advice observations.

    Attributes:
        advice: (B, N, K) advice for the round about to be played (public).
        last_action: (B,) arm played last round (0 before the first round).
        last_loss: (B,) loss of that arm (0 before the first round).
    """

    advice: np.ndarray
    last_action: np.ndarray
    last_loss: np.ndarray


class Agent(ABC):
    """Base class of all learners.

    Args:
        n_experts: N.
        horizon: T (learners that are horizon-free may ignore it).
        num_envs: B, the number of runs played in lockstep.
        seed: an int (run ``b`` uses ``seed + b``), a sequence of B ints, or None (fresh).
        n_arms: K, for bandit-feedback learners.

    Class attributes:
        name: registry name.
        feedback: ``"full"``, ``"bandit"`` or ``"any"`` (both; the claim reports the env's).
    """

    name: ClassVar[str] = ""
    feedback: ClassVar[str] = "full"

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.horizon = check_int("horizon", horizon, minimum=1)
        self.num_envs = check_int("num_envs", num_envs, minimum=1)
        if self.feedback == "bandit":
            self.n_arms: int | None = check_int("n_arms", n_arms, minimum=2)
        else:
            self.n_arms = None if n_arms is None else check_int("n_arms", n_arms, minimum=1)
        self._seed = seed
        self.rng: BatchRNG
        self.t = 0
        self.last_actions = np.zeros(self.num_envs, dtype=np.int64)
        # Subclasses finish their own validation, then call self.reset(seed) themselves.

    # ----------------------------------------------------------------- the contract
    @property
    @abstractmethod
    def privacy(self) -> PrivacyClaim:
        """The agent's privacy claim (frozen)."""

    def reset(self, seed: int | Sequence[int] | None = None) -> None:
        """Start a new episode for all runs; the random streams restart only with a seed."""
        if seed is not None or not hasattr(self, "rng"):
            seeds = run_seeds(seed if seed is not None else self._seed, self.num_envs)
            self.rng = BatchRNG(seeds, stream=AGENT_STREAM)
        self.t = 0
        self.last_actions = np.zeros(self.num_envs, dtype=np.int64)
        self._init_state()

    def act(self, obs: Any) -> Any:
        """Learn from the feedback in ``obs`` (if any round was played), then pick actions.

        A single observation returns a Python ``int``; a batch of B returns a (B,) int64 array.

        Raises:
            ValueError: the agent already played its ``horizon`` rounds, or an observation
                value is NaN, infinite or outside the env's range.
        """
        batch, single = self._parse_obs(obs)
        self._check_round(batch)
        if self.t > 0:
            self._learn(batch)
        actions = np.asarray(self._choose(batch), dtype=np.int64)
        self.t += 1
        self.last_actions = actions
        return int(actions[0]) if single else actions

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, Any]:
        """Stable-Baselines3-style prediction, so ``evaluate_policy(agent, vec_env)`` works.

        All runs start a new episode when ``episode_start`` is all True or after T rounds (random
        streams continue); a stale True flag is ignored. ``deterministic`` is ignored: a private
        learner's randomness is part of its guarantee.

        Raises:
            ValueError: the observation holds another number of runs than ``num_envs``, or a
                run restarts alone.
        """
        batch = self._batch_of(observation)
        if batch != self.num_envs:
            raise ValueError(
                f"observation holds {batch} run(s) but agent {self.name!r} was built for "
                f"num_envs={self.num_envs}: build it from the VecEnv it plays "
                f"(agents.make(name, env=vec_env) reads num_envs) or pass num_envs={batch}"
            )
        starts = None
        if episode_start is not None:
            starts = np.asarray(episode_start, dtype=bool).reshape(-1)
        previous = getattr(self, "_episode_starts", None)
        if self.t >= self.horizon or (starts is not None and starts.all()):
            self.reset()
        elif starts is not None and previous is not None and self.t > 0:
            # A flag that turns True in mid-episode is a real restart (a stale flag stays True).
            fresh = starts & ~previous
            if fresh.any():
                raise ValueError(
                    f"episode_start: runs {np.flatnonzero(fresh).tolist()} restarted alone at "
                    f"round {self.t} of {self.horizon}; the agent's runs share one round clock, "
                    "so every sub-env must end its episodes together after T rounds (no "
                    "wrapper that truncates episodes early)"
                )
        self._episode_starts = starts
        actions = self.act(observation)
        return np.atleast_1d(np.asarray(actions, dtype=np.int64)), state

    def _batch_of(self, observation: Any) -> int:
        """Number of runs in an observation (1 for a single unbatched observation)."""
        if isinstance(observation, Mapping):
            if "advice" not in observation:
                return self.num_envs  # malformed: act() reports it with the expected keys
            observation = observation["advice"]
        shape = np.shape(observation)
        return 1 if len(shape) <= 1 else int(shape[0])

    # ----------------------------------------------------------------- subclass hooks
    @abstractmethod
    def _init_state(self) -> None:
        """Allocate per-episode state for ``num_envs`` runs."""

    @abstractmethod
    def _learn(self, obs: Any) -> None:
        """Update from round ``self.t``'s feedback: (B, N) losses or a :class:`BanditObs`."""

    @abstractmethod
    def _choose(self, obs: Any) -> np.ndarray:
        """Return (B,) actions for round ``self.t + 1``."""

    # ----------------------------------------------------------------- boundary checks
    def _check_round(self, batch: Any) -> None:
        """Refuse a round past the horizon and observations outside the env's spaces (NaN too)."""
        if self.t >= self.horizon:
            raise ValueError(
                f"agent {self.name!r} has played its horizon={self.horizon} rounds: act() for "
                f"round {self.t + 1} is outside its privacy claim and tuning; call reset() to "
                "start a new episode (or build the agent with a longer horizon)"
            )
        if isinstance(batch, BanditObs):
            where = f"obs for round {self.t + 1} (feedback of round {self.t})"
            if not getattr(self, "_advice_finite", False) and not np.isfinite(batch.advice).all():
                raise ValueError(f"{where}: obs['advice'] must be finite, found NaN or inf")
            k = self.n_arms if self.n_arms is not None else batch.advice.shape[-1]
            actions, losses = batch.last_action, batch.last_loss
            if not (_min_reduce(actions, axis=None) >= 0 and _max_reduce(actions, axis=None) < k):
                raise ValueError(
                    f"{where}: obs['last_action'] must be an arm in [0, {k}), got "
                    f"{batch.last_action.tolist()}"
                )
            low, high = _min_reduce(losses, axis=None), _max_reduce(losses, axis=None)
            if not (low >= 0.0 and high <= 1.0):
                raise ValueError(
                    f"{where}: obs['last_loss'] must be finite and lie in [0, 1], got "
                    f"{batch.last_loss.tolist()}"
                )
            return
        flat = batch.ravel()  # a view of a contiguous batch; 1-D reductions skip axis handling
        if not (_min_reduce(flat) >= 0.0 and _max_reduce(flat) <= 1.0):
            where = f"obs for round {self.t + 1} (feedback of round {self.t})"
            bad = np.argwhere(~((batch >= 0.0) & (batch <= 1.0)))[0]
            raise ValueError(
                f"{where}: losses must be finite and lie in [0, 1]; found "
                f"{batch[tuple(bad)]} at run {bad[0]}, expert {bad[1]}"
            )

    # ----------------------------------------------------------------- observation parsing
    def _parse_obs(self, obs: Any) -> tuple[Any, bool]:
        if self.feedback == "bandit":
            return self._parse_bandit(obs)
        return self._parse_full(obs)

    def _parse_full(self, obs: Any) -> tuple[np.ndarray, bool]:
        if isinstance(obs, Mapping):
            raise TypeError(
                f"agent {self.name!r} needs full-information observations (loss vectors); "
                "got a dict observation (a bandit env?)"
            )
        arr = real_array("obs", obs)
        single = arr.ndim == 1
        if single:
            arr = arr[None, :]
        if arr.shape != (self.num_envs, self.n_experts):
            want = (
                f"({self.n_experts},) or ({self.num_envs}, {self.n_experts})"
                if self.num_envs == 1
                else f"({self.num_envs}, {self.n_experts})"
            )
            raise ValueError(f"obs must have shape {want}, got {np.shape(obs)}")
        if single and self.num_envs != 1:
            raise ValueError(f"obs must be a batch of {self.num_envs} observations")
        return arr, single

    def _check_advice(self, advice: np.ndarray) -> None:
        """Refuse advice rows off the simplex (the claims' sensitivities need it); note finiteness.

        Shared advice (run stride 0) is checked on one run; a read-only shared view of the memory
        checked last round (a bandit env's constant identity advice) is trusted without a check.
        """
        shared = advice.strides[0] == 0 and not advice.flags.writeable
        key = (advice.__array_interface__["data"][0], advice.shape, advice.strides)
        trusted = getattr(self, "_trusted_advice", None)
        if shared and trusted is not None and trusted[1] == key:
            self._advice_finite = True
            return
        values = advice[:1] if advice.strides[0] == 0 else advice
        low, high = _min_reduce(values, axis=None), _max_reduce(values, axis=None)
        off = _max_reduce(np.abs(values.sum(-1) - 1.0), axis=None)
        if low < 0.0 or high > 1.0 or off > 1e-6:
            raise ValueError(
                "obs['advice'] rows must be probability distributions over the K arms "
                "(entries in [0, 1] summing to 1)"
            )
        # NaN passes the comparisons above; _check_round refuses it after the horizon check.
        self._advice_finite = bool(np.isfinite(low) and np.isfinite(high))
        if shared and self._advice_finite:
            self._trusted_advice = (advice, key)  # held, so the address keeps naming this memory

    def _parse_bandit(self, obs: Any) -> tuple[BanditObs, bool]:
        if not isinstance(obs, Mapping) or not {"advice", "last_action", "last_loss"} <= set(obs):
            raise TypeError(
                f"agent {self.name!r} needs bandit observations: a dict with keys 'advice', "
                f"'last_action' and 'last_loss'; got {type(obs).__name__}"
            )
        n, k = self.n_experts, self.n_arms
        advice = real_array("obs['advice']", obs["advice"])
        single = advice.ndim == 1
        advice = advice.reshape(-1, n, k) if advice.size == self.num_envs * n * k else None
        if advice is None or advice.shape[0] != self.num_envs:
            raise ValueError(
                f"obs['advice'] must hold {self.num_envs} x {n * k} values (N={n}, K={k}), "
                f"got shape {np.shape(obs['advice'])}"
            )
        self._check_advice(advice)
        last_action = np.asarray(obs["last_action"], dtype=np.int64).reshape(self.num_envs)
        last_loss = real_array("obs['last_loss']", obs["last_loss"]).reshape(self.num_envs)
        return BanditObs(advice, last_action, last_loss), single
