"""Exact, batched, online regret bookkeeping.

All quantities are prefix values after round ``t`` for B runs at once:

* ``static_regret``      = L_t - min_j sum_{s<=t} l_s(j)
* ``dynamic_regret``     = L_t - OPT_t(S), the best comparator sequence with at most S switches,
  computed exactly by the O(N*S) dynamic programme of brief 000 §6.6
* ``per_round_best_regret`` = L_t - sum_{s<=t} min_j l_s(j)  (S unlimited)

and, when the means are known (mu_s(j) the expected loss of expert j in round s, J_s the action):

* ``static_pseudo_regret`` = sum_{s<=t} mu_s(J_s) - min_j sum_{s<=t} mu_s(j): against the best
  FIXED expert in expectation, the regret the papers bound;
* ``per_round_best_pseudo_regret`` = sum_{s<=t} (mu_s(J_s) - min_j mu_s(j)): against the best
  expert in expectation of EVERY round. It equals the static one when one expert is best in every
  round (stationary models), and is a switching comparator on shifting ones; where the best
  expert changes from round to round (advice drawn afresh each round) it is an oracle no learner
  can approach.

The dynamic programme keeps ``M[b, c, j]`` = least loss of a sequence ending at expert ``j`` with at
most ``c`` switches. Memory is O(B * (S+2) * N), independent of T. When S >= T - 1 the comparator is
unconstrained, so the table is not kept and the per-round best is used (exactly the same value).
"""

from __future__ import annotations

import numpy as np

from dp_experts_env._validation import check_int

__all__ = ["RegretTracker"]

# The ufunc reduction itself: the same values as ndarray.min, without its Python wrapper layers
# (they dominate at B = 1, where every env step calls it several times).
_min_reduce = np.minimum.reduce


class RegretTracker:
    """Online regret of B runs against N experts with a comparator switch budget S.

    Args:
        num_runs: B, the number of independent runs tracked together.
        n_experts: N.
        n_switches: S, the most switches the dynamic comparator may make.
        horizon: T, used only to skip the table when S >= T - 1 (optional).
        static_pseudo: keep ``static_pseudo_regret`` (O(B N) more memory and two more array
            operations per round with means; ``None`` when False).
    """

    def __init__(
        self,
        num_runs: int,
        n_experts: int,
        n_switches: int,
        horizon: int | None = None,
        static_pseudo: bool = True,
    ) -> None:
        self.num_runs = check_int("num_runs", num_runs, minimum=1)
        self.n_experts = check_int("n_experts", n_experts, minimum=1)
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        self.horizon = None if horizon is None else check_int("horizon", horizon, minimum=1)
        if not isinstance(static_pseudo, bool):
            raise TypeError(f"static_pseudo must be True or False, got {static_pseudo!r}")
        self.static_pseudo = static_pseudo
        self._unconstrained = self.horizon is not None and self.n_switches >= self.horizon - 1
        self.reset()

    def reset(self) -> None:
        """Forget all rounds."""
        b, n = self.num_runs, self.n_experts
        self.round = 0
        self.cumulative_loss = np.zeros(b)
        self._per_round_best = np.zeros(b)
        self._pseudo = np.zeros(b)  # per-round-best pseudo-regret
        self._learner_mean_sum = np.zeros(b if self.static_pseudo else 0)
        self._expert_mean_sum = np.zeros((b, n) if self.static_pseudo else (b, 0))
        self._has_means = False
        levels = 0 if self._unconstrained else self.n_switches
        self._cum_expert = np.zeros((b, n))  # row c = 0 of the table: fixed-expert losses
        # Levels c = 1..S of the table, kept contiguous apart from level 0: in-place minimum and
        # add on a contiguous block are about twice as fast as on a strided view of one table.
        self._table = np.zeros((b, levels, n))
        self._scratch = np.empty((b, levels + 1))
        self._make_views()

    _VIEWS = ("_best_fixed", "_best_levels", "_best_below")

    def _make_views(self) -> None:
        # Views made once, not every round (their creation dominates at B = 1).
        self._best_fixed = self._scratch[:, 0]
        self._best_levels = self._scratch[:, 1:]
        self._best_below = self._scratch[:, :-1, None]

    def __getstate__(self) -> dict:
        # Pickle copies arrays separately, so stored views would lose their alias to _scratch;
        # drop them and rebuild on load.
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_views()

    def update(
        self,
        expert_losses: np.ndarray,
        learner_loss: np.ndarray,
        expert_means: np.ndarray | None = None,
        learner_mean: np.ndarray | None = None,
    ) -> None:
        """Record one round.

        Args:
            expert_losses: (B, N) losses of the experts this round (for bandits with advice,
                ``<advice_j, l_t>``).
            learner_loss: (B,) loss the learner was charged.
            expert_means: (B, N) expected expert losses this round, if known.
            learner_mean: (B,) expected loss of the learner's chosen action, if known.
        """
        losses = expert_losses
        table = self._table
        if table.shape[1]:
            # Best value per level from the previous round; level c may switch from level c-1.
            _min_reduce(self._cum_expert, axis=1, out=self._best_fixed)
            _min_reduce(table, axis=2, out=self._best_levels)
            np.minimum(table, self._best_below, out=table)
            # Round 1 works unchanged: every row starts at zero, so min(0, 0) + l_1 = l_1.
            np.add(table, losses[:, None, :], out=table)
        np.add(self._cum_expert, losses, out=self._cum_expert)
        self._per_round_best += _min_reduce(losses, axis=1)
        self.cumulative_loss += learner_loss
        if expert_means is not None and learner_mean is not None:
            self._has_means = True
            self._pseudo += learner_mean - _min_reduce(expert_means, axis=1)
            if self.static_pseudo:
                self._learner_mean_sum += learner_mean
                np.add(self._expert_mean_sum, expert_means, out=self._expert_mean_sum)
        self.round += 1

    @property
    def static_regret(self) -> np.ndarray:
        """(B,) regret against the best fixed expert so far."""
        return self.cumulative_loss - _min_reduce(self._cum_expert, axis=1)

    @property
    def comparator_loss(self) -> np.ndarray:
        """(B,) loss of the best sequence with at most S switches on the rounds so far."""
        if self._unconstrained:
            return self._per_round_best.copy()
        if self.n_switches == 0:
            return _min_reduce(self._cum_expert, axis=1)
        return _min_reduce(self._table[:, -1, :], axis=1)

    @property
    def dynamic_regret(self) -> np.ndarray:
        """(B,) regret against the best comparator with at most S switches."""
        return self.cumulative_loss - self.comparator_loss

    @property
    def per_round_best_regret(self) -> np.ndarray:
        """(B,) regret against the best expert of every round."""
        return self.cumulative_loss - self._per_round_best

    @property
    def static_pseudo_regret(self) -> np.ndarray | None:
        """(B,) pseudo-regret against the best fixed expert in expectation, or ``None``.

        ``sum_s mu_s(J_s) - min_j sum_s mu_s(j)``; ``None`` when means were never supplied or the
        tracker was built with ``static_pseudo=False``.
        """
        if not (self._has_means and self.static_pseudo):
            return None
        return self._learner_mean_sum - _min_reduce(self._expert_mean_sum, axis=1)

    @property
    def per_round_best_pseudo_regret(self) -> np.ndarray | None:
        """(B,) pseudo-regret against the best expert in expectation of every round, or ``None``.

        ``sum_s (mu_s(J_s) - min_j mu_s(j))``; ``None`` when means were never supplied.
        """
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
