"""Exact, batched, online regret bookkeeping: prefix regrets after round ``t`` of B runs at once.

The regrets are defined in docs/environments.md, "info", the comparator's cost in "Large S and N".
The dynamic programme keeps ``M[b, c, j]`` = least loss of a sequence ending at expert ``j`` with
at most ``c`` switches (none when S >= T - 1). With ``copies`` > 1, run ``r`` plays stream
``r % streams``, whose expert-only state is kept once, with the same floats as a lone tracker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._jit import jit_enabled
from dp_experts_env._regret_kernel import compiled_update, table_block
from dp_experts_env._validation import check_int
from dp_experts_env.fixed_order import accumulate

__all__ = ["RegretCost", "RegretTracker", "regret_cost", "table_memory_limit"]

#: CPU seconds per table entry and round, compiled (docs/environments.md). Estimates only.
_SECONDS_PER_ENTRY = 1.5e-9


@dataclass(frozen=True)
class RegretCost:
    """What the exact S-switch comparator of an episode costs, stated before it starts.

    Attributes:
        table_bytes: memory of the switch table (``streams * S * N`` doubles; 0 without it).
        entry_updates: table entries updated over the episode (``T * streams * (S + 1) * N``).
        seconds: a rough CPU-time estimate of those updates (compiled path).
    """

    table_bytes: int
    entry_updates: int
    seconds: float


def regret_cost(
    num_streams: int, n_experts: int, n_switches: int, horizon: int, dynamic: bool = True
) -> RegretCost:
    """The cost of a tracker's exact S-switch comparator (see :class:`RegretCost`)."""
    unconstrained = n_switches >= horizon - 1
    levels = 0 if (unconstrained or not dynamic) else n_switches
    entries = num_streams * (levels + 1) * n_experts
    updates = horizon * entries
    return RegretCost(num_streams * levels * n_experts * 8, updates, updates * _SECONDS_PER_ENTRY)


