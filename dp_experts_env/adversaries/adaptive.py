"""Adaptive loss models: round ``t``'s losses react to past actions, never to the current one.

Asi, Raman & Saha, Section 2.1 (the ``l_t(., J_{1:t-1}, z_t)`` form), and the lower-bound
constructions of Asi, Feldman, Koren & Talwar, Section 4 and Appendix C. Every model
here is a :class:`PolicyAdversary`: a *base* generator produces the protected datum ``z_t`` of shape
(B, N) (the neighbouring relation of event-level DP replaces exactly this vector), and an
:class:`AdaptivePolicy` maps ``(t, z_t, past actions)`` to the loss vector. The adversary is the
same function in neighbouring games (Asi, Raman & Saha, Definition 2.1), so an audit that swaps one
``z_t`` measures the learner, not the adversary.

Timing: ``next_round()`` computes round ``t``'s losses from the actions recorded for rounds
``1..t-1``; the env then calls ``record(actions)`` with round ``t``'s actions. The adversary refuses
to run ahead (``next_round`` before ``record`` of the previous round raises), so the current action
can never leak into the current losses.

Randomness: the base datum comes from the DATA stream with a fixed number of uniforms per round;
any randomness of a policy (public coins) comes from the ADVICE stream, never from the agent.

Families of kind ``"adaptive"`` (factories ``f(n_experts, horizon, **knobs) -> PolicyAdversary``):
``punish_last`` (default), ``punish_frequent``, ``sign_estimation``, ``hidden_sign_vector``,
``block_restart``.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import (
    check_choice,
    check_epsilon,
    check_float,
    check_int,
    check_loss_array,
)
from dp_experts_env.adversaries.base import ADVICE_STREAM, DATA_STREAM, Adversary, Round
from dp_experts_env.adversaries.params import BaseLossParams, FamilyParams
from dp_experts_env.adversaries.registry import families, family_factory, register_family
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "ActionHistory",
    "AdaptivePolicy",
    "BaseLosses",
    "PolicyAdversary",
    "PunishLastPolicy",
    "PunishFrequentPolicy",
    "SignEstimationPolicy",
    "BlockRestartPolicy",
    "BASES",
    "punish_last",
    "punish_frequent",
    "sign_estimation",
    "hidden_sign_vector",
    "block_restart",
    "PolicyAdversaryParams",
    "PunishLastParams",
    "PunishFrequentParams",
    "SignEstimationParams",
    "HiddenSignVectorParams",
    "BlockRestartParams",
]

BASES = ("bernoulli", "zeros", "uniform")


def _nbytes_of(obj: object, skip: tuple[object, ...] = ()) -> int:
    """Bytes in numpy arrays held by ``obj`` (and by members that report ``state_nbytes``)."""
    total = 0
    for value in vars(obj).values():
        if any(value is s for s in skip):
            continue
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif hasattr(value, "state_nbytes") and value is not obj and not isinstance(value, type):
            total += value.state_nbytes()
    return int(total)


# --------------------------------------------------------------------------------------- history
class ActionHistory:
    """The last ``window`` actions of B runs, in a ring buffer (O(B * window) memory).

    Args:
        num_runs: B.
        window: how many past rounds to keep (0 keeps none, only the count).
    """

    def __init__(self, num_runs: int, window: int) -> None:
        self.num_runs = int(num_runs)
        self.window = int(window)
        self.count = 0  # rounds recorded so far (= t - 1 while round t is being computed)
        self._buf = np.zeros((self.num_runs, self.window), dtype=np.int64)
        self._pos = 0

    def push(self, actions: np.ndarray) -> np.ndarray | None:
        """Append one round's actions (B,); return the evicted column when the window was full."""
        self.count += 1
        if self.window == 0:
            return None
        evicted = None
        if self.count > self.window:
            evicted = self._buf[:, self._pos].copy()
        self._buf[:, self._pos] = actions
        self._pos = (self._pos + 1) % self.window
        return evicted

    def last(self, k: int | None = None) -> np.ndarray:
        """The most recent ``k`` actions (all kept ones if None), newest first: shape (B, <= k).

        Column 0 is ``J_{t-1}``, column 1 is ``J_{t-2}``, and so on; fewer columns exist early in
        the game or when ``k`` exceeds the window.
        """
        kept = min(self.count, self.window)
        k = kept if k is None else max(0, min(int(k), kept))
        if k == 0:
            return np.zeros((self.num_runs, 0), dtype=np.int64)
        idx = (self._pos - 1 - np.arange(k)) % self.window
        return self._buf[:, idx]

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays."""
        return int(self._buf.nbytes)


# --------------------------------------------------------------------------------------- policy
class AdaptivePolicy(ABC):
    """How losses react to past actions; subclass it to write your own adaptive adversary.

    One policy object serves B runs at once (arrays with a leading run axis). The adversary calls:

    * ``reset(num_runs, n_experts, horizon, rng)`` at the start of every episode; ``rng`` is a
      :class:`~dp_experts_env.batch_rng.BatchRNG` of public coins (the ADVICE stream), the only
      randomness a policy may use. Use a fixed number of draws per round, independent of the
      runs' data, so a batch equals B single runs.
    * ``losses(t, z, history)`` once per round ``t`` (1-based): ``z`` is the round's base datum
      (B, N) in [0, 1] (the protected data); ``history`` is an :class:`ActionHistory` holding the
      last ``window`` actions of rounds ``< t``. Return a (B, N) array in [0, 1]. Do not keep a
      reference to ``z``.
    * ``record(t, actions)`` after round ``t`` was played (actions (B,) int64). Policies that need
      statistics of the whole past (counts, burned columns) update them here, in O(state) memory.

    Class attributes a subclass may set:
        window: how many past actions the adversary keeps for ``history`` (0 = none). Use the
            horizon only when the policy truly needs the full past (O(B*T) memory).
        default_switches: the comparator switch budget S an env should use by default.
        has_segments: True when ``segment(t)`` returns a block index.
    """

    window: int = 0
    default_switches: int = 0
    has_segments: bool = False

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Start B new episodes (the base implementation stores the arguments)."""
        self.num_runs = int(num_runs)
        self.n_experts = int(n_experts)
        self.horizon = int(horizon)
        self.rng = rng

    @abstractmethod
    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Round ``t``'s loss vectors (B, N) in [0, 1] from the datum and past actions only."""

    def record(self, t: int, actions: np.ndarray) -> None:
        """Receive round ``t``'s actions (B,) after the round was played."""
        return None

    def segment(self, t: int) -> int | np.ndarray | None:
        """Index of the block round ``t`` belongs to (only when ``has_segments``)."""
        return None

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays by this policy."""
        return _nbytes_of(self)


# ----------------------------------------------------------------------------------------- bases
class BaseLosses:
    """Generator of the protected base datum ``z_t`` (B, N): a pure function of (seed, t).

    Subclasses implement ``draw``; ``reset`` receives the DATA stream. Each round must consume the
    same number of uniforms whatever the data, so round ``t`` is reproducible from (seed, t).
    """

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Start B new episodes on the data stream ``rng``."""
        self.num_runs = int(num_runs)
        self.n_experts = int(n_experts)
        self.horizon = int(horizon)
        self.rng = rng

    def draw(self, t: int) -> np.ndarray:
        """Round ``t``'s base datum, shape (B, N), values in [0, 1]."""
        raise NotImplementedError

    def state_nbytes(self) -> int:
        """Bytes held in numpy arrays by this generator."""
        return _nbytes_of(self)


