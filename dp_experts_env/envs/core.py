"""The batched game core shared by the single and the vector environments.

One :class:`GameCore` plays B runs of an experts game in lockstep: it owns an
:class:`~dp_experts_env.adversaries.Adversary` and a :class:`~dp_experts_env.regret.RegretTracker`
and implements the round protocol of DESIGN §2 with no Python loop over runs.

Timing of round t (the rule that keeps adaptive adversaries honest): round t's data is fetched
*before* the round-t action is read. :meth:`GameCore.reset` fetches round 1;
:meth:`GameCore.step` validates the actions, charges them, hands them to the adversary
(``record``), updates the regret, and only then fetches round t + 1, whose advice (bandit
envs) goes into the returned observation. An action can therefore never influence the data of its
own round.

Regret inputs per round: full information charges ``l_t[a]`` and the experts' losses are ``l_t``;
bandit with advice charges the played arm's loss and the experts' losses are ``<advice_j, l_t>``.
Pseudo-regrets use the means the same way (expert means ``<advice_j, mu_t>`` for bandits):
``per_round_best_pseudo_regret`` against the best expert in expectation of every round and, on
the bandit envs, ``static_pseudo_regret`` against the best fixed expert in expectation (the
papers' regret; where advice is drawn afresh every round the per-round best is an oracle). The
full-information envs leave the static one out: their known-means families are stationary
(where the two coincide) or shifting (where the per-round best is the change-point comparator),
and it would cost each full-information step about a tenth of its time at B = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dp_experts_env.adversaries import Adversary, Neighbor, Round
from dp_experts_env.regret import RegretTracker

__all__ = ["GameCore", "INFO_KEYS", "MEANS_KEYS", "SEGMENT_KEYS"]

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

# The ufunc reductions themselves: the same values as ndarray.min/max without their Python
# wrapper layers, which cost more than the reduction at small B.
_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce


class GameCore:
    """B runs of one experts game, stepped together.

    Args:
        adversary: the loss model (owned by the core from now on).
        n_switches: the comparator's switch budget S for ``dynamic_regret``.
        num_runs: B.
    """

    def __init__(self, adversary: Adversary, n_switches: int, num_runs: int) -> None:
        if not isinstance(adversary, Adversary):
            raise TypeError(f"adversary must be an Adversary, got {type(adversary).__name__}")
        self.adversary = adversary
        self.num_runs = int(num_runs)
        self.n_experts = adversary.n_experts
        self.horizon = adversary.horizon
        self.n_arms = adversary.n_arms
        self.feedback = adversary.feedback
        self.n_switches = int(n_switches)
        bandit = self.feedback == "bandit"
        self.tracker = RegretTracker(
            self.num_runs, self.n_experts, self.n_switches, self.horizon, static_pseudo=bandit
        )
        self.n_actions = self.n_arms if bandit else self.n_experts
        means_keys = MEANS_KEYS if bandit else MEANS_KEYS[1:]
        self.info_keys = (
            INFO_KEYS
            + (means_keys if adversary.knows_means else ())
            + (SEGMENT_KEYS if adversary.has_segments else ())
        )
        b, n = self.num_runs, self.n_experts
        self._rows = np.arange(b)
        if self.feedback == "bandit":
            # Scratch for <advice_j, l_t>: a product then a last-axis sum, whose rounding
            # depends on K only (never on B), so batches match single runs bit for bit.
            self._product = np.empty((b, n, self.n_arms))
            self._expert_losses = np.empty((b, n))
            self._expert_means = np.empty((b, n))
        self._round: Round | None = None
        self.t = 0
        self.started = False

    # ----------------------------------------------------------------- protocol
    def reset(self, seeds: list[int], neighbor: Neighbor | dict | None = None) -> Any:
        """Start B new games (run b from ``seeds[b]``) and return the batched first observation.

        ``neighbor`` replaces one round's datum in every run (validated by the adversary).
        """
        if len(seeds) != self.num_runs:
            raise ValueError(f"seeds must hold {self.num_runs} seeds, got {len(seeds)}")
        self.adversary.reset(seeds, neighbor)
        self.tracker.reset()
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

    def step(self, actions: Any) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
        """Play the current round with ``actions`` (B,).

        Returns:
            (observation batch, charged losses (B,), info dict of (B,) arrays). The arrays are
            fresh every call: callers may keep them.
        """
        self._check_live()
        a = self.check_actions(actions)
        rnd = self._round
        assert rnd is not None
        charged = rnd.losses[self._rows, a]  # fancy indexing: a fresh array
        self._update_regret(rnd, a, charged)
        self.t += 1
        # Everything read from this round's arrays is copied before the next fetch, which may
        # reuse the adversary's buffers.
        info = self._info(rnd, charged)
        full_obs = None if self.feedback == "bandit" else np.array(rnd.losses, dtype=np.float64)
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
        return obs, charged, info

    def step_one(self, action: int) -> tuple[Any, float, dict[str, Any]]:
        """:meth:`step` for B = 1 with an already validated action in [0, n_actions).

        The same values as ``step`` run by run, unbatched: the observation of the single run
        (fresh arrays), the charged loss as a Python float and ``info`` as Python scalars (the
        ``.item()`` of each (1,) array ``step`` would return). It skips the (B,) arrays that
        ``step`` builds only to be unbatched again, which dominate a step at B = 1.
        """
        self._check_live()
        if self.num_runs != 1:
            raise RuntimeError(f"step_one needs a core with one run, this one has {self.num_runs}")
        a = np.array([action], dtype=np.int64)
        rnd = self._round
        assert rnd is not None
        # A basic-indexing view of the (1,) column: the same values as the fancy-indexed copy
        # ``step`` makes, read only before the next fetch may reuse the adversary's buffer.
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
            obs: Any = {
                "advice": self._advice_obs(self._round)[0],
                "last_action": np.int64(action),
                "last_loss": last_loss,
            }
        else:
            obs = full_obs
        return obs, loss, info

    # ----------------------------------------------------------------- internals
    def _check_live(self) -> None:
        if self.done:
            raise RuntimeError(
                "the episode is over (all rounds played) or never started; call reset()"
            )

    def _update_regret(self, rnd: Round, a: np.ndarray | int, charged: np.ndarray) -> None:
        # ``a`` is the (B,) actions (fancy indexing) or, at B = 1, the action as an int (a basic
        # column view): either way ``means[:, a]`` per run holds the same values.
        means = rnd.means if self.adversary.knows_means else None
        if self.feedback == "bandit":
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

    def _advice_obs(self, rnd: Round | None) -> np.ndarray:
        """Flattened advice (B, N*K) of the round about to be played (zeros after the last)."""
        b, size = self.num_runs, self.n_experts * self.n_arms
        if rnd is None:
            return np.zeros((b, size))
        if rnd.advice is None:
            raise RuntimeError("a bandit adversary must give advice every round")
        return np.array(rnd.advice, dtype=np.float64).reshape(b, size)

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
            info["segment"] = np.array(rnd.segment, dtype=np.int64)
            info["shift"] = np.array(rnd.shift, dtype=bool)
        return info

    def _info_one(self, rnd: Round, loss: float) -> dict[str, Any]:
        """``_info`` of a one-run core as Python scalars (each value ``v[0].item()``)."""
        tr = self.tracker
        cumulative = tr.cumulative_loss.item(0)
        info: dict[str, Any] = {
            "round": self.t,
            "loss": loss,
            "cumulative_loss": cumulative,
            "static_regret": tr.static_regret.item(0),
            # The float64 subtraction ``dynamic_regret`` does, on Python floats (the same IEEE
            # result), saving one ufunc call.
            "dynamic_regret": cumulative - tr.comparator_loss.item(0),
            "per_round_best_regret": tr.per_round_best_regret.item(0),
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
        return info

    def state_nbytes(self) -> int:
        """Bytes held in arrays by the core, its adversary and its tracker (independent of T)."""
        own = sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))
        rnd = self._round
        if rnd is not None:
            own += sum(
                x.nbytes
                for x in (rnd.losses, rnd.means, rnd.advice, rnd.segment, rnd.shift)
                if isinstance(x, np.ndarray)
            )
        return int(own + self.adversary.state_nbytes() + self.tracker.state_nbytes())
