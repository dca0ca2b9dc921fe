"""The batched game core shared by the single and the vector environments.

:class:`GameCore` plays B runs in lockstep with no Python loop over runs (docs/environments.md,
"Protocol", "Block steps", "Shared loss streams"). Round t's data is fetched before the round-t
action is read; ``copies``, blocks and ``info=False`` change no value.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env.adversaries import Adversary, Neighbor, Round
from dp_experts_env.regret import RegretTracker, regret_cost

__all__ = [
    "GameCore",
    "INFO_KEYS",
    "MEANS_KEYS",
    "RoundBlock",
    "SEGMENT_KEYS",
    "SLOW_REGRET_SECONDS",
    "SharedStreamError",
    "SlowRegretWarning",
]

#: Keys of every step's ``info``, in order.
INFO_KEYS = (
    "round",
    "loss",
    "cumulative_loss",
    "static_regret",
    "dynamic_regret",
    "per_round_best_regret",
)
#: Added when the adversary knows its means (full information: the last one only).
MEANS_KEYS = ("static_pseudo_regret", "per_round_best_pseudo_regret")
#: Added when the adversary has stationary segments.
SEGMENT_KEYS = ("segment", "shift")

# Bare ufunc reductions: ndarray.min/max's wrappers cost more than the reduction at small B.
_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce


def _held(array: np.ndarray) -> int:
    """Bytes of memory an array spans: a broadcast view (a zero stride) spans its base only."""
    if 0 in array.strides and array.size:
        low, high = np.lib.array_utils.byte_bounds(array)
        return int(high - low)
    return int(array.nbytes)


#: CPU seconds of exact-comparator work above which building a core warns (SlowRegretWarning).
SLOW_REGRET_SECONDS = 600.0


class SlowRegretWarning(UserWarning):
    """The exact S-switch comparator will dominate the episode's time (estimate)."""


class SharedStreamError(ValueError):
    """``copies`` > 1 or blocks were asked of an adversary that reacts to the actions."""


@dataclass
class RoundBlock:
    """The data of K consecutive rounds of every stream (fresh arrays the caller may keep).

    Attributes:
        start: the 1-indexed round of ``losses[0]``.
        losses: (K, streams, D) losses (D = N experts, or K arms for bandit envs).
        means: (K, streams, D) expected losses, when the adversary knows them.
        advice: (K, streams, N, arms) advice (bandit envs).
        segment: (K, streams) segment indices, when the adversary has segments.
        shift: (K, streams) shift flags, when the adversary has segments.
    """

    start: int
    losses: np.ndarray
    means: np.ndarray | None = None
    advice: np.ndarray | None = None
    segment: np.ndarray | None = None
    shift: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.losses.shape[0])

    def round(self, k: int) -> Round:
        """Round ``start + k`` as the adversary gave it (views of the block's arrays)."""

        def pick(x: np.ndarray | None) -> np.ndarray | None:
            return None if x is None else x[k]

        return Round(
            self.losses[k],
            pick(self.means),
            pick(self.advice),
            pick(self.segment),
            pick(self.shift),
        )