class _ZerosBase(BaseLosses):
    def draw(self, t: int) -> np.ndarray:
        return np.zeros((self.num_runs, self.n_experts))


class _UniformBase(BaseLosses):
    def draw(self, t: int) -> np.ndarray:
        return self.rng.random((self.n_experts,))


class _BernoulliBase(BaseLosses):
    def __init__(self, mean: np.ndarray) -> None:
        self.mean = mean

    def draw(self, t: int) -> np.ndarray:
        return self.rng.bernoulli(self.mean, (self.n_experts,))


def _make_base(base: Any, n_experts: int, base_mean: Any) -> BaseLosses:
    """Build the base datum generator from the ``base``/``base_mean`` knobs."""
    if isinstance(base, BaseLosses):
        if base_mean is not None:
            raise ValueError(
                "base_mean applies only to base='bernoulli', not to a BaseLosses object"
            )
        return base
    if not isinstance(base, str):
        raise TypeError(
            f"base must be one of {BASES} or a BaseLosses object, got {type(base).__name__}"
        )
    check_choice("base", base, BASES)
    if base != "bernoulli":
        if base_mean is not None:
            raise ValueError(f"base_mean applies only to base='bernoulli', got base={base!r}")
        return _ZerosBase() if base == "zeros" else _UniformBase()
    if base_mean is None:
        base_mean = 0.5
    if isinstance(base_mean, numbers.Real) and not isinstance(base_mean, bool):
        mean = np.full(n_experts, check_float("base_mean", base_mean, minimum=0.0, maximum=1.0))
    else:
        mean = check_loss_array("base_mean", base_mean, ndim=1, shape=(n_experts,))
    return _BernoulliBase(mean)


