"""Adaptive lower-bound constructions: sign estimation, the hidden sign vector, block restart.

The ``sign_estimation`` and ``hidden_sign_vector`` families (Asi, Feldman, Koren & Talwar,
Section 4 and Appendix C) and the ``block_restart`` family (Asi, Raman & Saha, Theorem 5.1),
each a :class:`~dp_experts_env.adversaries.adaptive.framework.PolicyAdversary`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import check_choice, check_epsilon, check_float, check_int
from dp_experts_env.adversaries.adaptive.framework import (
    ActionHistory,
    AdaptivePolicy,
    BaseLosses,
    PolicyAdversary,
    PolicyAdversaryParams,
    make_base,
)
from dp_experts_env.adversaries.params import FamilyParams
from dp_experts_env.adversaries.registry import families, family_factory, register_family
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "SignEstimationPolicy",
    "BlockRestartPolicy",
    "SignEstimationParams",
    "HiddenSignVectorParams",
    "BlockRestartParams",
    "sign_estimation",
    "hidden_sign_vector",
    "block_restart",
]


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
    +1 for odd e), 1 for leftover experts, during the hard phase; 0 after it. X, the dataset of
    the lower-bound argument, is drawn at reset from the DATA stream: consensus columns with a
    uniform sign plus ``n_fingerprint`` columns whose entries are +1 with a per-column bias from
    the truncated arcsine law. Memory O(B (N + n_users n_fingerprint)).
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

    Asi, Feldman, Koren & Talwar, Theorems 9-10, 0-indexed (E-AFKT-17): expert ``e`` is column
    ``e // 2`` with sign -1 (even e) or +1 (odd e). A column is burned, with the sign played,
    the first time the learner plays one of its experts. During the hard phase
    ``l_t(e) = 1`` on burned columns, else the datum; after it, the datum (0). Memory O(B p).
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


class BlockRestartPolicy(AdaptivePolicy):
    """Asi-Raman-Saha Theorem 5.1 skeleton (E-ARS-19): S+1 blocks, a fresh inner game per block.

    Blocks of ``T' = floor(T / (S+1))`` rounds, the last one also taking the leftover rounds (a
    choice: the theorem assumes (S+1) | T). Each block starts a fresh inner
    :class:`PolicyAdversary` from ``inner(block)``, which sees in-block actions only on a local
    clock and draws from the outer game's streams; its datum is the block's (a neighbour still
    replaces one round's datum). ``default_switches = S``.
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


def _default_users(p: int) -> int:
    # Theorem 15 quoted in Asi et al. 2023, App. C.1: p = 1000 m^2, n = m / log m; guarded.
    m = math.sqrt(p / 1000.0)
    return max(1, math.floor(m / math.log(m))) if m > math.e else 1


@register_family("adaptive", "sign_estimation", SignEstimationParams)
def sign_estimation(
    n_experts: int,
    horizon: int,
    params: SignEstimationParams | None = None,
    **knobs: Any,
) -> PolicyAdversary:
    """Sign-estimation adversary of Theorem 9 (Asi et al. 2023), approximate-DP LB.

    ``p = floor(N/2)`` columns (:class:`SignEstimationPolicy`); an odd leftover expert has loss
    1 during the hard phase (E-AFKT-22). When ``p - n_fingerprint > T_hard`` an untouched
    consensus column keeps loss 0, so the regret is the learner's total loss.

    Knobs (:class:`SignEstimationParams`, or keywords):
        n_users: n, rows of X (None: ``floor(m / ln m)``, ``m = sqrt(p / 1000)``, at least 1:
            Theorem 15's ``p = 1000 m^2``, ``n = m / log m``).
        fingerprint_fraction: share of fingerprinting columns, rounded up (erratum E-AFKT-19).
        hard_rounds: T_hard (None: ``min(T, floor(0.9 p))``, at least 1; <= min(T, p)).
        epsilon: optional learner epsilon; caps T_hard at the largest T0 with
            ``200 sqrt(T0) ln T0 <= 1/epsilon`` (the theorem's larger-eps extension; T0 is tiny
            unless epsilon is very small).

    The user schedule is round-robin over a random permutation (erratum E-AFKT-20).
    """
    knob = SignEstimationParams.resolve(params, knobs)
    n_experts = check_int("n_experts", n_experts, minimum=2)
    p = n_experts // 2
    users = (
        _default_users(p) if knob.n_users is None else check_int("n_users", knob.n_users, minimum=1)
    )
    frac = check_float("fingerprint_fraction", knob.fingerprint_fraction, minimum=0.0, maximum=1.0)
    return _sign_game(n_experts, horizon, users, frac, knob.hard_rounds, knob.epsilon)


@register_family("adaptive", "hidden_sign_vector", HiddenSignVectorParams)
def hidden_sign_vector(
    n_experts: int,
    horizon: int,
    params: HiddenSignVectorParams | None = None,
    **knobs: Any,
) -> PolicyAdversary:
    """Pure-DP hidden-sign-vector adversary of Theorem 10 (Asi et al. 2023).

    The sign-estimation game on an all-consensus matrix (a hidden sign vector c uniform in
    {-1, +1}^p): ``l_t(j, sigma) = 1`` if column j is burned else ``1{sigma != c_j}`` during the
    hard phase, 0 after. Knobs ``hard_rounds`` and ``epsilon`` as in :func:`sign_estimation`.
    """
    p = HiddenSignVectorParams.resolve(params, knobs)
    return _sign_game(n_experts, horizon, 1, 0.0, p.hard_rounds, p.epsilon)


class _FamilyBlocks:
    """Builds each block's adversary from a family name (a class, not a closure: it pickles)."""

    def __init__(self, family: str, n_experts: int, knobs: dict[str, Any]) -> None:
        self.family = family
        self.n_experts = n_experts
        self.knobs = knobs

    def __call__(self, block: int, length: int) -> PolicyAdversary:
        return family_factory("adaptive", self.family)(self.n_experts, length, **self.knobs)


class _CallableBlocks:
    """Builds each block's adversary from a user's ``inner(block) -> AdaptivePolicy``."""

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
    params: BlockRestartParams | None = None,
    **knobs: Any,
) -> PolicyAdversary:
    """Theorem 5.1 block-restart adversary (Asi-Raman-Saha), see :class:`BlockRestartPolicy`.

    Knobs (:class:`BlockRestartParams`, which holds the defaults, or keywords):
        n_shifts: S >= 0 block boundaries (needs S+1 <= T).
        inner: another adaptive family's name (default ``"sign_estimation"``, the static lower
            bound Theorem 5.1 plugs in), built per block as
            ``family(N, block_length, **inner_knobs)``; or a callable
            ``inner(block) -> AdaptivePolicy`` run on ``base``/``base_mean``.
        inner_knobs: keyword knobs of the inner family (only with a family name).
        base, base_mean: the base datum for a callable ``inner`` (as in :class:`PolicyAdversary`).

    The theorem's conditions (N >= 2T/(S+1), eps <= 1, delta <= (S+1)^3/T^3) are not enforced.
    """
    p = BlockRestartParams.resolve(params, knobs)
    inner, inner_knobs, base, base_mean = p.inner, p.inner_knobs, p.base, p.base_mean
    n_experts = check_int("n_experts", n_experts, minimum=1)
    horizon = check_int("horizon", horizon, minimum=1)
    n_shifts = check_int("n_shifts", p.n_shifts, minimum=0, maximum=horizon - 1)
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
        base_spec = PolicyAdversaryParams.base if base is None else base
        make_base(base_spec, n_experts, base_mean)  # validate now, not at the first block
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