class GameCore:
    """B runs of one experts game, stepped together.

    Args:
        adversary: the loss model (owned by the core from now on).
        n_switches: the comparator's switch budget S for ``dynamic_regret``.
        num_runs: B.
        copies: runs per loss stream (default 1); with C > 1 the adversary plays B / C streams
            and run ``r`` plays stream ``r % (B / C)``; it must be oblivious.
        dynamic_regret: False drops the exact S-switch table (``dynamic_regret`` is NaN).
        dynamic_is_static: a replay with S defaulted to 0 (``info`` says so).

    Raises:
        ValueError: the S-switch table would not fit in memory (names ``n_switches`` and
            ``n_experts``; see :func:`~dp_experts_env.regret.regret_cost`).

    Warns:
        SlowRegretWarning: the exact comparator alone is estimated to take more than
            :data:`SLOW_REGRET_SECONDS` CPU seconds over the episode.
    """

    def __init__(
        self,
        adversary: Adversary,
        n_switches: int,
        num_runs: int,
        copies: int = 1,
        dynamic_regret: bool = True,
        dynamic_is_static: bool = False,
    ) -> None:
        if not isinstance(adversary, Adversary):
            raise TypeError(f"adversary must be an Adversary, got {type(adversary).__name__}")
        self.adversary = adversary
        self.num_runs = int(num_runs)
        self.copies = int(copies)
        if self.copies < 1 or self.num_runs % self.copies:
            raise ValueError(
                f"copies must be a positive divisor of num_envs ({self.num_runs}), got {copies}"
            )
        if self.copies > 1 and not adversary.oblivious:
            raise SharedStreamError(
                f"copies={self.copies} shares one loss stream between several runs, which needs "
                f"an oblivious adversary; {type(adversary).__name__} reacts to the actions played"
            )
        self.num_streams = self.num_runs // self.copies
        self.n_experts = adversary.n_experts
        self.horizon = adversary.horizon
        self.n_arms = adversary.n_arms
        self.feedback = adversary.feedback
        self.n_switches = int(n_switches)
        #: a replay with S defaulted to 0: ``info["dynamic_regret_is_static"]`` says so
        self.dynamic_is_static = bool(dynamic_is_static)
        bandit = self.feedback == "bandit"
        self.regret_cost = regret_cost(
            self.num_streams, self.n_experts, self.n_switches, self.horizon, dynamic_regret
        )
        self.tracker = RegretTracker(
            self.num_runs,
            self.n_experts,
            self.n_switches,
            self.horizon,
            copies=self.copies,
            static_pseudo=bandit,
            dynamic=dynamic_regret,
        )
        if self.regret_cost.seconds > SLOW_REGRET_SECONDS:
            cost = self.regret_cost
            warnings.warn(
                f"the exact S-switch regret (n_switches={self.n_switches}, n_experts="
                f"{self.n_experts}, {self.num_streams} stream(s), T={self.horizon}) updates "
                f"{cost.entry_updates:.3g} table entries, about {cost.seconds:.0f} CPU s; "
                "dynamic_regret=False skips it",
                SlowRegretWarning,
                stacklevel=2,
            )
        self.n_actions = self.n_arms if bandit else self.n_experts
        streams, n = self.num_streams, self.n_experts
        # Run r's row in the adversary's (streams, ...) arrays; arange(B) without copies.
        self._rows = np.tile(np.arange(streams), self.copies)
        self.identity_advice = self.feedback == "bandit" and bool(
            getattr(adversary, "identity_advice", False)
        )
        self._flat_identity: np.ndarray | None = None
        if self.identity_advice:
            if self.n_experts != self.n_arms:
                raise ValueError(
                    f"identity advice needs n_experts == n_arms, got {self.n_experts} and "
                    f"{self.n_arms}"
                )
        elif self.feedback == "bandit":
            # Scratch for <advice_j, l_t>: rounding depends on K only (batches equal single runs).
            self._product = np.empty((streams, n, self.n_arms))
            self._expert_losses = np.empty((streams, n))
            self._expert_means = np.empty((streams, n))
        self._round: Round | None = None
        self._block: RoundBlock | None = None
        self.t = 0
        self.started = False

    def reset(self, seeds: list[int], neighbor: Neighbor | dict | None = None) -> Any:
        """Start the games (stream s from ``seeds[s]``) and return the batched first observation.

        ``neighbor`` replaces one round's datum in every run (validated by the adversary).
        """
        if len(seeds) != self.num_streams:
            what = "seeds" if self.copies == 1 else f"seeds (one per stream, copies={self.copies})"
            raise ValueError(f"{what} must hold {self.num_streams} seeds, got {len(seeds)}")
        self.adversary.reset(seeds, neighbor)
        self.tracker.reset()
        self._block = None
        self.t = 0
        self.started = True
        self._round = self.adversary.next_round()
        b = self.num_runs
        if self.feedback == "bandit":
            return {
                "advice": self._advice_obs(self._round),
                "last_action": np.zeros(b, dtype=np.int64),
                "last_loss": np.zeros((b, 1)),
            }
        return np.zeros((b, self.n_experts))

    @property
    def done(self) -> bool:
        """True once all T rounds were played (or before the first reset)."""
        return not self.started or self.t >= self.horizon

    def check_actions(self, actions: Any) -> np.ndarray:
        """Validate a batch of B actions; returns them as an int64 array."""
        arr = np.asarray(actions)
        hi = self.n_actions - 1
        if arr.dtype.kind not in "iu" or arr.shape != (self.num_runs,):
            raise ValueError(
                f"action must be an integer array of shape ({self.num_runs},) with values in "
                f"[0, {hi}]; got dtype {arr.dtype} and shape {arr.shape}"
            )
        if _min_reduce(arr) < 0 or _max_reduce(arr) > hi:
            bad = int(np.argmax((arr < 0) | (arr > hi)))
            what = "arms" if self.feedback == "bandit" else "experts"
            raise ValueError(
                f"action must lie in [0, {hi}] ({self.n_actions} {what}); got {arr[bad]} for run "
                f"{bad}"
            )
        return arr.astype(np.int64, copy=False)

    def step(
        self, actions: Any, info: bool = True
    ) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
        """Play the current round with ``actions`` (B,).

        Args:
            actions: (B,) integer actions.
            info: False skips building ``info`` (an empty dict); the regret is updated all the same.

        Returns:
            (observation batch, charged losses (B,), info dict of (B,) arrays), fresh arrays the
            caller may keep.
        """
        self._check_live()
        a = self.check_actions(actions)
        rnd = self._round
        assert rnd is not None
        charged = rnd.losses[self._rows, a]  # fancy indexing: a fresh array
        self._update_regret(rnd, a, charged)
        self.t += 1
        # Copied before the next fetch, which may reuse the adversary's buffers.
        info_dict = self._info(rnd, charged) if info else {}
        full_obs = None if self.feedback == "bandit" else self._loss_obs(rnd.losses)
        if self.copies == 1:
            # Oblivious adversaries ignore actions; shared streams are oblivious by construction.
            self.adversary.record(a)
        # Fetched after record(): round t+1 may depend on actions 1..t, never on its own.
        self._round = self.adversary.next_round() if self.t < self.horizon else None
        if self.feedback == "bandit":
            obs: Any = {
                "advice": self._advice_obs(self._round),
                "last_action": a.copy(),
                "last_loss": charged[:, None].copy(),
            }
        else:
            obs = full_obs
        return obs, charged, info_dict

    def step_one(self, action: int) -> tuple[Any, float, dict[str, Any]]:
        """:meth:`step` for B = 1 with a validated action: the same values as Python scalars."""
        self._check_live()
        if self.num_runs != 1:
            raise RuntimeError(f"step_one needs a core with one run, this one has {self.num_runs}")
        a = np.array([action], dtype=np.int64)
        rnd = self._round
        assert rnd is not None
        # A view equal to ``step``'s copy, read before the next fetch may reuse the buffer.
        charged = rnd.losses[:, action]
        self._update_regret(rnd, action, charged)
        self.t += 1
        loss = charged.item(0)
        info = self._info_one(rnd, loss)
        bandit = self.feedback == "bandit"
        full_obs = None if bandit else np.array(rnd.losses[0], dtype=np.float64)
        last_loss = charged.copy() if bandit else None
        self.adversary.record(a)
        self._round = self.adversary.next_round() if self.t < self.horizon else None
        if bandit:
            advice = self._advice_obs(self._round)[0]
            obs: Any = {
                # A single env returns fresh arrays (check_env asks it of constants too).
                "advice": advice.copy() if self.identity_advice else advice,
                "last_action": np.int64(action),
                "last_loss": last_loss,
            }
        else:
            obs = full_obs
        return obs, loss, info

    @property
    def supports_blocks(self) -> bool:
        """True when the losses ignore the actions, so K rounds can be fetched before playing."""
        return bool(self.adversary.oblivious)

    def next_block(self, k: int) -> RoundBlock:
        """Fetch the data of the next ``min(k, T - t)`` rounds (the current one first).

        The same floats as K single steps; call :meth:`step_block` next (single steps are refused
        until then).

        Raises:
            SharedStreamError: the adversary reacts to the actions (no blocks then).
            RuntimeError: a block is already pending, or the episode is over.
        """
        self._check_live()
        if not self.supports_blocks:
            raise SharedStreamError(
                f"{type(self.adversary).__name__} reacts to the actions played: its rounds "
                "cannot be fetched ahead of the actions (play it with step())"
            )
        if self._block is not None:
            raise RuntimeError("a block is pending: play it with step_block() first")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k (rounds per block) must be a positive integer, got {k!r}")
        k = min(int(k), self.horizon - self.t)
        first = self._round
        assert first is not None

        def alloc(x: np.ndarray | None, dtype: Any = np.float64) -> np.ndarray | None:
            return None if x is None else np.empty((k, *np.shape(x)), dtype=dtype)

        block = RoundBlock(
            self.t + 1,
            alloc(first.losses),
            alloc(first.means),
            alloc(first.advice),
            alloc(first.segment, np.int64),
            alloc(first.shift, bool),
        )
        names = ("losses", "means", "advice", "segment", "shift")
        # The rounds after the current one: at once where the adversary has a block form.
        rest = self.adversary.next_rounds(k - 1) if k > 1 else None
        for i in range(k if rest is None else 1):
            rnd = self.adversary.next_round() if i else first
            # Copied at once: the next fetch may reuse the adversary's buffers.
            for name in names:
                target = getattr(block, name)
                if target is not None:
                    target[i] = getattr(rnd, name)
        if rest is not None:
            for name in names:
                target = getattr(block, name)
                if target is not None:
                    target[1:] = getattr(rest, name)
        self._round = None
        self._block = block
        return block

    def step_block(
        self, actions: Any, info: bool = True
    ) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
        """Play the pending block with (K, B) actions: K :meth:`step` calls, bit for bit.

        Args:
            actions: (K, B) integer actions, row k for round ``block.start + k``.
            info: True builds the ``info`` of the block's last round.

        Returns:
            (the observation after the last round, charged losses (K, B), info).
        """
        block = self._block
        if block is None:
            raise RuntimeError("no block is pending: call next_block(k) first")
        k = len(block)
        arr = np.asarray(actions)
        if arr.shape != (k, self.num_runs):
            raise ValueError(
                f"actions must have shape ({k}, {self.num_runs}) (one row per round of the "
                f"block), got {arr.shape}"
            )
        hi = self.n_actions - 1
        if arr.dtype.kind not in "iu" or (
            arr.size and (_min_reduce(arr, axis=None) < 0 or _max_reduce(arr, axis=None) > hi)
        ):
            # Name the first bad round's problem as step() would.
            for row in arr:
                self.check_actions(row)
        a = arr.astype(np.int64, copy=False)
        # Run r's loss of its action, row by row: (K, B) straight from the (K, streams, D) block.
        picks = (np.arange(k)[:, None], self._rows[None, :], a)
        charged = block.losses[picks]
        if self.feedback == "full" and not self.adversary.knows_means:
            # Experts' losses are the losses: the tracker takes the whole block at once.
            self.tracker.update_block(block.losses, charged)
        elif self.feedback == "full":
            means = block.means
            assert means is not None
            learner_mean = means[picks]
            self.tracker.update_block(block.losses, charged, means, learner_mean)
        else:
            self._update_regret_block(block, picks, charged)
        self.t += k
        self._block = None
        last = block.round(k - 1)
        info_dict = self._info(last, charged[-1].copy()) if info else {}
        full_obs = None if self.feedback == "bandit" else self._loss_obs(block.losses[-1])
        self._round = self.adversary.next_round() if self.t < self.horizon else None
        if self.feedback == "bandit":
            obs: Any = {
                "advice": self._advice_obs(self._round),
                "last_action": a[-1].copy(),
                "last_loss": charged[-1][:, None].copy(),
            }
        else:
            obs = full_obs
        return obs, charged, info_dict

    def _check_live(self) -> None:
        if self.done:
            raise RuntimeError(
                "the episode is over (all rounds played) or never started; call reset()"
            )
        if self._block is not None:
            raise RuntimeError("a block is pending: play it with step_block() first")

    def _loss_obs(self, losses: np.ndarray) -> np.ndarray:
        """Fresh (B, N) full-information observation: each run's stream's loss vector."""
        if self.copies == 1:
            return np.array(losses, dtype=np.float64)
        return np.tile(np.asarray(losses, dtype=np.float64), (self.copies, 1))

    def _update_regret(self, rnd: Round, a: np.ndarray | int, charged: np.ndarray) -> None:
        # ``a``: (B,) actions, or at B = 1 an int (a column view): the same ``means[:, a]``.
        means = rnd.means if self.adversary.knows_means else None
        if self.identity_advice:
            # Expert j is arm j: <e_j, l_t> is l_t(j) exactly (1 * l and zeros add nothing).
            expert_losses = rnd.losses
            expert_means = means
        elif self.feedback == "bandit":
            advice = rnd.advice
            if advice is None:
                raise RuntimeError("a bandit adversary must give advice every round")
            np.multiply(advice, rnd.losses[:, None, :], out=self._product)
            np.sum(self._product, axis=2, out=self._expert_losses)
            expert_losses = self._expert_losses
            expert_means = None
            if means is not None:
                np.multiply(advice, means[:, None, :], out=self._product)
                np.sum(self._product, axis=2, out=self._expert_means)
                expert_means = self._expert_means
        else:
            expert_losses = rnd.losses
            expert_means = means
        learner_mean = (
            None if means is None else (means[:, a] if isinstance(a, int) else means[self._rows, a])
        )
        if self.adversary.knows_means and means is None:
            raise RuntimeError(
                f"{type(self.adversary).__name__} declares knows_means but gave no means"
            )
        self.tracker.update(expert_losses, charged, expert_means, learner_mean)

    def _update_regret_block(
        self, block: RoundBlock, picks: tuple[np.ndarray, ...], charged: np.ndarray
    ) -> None:
        """:meth:`_update_regret` of every round of a bandit block, at once (bit for bit).

        ``<advice_j, l_t>``'s rounding depends on the number of arms only, never on leading axes.
        """
        means = block.means if self.adversary.knows_means else None
        if self.adversary.knows_means and means is None:
            raise RuntimeError(
                f"{type(self.adversary).__name__} declares knows_means but gave no means"
            )
        if self.identity_advice:
            expert_losses = block.losses
            expert_means = means
        else:
            advice = block.advice
            if advice is None:
                raise RuntimeError("a bandit adversary must give advice every round")
            product = np.multiply(advice, block.losses[:, :, None, :])
            expert_losses = np.sum(product, axis=3)
            expert_means = None
            if means is not None:
                np.multiply(advice, means[:, :, None, :], out=product)
                expert_means = np.sum(product, axis=3)
        learner_mean = None if means is None else means[picks]
        self.tracker.update_block(expert_losses, charged, expert_means, learner_mean)

    def _advice_obs(self, rnd: Round | None) -> np.ndarray:
        """Flattened advice (B, N*K) of the round about to be played (zeros after the last)."""
        b, size = self.num_runs, self.n_experts * self.n_arms
        if self.identity_advice:
            # A read-only view of one flattened identity made once: O(1) per round, not O(B K^2).
            if rnd is None:
                return np.broadcast_to(np.zeros(size), (b, size))
            if self._flat_identity is None:
                flat = np.eye(self.n_arms).reshape(size)
                flat.setflags(write=False)
                self._flat_identity = flat
            return np.broadcast_to(self._flat_identity, (b, size))
        if rnd is None:
            return np.zeros((b, size))
        if rnd.advice is None:
            raise RuntimeError("a bandit adversary must give advice every round")
        advice = np.array(rnd.advice, dtype=np.float64).reshape(self.num_streams, size)
        return advice if self.copies == 1 else np.tile(advice, (self.copies, 1))

    def _per_run(self, per_stream: np.ndarray) -> np.ndarray:
        """A (streams,) array as (B,): each run gets its stream's value (a fresh array)."""
        return per_stream if self.copies == 1 else np.tile(per_stream, self.copies)

    def _info(self, rnd: Round, charged: np.ndarray) -> dict[str, np.ndarray]:
        tr = self.tracker
        rounds = np.empty(self.num_runs, dtype=np.int64)
        rounds.fill(self.t)  # np.full without its Python layer
        info = {
            "round": rounds,
            "loss": charged.copy(),
            "cumulative_loss": tr.cumulative_loss.copy(),
            "static_regret": tr.static_regret,
            "dynamic_regret": tr.dynamic_regret,
            "per_round_best_regret": tr.per_round_best_regret,
        }
        if self.adversary.knows_means:
            if tr.static_pseudo:
                info["static_pseudo_regret"] = tr.static_pseudo_regret
            info["per_round_best_pseudo_regret"] = tr.per_round_best_pseudo_regret
        if self.adversary.has_segments:
            if rnd.segment is None or rnd.shift is None:
                raise RuntimeError(
                    f"{type(self.adversary).__name__} declares has_segments but gave no "
                    "segment/shift"
                )
            info["segment"] = self._per_run(np.array(rnd.segment, dtype=np.int64))
            info["shift"] = self._per_run(np.array(rnd.shift, dtype=bool))
        if self.dynamic_is_static:
            info["dynamic_regret_is_static"] = np.ones(self.num_runs, dtype=bool)
        return info

    def _info_one(self, rnd: Round, loss: float) -> dict[str, Any]:
        """``_info`` of a one-run core as Python scalars (each value ``v[0].item()``)."""
        tr = self.tracker
        cumulative, static, dynamic, per_round_best = tr.run_values(0)
        info: dict[str, Any] = {
            "round": self.t,
            "loss": loss,
            "cumulative_loss": cumulative,
            "static_regret": static,
            "dynamic_regret": dynamic,
            "per_round_best_regret": per_round_best,
        }
        if self.adversary.knows_means:
            per_round = tr.per_round_best_pseudo_regret
            if per_round is None:
                raise RuntimeError(
                    f"{type(self.adversary).__name__} declares knows_means but gave no means"
                )
            if tr.static_pseudo:
                info["static_pseudo_regret"] = tr.static_pseudo_regret.item(0)
            info["per_round_best_pseudo_regret"] = per_round.item(0)
        if self.adversary.has_segments:
            if rnd.segment is None or rnd.shift is None:
                raise RuntimeError(
                    f"{type(self.adversary).__name__} declares has_segments but gave no "
                    "segment/shift"
                )
            info["segment"] = int(rnd.segment[0])
            info["shift"] = bool(rnd.shift[0])
        if self.dynamic_is_static:
            info["dynamic_regret_is_static"] = True
        return info

    def state_nbytes(self) -> int:
        """Bytes held in arrays by the core, its adversary and its tracker (independent of T)."""
        own = sum(_held(v) for v in vars(self).values() if isinstance(v, np.ndarray))
        rnd = self._round
        if rnd is not None:
            own += sum(
                _held(x)
                for x in (rnd.losses, rnd.means, rnd.advice, rnd.segment, rnd.shift)
                if isinstance(x, np.ndarray)
            )
        return int(own + self.adversary.state_nbytes() + self.tracker.state_nbytes())