# ------------------------------------------------------------------------------------- adversary
def _check_actions(actions: Any, num_runs: int, n_experts: int) -> np.ndarray:
    arr = np.asarray(actions)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"actions must be integers in [0, {n_experts}), got dtype {arr.dtype}")
    if arr.ndim == 0 and num_runs == 1:
        arr = arr.reshape(1)
    if arr.shape != (num_runs,):
        raise ValueError(f"actions must have shape ({num_runs},), got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_experts):
        raise ValueError(f"actions must lie in [0, {n_experts}), got {arr.min()}..{arr.max()}")
    return arr.astype(np.int64, copy=True)


class PolicyAdversary(Adversary):
    """An adaptive adversary: base datum ``z_t`` (protected) turned into losses by a policy.

    Args:
        n_experts: N.
        horizon: T.
        policy: an :class:`AdaptivePolicy` (built-in or user-defined).
        base: the base datum generator: ``"bernoulli"`` (default; i.i.d. Bernoulli(base_mean)
            per expert, N uniforms per round), ``"zeros"`` (no draws), ``"uniform"`` (U[0, 1), N
            uniforms per round) or a :class:`BaseLosses` object.
        base_mean: Bernoulli mean, a number or an (N,) vector in [0, 1] (default 0.5); only with
            ``base="bernoulli"``.

    The policy's ``default_switches`` and ``has_segments`` become the adversary's. The env must
    call ``record(actions)`` after every round; ``next_round`` raises if it was skipped.
    """

    oblivious = False
    knows_means = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        policy: AdaptivePolicy,
        base: str | BaseLosses = "bernoulli",
        base_mean: float | np.ndarray | None = None,
    ) -> None:
        super().__init__(n_experts, horizon)
        if not isinstance(policy, AdaptivePolicy):
            raise TypeError(
                "policy must be an AdaptivePolicy instance (subclass "
                "dp_experts_env.adversaries.AdaptivePolicy and implement losses(t, z, history)); "
                f"got {type(policy).__name__}"
            )
        self.policy = policy
        self.base = _make_base(base, self.n_experts, base_mean)
        self.default_switches = check_int(
            "policy.default_switches", policy.default_switches, minimum=0
        )
        # The class attribute of Adversary is a default; a policy with blocks reports segments.
        self.has_segments = bool(policy.has_segments)  # type: ignore[misc]
        self._window = min(check_int("policy.window", policy.window, minimum=0), self.horizon)
        self._history: ActionHistory | None = None
        self._recorded = 0
        self._prev_segment: np.ndarray | None = None

    def _reset(self, seeds: list[int]) -> None:
        self._start(BatchRNG(seeds, DATA_STREAM), BatchRNG(seeds, ADVICE_STREAM))

    def _start(self, data_rng: BatchRNG, coin_rng: BatchRNG) -> None:
        """Start an episode on given streams (also runs this game as one block of another)."""
        self.num_runs = data_rng.num_runs
        self.t = 0
        self._recorded = 0
        self._prev_segment = None
        self.base.reset(self.num_runs, self.n_experts, self.horizon, data_rng)
        self.policy.reset(self.num_runs, self.n_experts, self.horizon, coin_rng)
        self._history = ActionHistory(self.num_runs, self._window)

    def _draw(self, t: int) -> np.ndarray:
        if self._recorded != t - 1:
            raise RuntimeError(
                f"record(actions) of round {t - 1} must be called before the losses of round {t} "
                "are computed (adaptive adversaries react to every past action)"
            )
        return self.base.draw(t)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        assert self._history is not None
        raw = self.policy.losses(t, z, self._history)
        losses = np.asarray(raw, dtype=np.float64)
        shape = (self.num_runs, self.n_experts)
        if losses.shape != shape:
            raise ValueError(
                f"{type(self.policy).__name__}.losses must return shape {shape}, got {losses.shape}"
            )
        if not np.all(np.isfinite(losses)) or losses.min() < 0.0 or losses.max() > 1.0:
            raise ValueError(
                f"{type(self.policy).__name__}.losses must return finite values in [0, 1] "
                f"(round {t}); got range [{np.nanmin(losses)}, {np.nanmax(losses)}]"
            )
        if not self.has_segments:
            return Round(losses=losses)
        seg = np.broadcast_to(np.asarray(self.policy.segment(t), dtype=np.int64), (self.num_runs,))
        seg = seg.copy()
        prev = self._prev_segment
        shift = np.zeros(self.num_runs, dtype=bool) if prev is None else seg != prev
        self._prev_segment = seg
        return Round(losses=losses, segment=seg, shift=shift)

    def record(self, actions: np.ndarray) -> None:
        """Receive the actions of the round just played and pass them to the policy."""
        if self.t == 0 or self._recorded == self.t:
            raise RuntimeError(
                "record(actions) must follow next_round(), exactly once per round "
                f"(round {self.t}, already recorded {self._recorded})"
            )
        acts = _check_actions(actions, self.num_runs, self.n_experts)
        self.policy.record(self.t, acts)
        assert self._history is not None
        self._history.push(acts)
        self._recorded = self.t