def table_memory_limit() -> int:
    """Bytes a switch table may take: ``DP_EXPERTS_MAX_TABLE_BYTES``, else half the free memory."""
    override = os.environ.get("DP_EXPERTS_MAX_TABLE_BYTES")
    if override:
        return int(float(override))
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return 1 << 32
    return int(free // 2)


# The ufunc reduction itself: ndarray.min's values without its Python wrappers (costly at B = 1).
_min_reduce = np.minimum.reduce


class RegretTracker:
    """Online regret of B runs against N experts with a comparator switch budget S.

    Args:
        num_runs: B, the number of independent runs tracked together.
        n_experts: N.
        n_switches: S, the most switches the dynamic comparator may make.
        horizon: T, used only to skip the table when S >= T - 1 (optional).
        copies: runs per loss stream (a divisor of ``num_runs``); the experts' arrays given to
            :meth:`update` have one row per stream.
        static_pseudo: keep ``static_pseudo_regret`` (``None`` when False).
        dynamic: keep the exact S-switch table; False: ``dynamic_regret`` and
            ``comparator_loss`` are NaN, memory and time O(B N).

    Raises:
        ValueError: the switch table would not fit in memory (:func:`table_memory_limit`).
    """

    def __init__(
        self,
        num_runs: int,
        n_experts: int,
        n_switches: int,
        horizon: int | None = None,
        copies: int = 1,
        static_pseudo: bool = True,
        dynamic: bool = True,
    ) -> None:
        self.num_runs = check_int("num_runs", num_runs, minimum=1)
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        self.horizon = None if horizon is None else check_int("horizon", horizon, minimum=1)
        self.copies = check_int("copies", copies, minimum=1)
        if self.num_runs % self.copies:
            raise ValueError(
                f"num_runs ({self.num_runs}) must be a multiple of copies ({self.copies})"
            )
        self.num_streams = self.num_runs // self.copies
        if not isinstance(static_pseudo, bool):
            raise TypeError(f"static_pseudo must be True or False, got {static_pseudo!r}")
        self.static_pseudo = static_pseudo
        if not isinstance(dynamic, bool):
            raise TypeError(f"dynamic_regret must be True or False, got {dynamic!r}")
        self.dynamic = dynamic
        self._unconstrained = self.horizon is not None and self.n_switches >= self.horizon - 1
        self._check_fits()
        self._compiled = self._choose_kernel()
        self.reset()

    @property
    def _levels(self) -> int:
        """Levels 1..S kept in the table (none when unconstrained or without the table)."""
        return 0 if (self._unconstrained or not self.dynamic) else self.n_switches

    def _check_fits(self) -> None:
        need = self.num_streams * self._levels * self.n_experts * 8
        limit = table_memory_limit()
        if need > limit:
            raise ValueError(
                f"the exact S-switch regret table for n_switches={self.n_switches}, "
                f"n_experts={self.n_experts} and {self.num_streams} loss stream(s) needs "
                f"{need / 2**30:.2f} GiB (streams x n_switches x n_experts doubles), more than "
                f"the {limit / 2**30:.2f} GiB allowed (half the free memory, or "
                "DP_EXPERTS_MAX_TABLE_BYTES); lower n_switches or n_experts, play fewer runs "
                "per env, or pass dynamic_regret=False (no dynamic regret, O(N) per run)"
            )

    def _choose_kernel(self) -> Any:
        """The compiled update for large tables when numba is installed (else None: numpy)."""
        return compiled_update(self.num_streams * (self._levels + 1) * self.n_experts)

    def reset(self) -> None:
        """Forget all rounds."""
        b, n = self.num_streams, self.n_experts
        self.round = 0
        self.cumulative_loss = np.zeros(self.num_runs)
        self._per_round_best = np.zeros(b)
        self._pseudo = np.zeros(self.num_runs)  # per-round-best pseudo-regret
        # Per stream: the experts' means only (empty unless static_pseudo).
        self._learner_mean_sum = np.zeros(self.num_runs if self.static_pseudo else 0)
        self._expert_mean_sum = np.zeros((b, n) if self.static_pseudo else (b, 0))
        self._has_means = False
        levels = self._levels
        # Free the old table first: a reset must not hold two (regret_cost states one).
        self._table = self._cum_expert = None
        self._cum_expert = np.zeros((b, n))  # row c = 0 of the table: fixed-expert losses
        # Levels 1..S contiguous apart from level 0: in-place ops on a strided view are slower.
        self._table = np.zeros((b, levels, n))
        # Per-level minima (column 0: fixed-expert sums), once a round; the flag: still current.
        self._scratch = np.zeros((b, levels + 1))  # all zero: the minima of the empty game
        self._best_current = True
        self._make_views()

    _VIEWS = ("_best_fixed", "_best_levels", "_best_below", "_compiled")

    def _make_views(self) -> None:
        # Views made once, not every round (their creation dominates at B = 1).
        self._best_fixed = self._scratch[:, 0]
        self._best_levels = self._scratch[:, 1:]
        self._best_below = self._scratch[:, :-1, None]

    def __getstate__(self) -> dict:
        # Pickled views would lose their alias to _scratch: rebuild them on load.
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_views()
        self._compiled = self._choose_kernel()

    def update(
        self,
        expert_losses: np.ndarray,
        learner_loss: np.ndarray,
        expert_means: np.ndarray | None = None,
        learner_mean: np.ndarray | None = None,
    ) -> None:
        """Record one round.

        Args:
            expert_losses: (streams, N) losses of the experts this round.
            learner_loss: (B,) loss the learner was charged.
            expert_means: (streams, N) expected expert losses this round, if known.
            learner_mean: (B,) expected loss of the learner's chosen action, if known.
        """
        losses = expert_losses
        table = self._table
        if self._compiled is not None and losses.dtype == np.float64:
            self._compiled(
                self._cum_expert,
                table,
                self._scratch,
                losses,
                self._per_round_best,
                self._best_current,
            )
            fresh_minima = True
        else:
            if table.shape[1]:
                # Best value per level from the previous round; level c may switch from c-1.
                if not self._best_current:
                    self._refresh_best()
                np.minimum(table, self._best_below, out=table)
                # Round 1 works unchanged: every row starts at zero, so min(0, 0) + l_1 = l_1.
                np.add(table, losses[:, None, :], out=table)
            np.add(self._cum_expert, losses, out=self._cum_expert)
            self._per_round_best += _min_reduce(losses, axis=1)
            fresh_minima = False
        self.cumulative_loss += learner_loss
        if expert_means is not None and learner_mean is not None:
            self._has_means = True
            least = _min_reduce(expert_means, axis=1)
            if self.copies == 1:
                self._pseudo += learner_mean - least
            else:
                self._pseudo += self._minus_stream(learner_mean, least)
            if self.static_pseudo:
                self._learner_mean_sum += learner_mean
                np.add(self._expert_mean_sum, expert_means, out=self._expert_mean_sum)
        self._best_current = fresh_minima
        self.round += 1

    def update_block(
        self,
        expert_losses: np.ndarray,
        learner_loss: np.ndarray,
        expert_means: np.ndarray | None = None,
        learner_mean: np.ndarray | None = None,
    ) -> None:
        """Record K rounds: the same state, bit for bit, as K calls of :meth:`update`.

        Args:
            expert_losses: (K, streams, N).
            learner_loss: (K, B).
            expert_means: (K, streams, N) or None.
            learner_mean: (K, B) or None.
        """
        rounds = len(expert_losses)
        if not jit_enabled() or expert_losses.dtype != np.float64:
            for k in range(rounds):
                self.update(
                    expert_losses[k],
                    learner_loss[k],
                    None if expert_means is None else expert_means[k],
                    None if learner_mean is None else learner_mean[k],
                )
            return
        if rounds == 0:
            return
        losses = np.ascontiguousarray(expert_losses)
        table_block(
            self._cum_expert,
            self._table,
            self._scratch,
            losses,
            self._per_round_best,
            self._best_current,
        )
        accumulate(self.cumulative_loss, learner_loss)
        if expert_means is not None and learner_mean is not None:
            self._has_means = True
            least = _min_reduce(expert_means, axis=2)  # (K, streams)
            shaped = learner_mean.reshape(rounds, self.copies, self.num_streams)
            accumulate(self._pseudo, (shaped - least[:, None, :]).reshape(rounds, -1))
            if self.static_pseudo:
                accumulate(self._learner_mean_sum, learner_mean)
                accumulate(self._expert_mean_sum.reshape(-1), expert_means.reshape(rounds, -1))
        self._best_current = True
        self.round += rounds

    def _refresh_best(self) -> None:
        """Minima over the experts of the current sums, per level (once per state)."""
        _min_reduce(self._cum_expert, axis=1, out=self._best_fixed)
        if self._table.shape[1]:
            _min_reduce(self._table, axis=2, out=self._best_levels)
        self._best_current = True

    def _minus_stream(self, per_run: np.ndarray, per_stream: np.ndarray) -> np.ndarray:
        """(B,) ``per_run[r] - per_stream[r % streams]``: one subtraction per run, as alone."""
        if self.copies == 1:
            return per_run - per_stream
        shaped = per_run.reshape(self.copies, self.num_streams)
        return np.subtract(shaped, per_stream).reshape(self.num_runs)

    def _comparator_streams(self) -> np.ndarray:
        """(streams,) loss of the best sequence with at most S switches (a fresh array)."""
        if self._unconstrained:
            return self._per_round_best.copy()
        if not self.dynamic:
            return np.full(self.num_streams, np.nan)
        if not self._best_current:
            self._refresh_best()
        return self._scratch[:, -1].copy()  # level S (the fixed experts when S = 0)

    def run_values(self, run: int = 0) -> tuple[float, float, float, float]:
        """Run ``run``'s cumulative loss and static, dynamic and per-round-best regrets (floats)."""
        if not self._best_current:
            self._refresh_best()
        stream = run % self.num_streams
        cumulative = self.cumulative_loss.item(run)
        best = self._per_round_best.item(stream)
        if self._unconstrained:
            comparator = best
        elif self.dynamic:
            comparator = self._scratch.item(stream, -1)
        else:
            comparator = np.nan
        return (
            cumulative,
            cumulative - self._scratch.item(stream, 0),
            cumulative - comparator,
            cumulative - best,
        )

    @property
    def static_regret(self) -> np.ndarray:
        """(B,) regret against the best fixed expert so far."""
        if not self._best_current:
            self._refresh_best()
        return self._minus_stream(self.cumulative_loss, self._best_fixed)

    @property
    def comparator_loss(self) -> np.ndarray:
        """(B,) loss of the best sequence with at most S switches on the rounds so far."""
        best = self._comparator_streams()
        return best if self.copies == 1 else np.tile(best, self.copies)

    @property
    def dynamic_regret(self) -> np.ndarray:
        """(B,) regret against the best comparator with at most S switches."""
        return self._minus_stream(self.cumulative_loss, self._comparator_streams())

    @property
    def per_round_best_regret(self) -> np.ndarray:
        """(B,) regret against the best expert of every round."""
        return self._minus_stream(self.cumulative_loss, self._per_round_best)

    @property
    def static_pseudo_regret(self) -> np.ndarray | None:
        """(B,) pseudo-regret against the best fixed expert in expectation, or ``None``."""
        if not (self._has_means and self.static_pseudo):
            return None
        return self._minus_stream(
            self._learner_mean_sum, _min_reduce(self._expert_mean_sum, axis=1)
        )

    @property
    def per_round_best_pseudo_regret(self) -> np.ndarray | None:
        """(B,) pseudo-regret against each round's best expert in expectation, or ``None``."""
        return self._pseudo.copy() if self._has_means else None

    def state_nbytes(self) -> int:
        """Bytes held by the tracker's arrays (bounded, independent of T)."""
        arrays = (
            self.cumulative_loss,
            self._cum_expert,
            self._per_round_best,
            self._pseudo,
            self._learner_mean_sum,
            self._expert_mean_sum,
            self._table,
            self._scratch,
        )
        return int(sum(a.nbytes for a in arrays))