# ---------------------------------------------------------------------------- built-in policies
class PunishLastPolicy(AdaptivePolicy):
    """Loss 1 on every expert played in the last ``k`` rounds, the base datum elsewhere.

    ``PunishLast(k)`` (the suite's example, not from a paper): ``l_t(j) = 1`` if
    ``j in {J_{t-1}, ..., J_{t-k}}`` else ``z_t(j)``. Lazy learners (``J_t = J_{t-1}``) pay every
    round. Memory O(B * k).
    """

    def __init__(self, k: int = 1) -> None:
        self.k = check_int("k", k, minimum=1)
        self.window = self.k

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Punish the recently played experts."""
        out = np.array(z, dtype=np.float64, copy=True)
        recent = history.last(self.k)
        if recent.shape[1]:
            out[np.arange(out.shape[0])[:, None], recent] = 1.0
        return out


class PunishFrequentPolicy(AdaptivePolicy):
    """Loss 1 on the ``n_punished`` experts played most often in the last ``window`` rounds.

    ``PunishFrequent(W, m)`` (the suite's example). Choices: only experts played at
    least once in the window can be punished (early rounds punish fewer than m); ties in the count
    go to the lower expert index (deterministic, no coins). Memory O(B * (N + W)).
    """

    def __init__(self, window: int = 100, n_punished: int = 1) -> None:
        self.frequency_window = check_int("window", window, minimum=1)
        self.n_punished = check_int("n_punished", n_punished, minimum=1)

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Clear the window counts."""
        super().reset(num_runs, n_experts, horizon, rng)
        if self.n_punished > n_experts:
            raise ValueError(
                f"n_punished must be <= n_experts ({n_experts}), got {self.n_punished}"
            )
        self._recent = ActionHistory(num_runs, min(self.frequency_window, horizon))
        self._counts = np.zeros((num_runs, n_experts), dtype=np.int64)
        # Tie-break key: a higher count wins, then a lower index.
        self._rank_offset = (n_experts - 1 - np.arange(n_experts)).astype(np.int64)

    def record(self, t: int, actions: np.ndarray) -> None:
        """Slide the window by one round."""
        rows = np.arange(self.num_runs)
        evicted = self._recent.push(actions)
        self._counts[rows, actions] += 1
        if evicted is not None:
            self._counts[rows, evicted] -= 1

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Punish the most frequent recent experts."""
        played = self._counts > 0
        if self.n_punished >= self.n_experts:
            mask = played
        else:
            score = self._counts * self.n_experts + self._rank_offset
            top = np.argpartition(-score, self.n_punished - 1, axis=1)[:, : self.n_punished]
            mask = np.zeros_like(played)
            mask[np.arange(self.num_runs)[:, None], top] = True
            mask &= played
        return np.where(mask, 1.0, z)


# ------------------------------------------------ sign estimation (Asi et al. 2023, Section 4)
def _largest_t0(epsilon: float) -> int:
    """Largest T0 >= 1 with 200 sqrt(T0) ln(T0) <= 1/epsilon (Asi et al. 2023, Thm 9)."""
    budget = 1.0 / epsilon

    def ok(n: int) -> bool:
        return 200.0 * math.sqrt(n) * math.log(n) <= budget

    lo, hi = 1, 2
    while ok(hi) and hi < 1 << 62:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


class _SignRowsBase(BaseLosses):
    """The datum of the sign-estimation games: user ``i_t``'s row of X, written as losses.

    ``z_t(e) = (1 - sigma_e X[i_t, e // 2]) / 2`` for expert ``e < 2p`` (sigma = -1 for even e,
    +1 for odd e), 1 for the leftover experts ``e >= 2p``, during the hard phase; 0 everywhere
    after it. X is drawn at reset from the DATA stream (it *is* the dataset of the lower-bound
    argument): consensus columns with a uniform sign, plus ``n_fingerprint`` columns at random
    positions whose entries are +1 with a per-column bias from the truncated arcsine law.
    Memory O(B * (N + n_users * n_fingerprint)); no T x N matrix.
    """

    def __init__(self, p: int, n_users: int, n_fingerprint: int, hard_rounds: int) -> None:
        self.p = p
        self.n_users = n_users
        self.n_fingerprint = n_fingerprint
        self.hard_rounds = hard_rounds

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        super().reset(num_runs, n_experts, horizon, rng)
        p, n, f = self.p, self.n_users, self.n_fingerprint
        signs = np.where(rng.random((p,)) < 0.5, -1.0, 1.0)  # consensus sign c_j
        cons = np.ones((num_runs, n_experts))
        cons[:, 0 : 2 * p : 2] = (1.0 + signs) / 2.0  # sigma = -1
        cons[:, 1 : 2 * p : 2] = (1.0 - signs) / 2.0  # sigma = +1
        self._consensus = cons
        # Round-robin user schedule over a random permutation (erratum E-AFKT-20).
        self._users = np.argsort(rng.random((n,)), axis=1, kind="stable")
        if f:
            self._fp_cols = np.argsort(rng.random((p,)), axis=1, kind="stable")[:, :f]
            lo = 1.0 / (300.0 * n)
            a, b = (
                (2.0 / math.pi) * math.asin(math.sqrt(lo)),
                (2.0 / math.pi) * math.asin(math.sqrt(1.0 - lo)),
            )
            bias = np.sin(0.5 * math.pi * (a + (b - a) * rng.random((f,)))) ** 2
            self._fp_rows = np.where(rng.random((n, f)) < bias[:, None, :], 1.0, -1.0)

    def draw(self, t: int) -> np.ndarray:
        if t > self.hard_rounds:
            return np.zeros((self.num_runs, self.n_experts))
        z = self._consensus.copy()
        if self.n_fingerprint:
            rows = np.arange(self.num_runs)
            user = self._users[:, (t - 1) % self.n_users]
            entries = self._fp_rows[rows, user]  # (B, f)
            cols = self._fp_cols
            z[rows[:, None], 2 * cols] = (1.0 + entries) / 2.0
            z[rows[:, None], 2 * cols + 1] = (1.0 - entries) / 2.0
        return z


class SignEstimationPolicy(AdaptivePolicy):
    """Burned columns: loss 1 on both experts of every column already estimated.

    Asi, Feldman, Koren & Talwar, Theorems 9-10, 0-indexed (E-AFKT-17): expert ``e`` stands for
    column ``e // 2`` with sign -1 (even e) or +1 (odd e). State ``s`` in {-1, 0, +1}^p starts at
    0; after the learner plays ``e`` with ``s[e // 2] == 0`` the column takes that sign (first
    write wins). During the hard phase ``l_t(e) = 1`` if the column is burned, else the datum;
    after it, the datum itself (0 from the sign-rows base). Memory O(B * p).
    """

    def __init__(self, p: int, hard_rounds: int) -> None:
        self.p = p
        self.hard_rounds = hard_rounds

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Un-burn every column."""
        super().reset(num_runs, n_experts, horizon, rng)
        self.state = np.zeros((num_runs, self.p), dtype=np.int8)

    def record(self, t: int, actions: np.ndarray) -> None:
        """Burn the played column with the played sign, if it was fresh."""
        if t > self.hard_rounds:
            return
        rows = np.arange(self.num_runs)
        valid = actions < 2 * self.p
        cols = np.where(valid, actions // 2, 0)
        sign = np.where(actions % 2 == 0, -1, 1).astype(np.int8)
        fresh = valid & (self.state[rows, cols] == 0)
        self.state[rows[fresh], cols[fresh]] = sign[fresh]

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """Loss 1 on burned columns during the hard phase, the datum elsewhere."""
        out = np.array(z, dtype=np.float64, copy=True)
        if t <= self.hard_rounds:
            burned = np.repeat(self.state != 0, 2, axis=1)
            out[:, : 2 * self.p][burned] = 1.0
        return out


def _hard_rounds(p: int, horizon: int, hard_rounds: Any, epsilon: Any) -> int:
    if hard_rounds is None:
        rounds = min(horizon, max(1, math.floor(0.9 * p)))
    else:
        rounds = check_int("hard_rounds", hard_rounds, minimum=1, maximum=min(horizon, p))
    if epsilon is not None:
        rounds = min(rounds, _largest_t0(check_epsilon("epsilon", epsilon)))
    return rounds


def _sign_game(
    n_experts: int,
    horizon: int,
    n_users: int,
    fingerprint_fraction: float,
    hard_rounds: Any,
    epsilon: Any,
) -> PolicyAdversary:
    n_experts = check_int("n_experts", n_experts, minimum=2)
    horizon = check_int("horizon", horizon, minimum=1)
    p = n_experts // 2
    rounds = _hard_rounds(p, horizon, hard_rounds, epsilon)
    n_fp = math.ceil(fingerprint_fraction * p) if fingerprint_fraction > 0 else 0
    base = _SignRowsBase(p, n_users, n_fp, rounds)
    return PolicyAdversary(n_experts, horizon, policy=SignEstimationPolicy(p, rounds), base=base)


# ------------------------------------------------------------------------------- block restart
class BlockRestartPolicy(AdaptivePolicy):
    """Asi-Raman-Saha Theorem 5.1 skeleton (E-ARS-19): S+1 blocks, a fresh inner game per block.

    Block length ``T' = floor(T / (S+1))``; block ``b`` (0-based) covers rounds ``b T' + 1 ..
    (b+1) T'``, and the last block also takes the ``T - (S+1) T'`` leftover rounds [choice: the
    theorem assumes (S+1) | T; extending the last block keeps exactly S block boundaries]. At the
    start of each block ``inner(block)`` builds a fresh inner adversary (a :class:`PolicyAdversary`
    over the block's length); it sees in-block actions only, on a local clock, and its base datum
    is the block's datum (so a neighbour still replaces one round's datum). Experts are shared by
    all blocks; the env's comparator may switch at block boundaries, hence ``default_switches = S``.
    The inner games draw from the outer game's DATA and ADVICE streams, so every run consumes the
    same uniforms and block ``b`` is a pure function of (seed, earlier rounds).
    """

    has_segments = True

    def __init__(self, n_shifts: int, inner: Callable[[int, int], PolicyAdversary]) -> None:
        self.n_shifts = check_int("n_shifts", n_shifts, minimum=0)
        self.default_switches = self.n_shifts
        self.inner = inner

    def reset(self, num_runs: int, n_experts: int, horizon: int, rng: BatchRNG) -> None:
        """Forget the previous episode's blocks."""
        super().reset(num_runs, n_experts, horizon, rng)
        self.block_len = horizon // (self.n_shifts + 1)
        self._block = -1
        self._game: PolicyAdversary | None = None

    def block_of(self, t: int) -> int:
        """0-based block index of round ``t``."""
        return min((t - 1) // self.block_len, self.n_shifts)

    def block_start(self, block: int) -> int:
        """First round (1-based) of a block."""
        return block * self.block_len + 1

    def block_length(self, block: int) -> int:
        """Number of rounds in a block (the last one takes the leftover)."""
        if block == self.n_shifts:
            return self.horizon - self.n_shifts * self.block_len
        return self.block_len

    def _datum(self, t: int, data_rng: BatchRNG) -> np.ndarray:
        block = self.block_of(t)
        if block != self._block:
            game = self.inner(block, self.block_length(block))
            game._start(data_rng, self.rng)
            self._game, self._block = game, block
        assert self._game is not None
        local = t - self.block_start(block) + 1
        self._game.t = local
        return self._game._draw(local)

    def losses(self, t: int, z: np.ndarray, history: ActionHistory) -> np.ndarray:
        """The inner game's losses at the local round."""
        assert self._game is not None
        return self._game._finish(self._game.t, z).losses

    def record(self, t: int, actions: np.ndarray) -> None:
        """In-block history only: forward to the block's game."""
        assert self._game is not None
        self._game.record(actions)

    def segment(self, t: int) -> int:
        """The block index."""
        return self.block_of(t)


class _BlockBase(BaseLosses):
    """The datum of a block-restart game: the current block's inner datum (drawn by the policy)."""

    def __init__(self, policy: BlockRestartPolicy) -> None:
        self.policy = policy

    def draw(self, t: int) -> np.ndarray:
        return self.policy._datum(t, self.rng)

    def state_nbytes(self) -> int:
        return 0  # the policy (and its inner game) is counted by the adversary


# ------------------------------------------------------------------------------------ parameters
@dataclass(frozen=True)
class PolicyAdversaryParams(BaseLossParams):
    """Knobs of :class:`PolicyAdversary` besides its policy (an env wrapping a policy object)."""


@dataclass(frozen=True)
class PunishLastParams(BaseLossParams):
    """Knobs of :func:`punish_last`: the memory ``k`` and the base datum."""

    k: int = 1


@dataclass(frozen=True)
class PunishFrequentParams(BaseLossParams):
    """Knobs of :func:`punish_frequent`: the window, the number punished and the base datum."""

    window: int = 100
    n_punished: int = 1


@dataclass(frozen=True)
class HiddenSignVectorParams(FamilyParams):
    """Knobs of :func:`hidden_sign_vector` (and the hard phase of :func:`sign_estimation`)."""

    hard_rounds: int | None = None
    epsilon: float | None = None


@dataclass(frozen=True)
class SignEstimationParams(HiddenSignVectorParams):
    """Knobs of :func:`sign_estimation`."""

    n_users: int | None = None
    fingerprint_fraction: float = 0.001


@dataclass(frozen=True)
class BlockRestartParams(FamilyParams):
    """Knobs of :func:`block_restart` (``base`` applies to a callable ``inner`` only)."""

    n_shifts: int = 1
    inner: Any = "sign_estimation"
    inner_knobs: Mapping[str, Any] | None = None
    base: Any = None
    base_mean: Any = None


# ------------------------------------------------------------------------------------ families
@register_family("adaptive", "punish_last", PunishLastParams)
def punish_last(
    n_experts: int,
    horizon: int,
    *,
    k: int = 1,
    base: str | BaseLosses = "bernoulli",
    base_mean: float | np.ndarray | None = None,
) -> PolicyAdversary:
    """PunishLast(k) (an adaptive example), the default adaptive family.

    Knobs: ``k`` (>= 1, default 1) rounds of memory; ``base``/``base_mean`` as in
    :class:`PolicyAdversary` (default Bernoulli(0.5) base losses).
    """
    return PolicyAdversary(
        n_experts, horizon, policy=PunishLastPolicy(k), base=base, base_mean=base_mean
    )


@register_family("adaptive", "punish_frequent", PunishFrequentParams)
def punish_frequent(
    n_experts: int,
    horizon: int,
    *,
    window: int = 100,
    n_punished: int = 1,
    base: str | BaseLosses = "bernoulli",
    base_mean: float | np.ndarray | None = None,
) -> PolicyAdversary:
    """PunishFrequent(W, m): loss 1 on the m most played experts of the last W.

    Knobs: ``window`` = W (>= 1, default 100), ``n_punished`` = m (1..N, default 1),
    ``base``/``base_mean`` as in :class:`PolicyAdversary`.
    """
    n_experts = check_int("n_experts", n_experts, minimum=1)
    n_punished = check_int("n_punished", n_punished, minimum=1, maximum=n_experts)
    return PolicyAdversary(
        n_experts,
        horizon,
        policy=PunishFrequentPolicy(window, n_punished),
        base=base,
        base_mean=base_mean,
    )


def _default_users(p: int) -> int:
    # Theorem 15 quoted in Asi et al. 2023, App. C.1: p = 1000 m^2, n = m / log m; guarded.
    m = math.sqrt(p / 1000.0)
    return max(1, math.floor(m / math.log(m))) if m > math.e else 1


@register_family("adaptive", "sign_estimation", SignEstimationParams)
def sign_estimation(
    n_experts: int,
    horizon: int,
    *,
    n_users: int | None = None,
    fingerprint_fraction: float = 0.001,
    hard_rounds: int | None = None,
    epsilon: float | None = None,
) -> PolicyAdversary:
    """Sign-estimation adversary of Theorem 9 (Asi et al. 2023), approximate-DP LB.

    ``p = floor(N/2)`` columns; expert ``e`` = (column ``e // 2``, sign -1 if e even else +1);
    an odd leftover expert has loss 1 during the hard phase (E-AFKT-22). Round ``t <= T_hard``:
    loss 1 on burned columns, else ``(1 - sigma X[i_t, j]) / 2``; afterwards all losses are 0.
    When more consensus columns exist than hard rounds (``p - n_fingerprint > T_hard``, e.g.
    p >= 11 with the defaults), an untouched consensus column keeps loss 0, so the regret equals
    the learner's total loss.

    Knobs:
        n_users: n, rows of X (default ``floor(m / ln m)`` with ``m = sqrt(p / 1000)``, at least
            1, following Theorem 15's ``p = 1000 m^2``, ``n = m / log m``).
        fingerprint_fraction: share of the p columns that are fingerprinting columns (default
            0.001, rounded up; 0 gives the all-consensus matrix). [Erratum E-AFKT-19: the
            padded Tardos code is not constructed in the paper; biases follow the arcsine law
            truncated to [1/(300n), 1 - 1/(300n)].]
        hard_rounds: T_hard, rounds of the hard phase (default ``min(T, floor(0.9 p))``, at least
            1; must be <= min(T, p)).
        epsilon: optional learner epsilon; caps T_hard at the largest T0 with
            ``200 sqrt(T0) ln T0 <= 1/epsilon`` (the theorem's larger-eps extension). The
            constant 200 makes T0 tiny unless epsilon is very small.

    The user schedule is round-robin over a random permutation (erratum E-AFKT-20).
    """
    n_experts = check_int("n_experts", n_experts, minimum=2)
    p = n_experts // 2
    users = _default_users(p) if n_users is None else check_int("n_users", n_users, minimum=1)
    frac = check_float("fingerprint_fraction", fingerprint_fraction, minimum=0.0, maximum=1.0)
    return _sign_game(n_experts, horizon, users, frac, hard_rounds, epsilon)


@register_family("adaptive", "hidden_sign_vector", HiddenSignVectorParams)
def hidden_sign_vector(
    n_experts: int,
    horizon: int,
    *,
    hard_rounds: int | None = None,
    epsilon: float | None = None,
) -> PolicyAdversary:
    """Pure-DP hidden-sign-vector adversary of Theorem 10 (Asi et al. 2023).

    The sign-estimation game on an all-consensus matrix: a hidden sign vector c, uniform in
    {-1, +1}^p, ``l_t(j, sigma) = 1`` if column j is burned else ``1{sigma != c_j}`` during the
    hard phase, 0 afterwards. The datum is the same row every hard round (one user schedule is
    irrelevant here). Knobs ``hard_rounds`` and ``epsilon`` as in :func:`sign_estimation`.
    """
    return _sign_game(n_experts, horizon, 1, 0.0, hard_rounds, epsilon)


class _FamilyBlocks:
    """Builds each block's adversary from a family name.

    A class rather than a closure so that an env with a block-restart adversary pickles (sent
    to a worker process, copied by a vector env).
    """

    def __init__(self, family: str, n_experts: int, knobs: dict[str, Any]) -> None:
        self.family = family
        self.n_experts = n_experts
        self.knobs = knobs

    def __call__(self, block: int, length: int) -> PolicyAdversary:
        return family_factory("adaptive", self.family)(self.n_experts, length, **self.knobs)


class _CallableBlocks:
    """Builds each block's adversary from a user's ``inner(block) -> AdaptivePolicy``.

    Picklable whenever that callable is.
    """

    def __init__(
        self,
        inner: Callable[[int], AdaptivePolicy],
        n_experts: int,
        base: str | BaseLosses,
        base_mean: float | np.ndarray | None,
    ) -> None:
        self.inner = inner
        self.n_experts = n_experts
        self.base = base
        self.base_mean = base_mean

    def __call__(self, block: int, length: int) -> PolicyAdversary:
        policy = self.inner(block)
        if not isinstance(policy, AdaptivePolicy):
            raise TypeError(
                f"inner(block) must return an AdaptivePolicy, got {type(policy).__name__}"
            )
        return PolicyAdversary(
            self.n_experts, length, policy=policy, base=self.base, base_mean=self.base_mean
        )


@register_family("adaptive", "block_restart", BlockRestartParams)
def block_restart(
    n_experts: int,
    horizon: int,
    *,
    n_shifts: int = 1,
    inner: str | Callable[[int], AdaptivePolicy] = "sign_estimation",
    inner_knobs: Mapping[str, Any] | None = None,
    base: str | BaseLosses | None = None,
    base_mean: float | np.ndarray | None = None,
) -> PolicyAdversary:
    """Theorem 5.1 block-restart adversary (Asi-Raman-Saha), see :class:`BlockRestartPolicy`.

    Knobs:
        n_shifts: S >= 0 block boundaries (S+1 blocks of ``floor(T/(S+1))`` rounds, needs
            S+1 <= T); the adversary's ``default_switches`` is S.
        inner: the per-block adversary: the name of another adaptive family (default
            ``"sign_estimation"``, the static adaptive lower bound (Asi et al. 2023) Theorem 5.1
            plugs in), built each block as ``family(N, block_length, **inner_knobs)``; or a
            callable ``inner(block) -> AdaptivePolicy`` returning a fresh policy per block, run on
            ``base``/``base_mean`` (default Bernoulli(0.5)).
        inner_knobs: keyword knobs of the inner family (only with a family name).
        base, base_mean: the base datum for a callable ``inner`` (as in :class:`PolicyAdversary`).

    The theorem's conditions (N >= 2T/(S+1), eps <= 1, delta <= (S+1)^3/T^3) are not enforced.
    """
    n_experts = check_int("n_experts", n_experts, minimum=1)
    horizon = check_int("horizon", horizon, minimum=1)
    n_shifts = check_int("n_shifts", n_shifts, minimum=0, maximum=horizon - 1)
    if isinstance(inner, str):
        allowed = [f for f in families("adaptive") if f != "block_restart"]
        check_choice("inner", inner, allowed)
        if base is not None or base_mean is not None:
            raise ValueError(
                "base/base_mean apply only to a callable inner policy; pass the inner family's "
                "base knobs in inner_knobs"
            )
        if inner_knobs is not None and not isinstance(inner_knobs, Mapping):
            raise TypeError(f"inner_knobs must be a dict, got {type(inner_knobs).__name__}")
        build: Callable[[int, int], PolicyAdversary] = _FamilyBlocks(
            inner, n_experts, dict(inner_knobs or {})
        )
    elif callable(inner):
        if inner_knobs is not None:
            raise ValueError("inner_knobs applies only when inner is a family name")
        base_spec = "bernoulli" if base is None else base
        _make_base(base_spec, n_experts, base_mean)  # validate now, not at the first block
        build = _CallableBlocks(inner, n_experts, base_spec, base_mean)
    else:
        raise TypeError(
            "inner must be an adaptive family name or a callable inner(block) -> AdaptivePolicy; "
            f"got {type(inner).__name__}"
        )
    # Build the first block once so bad inner knobs fail here, not in the middle of a game.
    build(0, horizon // (n_shifts + 1))
    policy = BlockRestartPolicy(n_shifts, build)
    return PolicyAdversary(n_experts, horizon, policy=policy, base=_BlockBase(policy))
