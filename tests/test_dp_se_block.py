"""Block play of dp-se (:meth:`agents.dp_se.DPSE.play_bandit_block`) against K calls of ``act``.

Between epoch ends dp-se's plays follow from each run's offset and position, so the rounds where
no run's epoch ends run as whole arrays (:meth:`agents.dp_se.DPSE._play_quiet`) and the first
round and every epoch end go through ``act``'s hooks. A twin playing round by round and one
playing blocks of uneven sizes on NaN-poisoned losses give the same actions, state and next
uniforms, on both paths, with epochs ending at different rounds in different runs and runs down
to one arm; the episode loop takes the block path and its rows equal the per-round loop's.
Planted bugs in the quiet rounds (a segment's choice uniforms drawn before its Laplace ones,
noise at twice the scale, one round too few counted) fail ``check_agent``'s paths check while
the same uniforms copied and the same sums in a fresh array pass; the ``grid`` backend, a
recording backend and a subclass with its own ``_learn`` play every round through ``act``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from _bandit_twins import caught_then_passes, play_both
from _block_rows import assert_same_rows, rows_on_path
from conftest import use_jit_path

import agents
import agents._bandit_block as bandit_block
from agents.dp_se import DPSE
from dp_experts_env import samplers
from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid
from dp_experts_env.privacy.noise import RecordingBackend

LONG = (1, 37, 3, 120, 1, 64, 2, 172)  # 400 rounds: quiet segments of tens of rounds
BLOCKINGS = {"long": LONG, "whole": (400,), "ones": (1,) * 90}
# Short epochs (epoch_scale) and eager eliminations (threshold_scale) put epoch ends at other
# rounds in other runs, and leave some runs with one arm (never ending its epoch) before others.
CASES = [
    {},
    {"epsilon": 0.2},
    {"epsilon": math.inf},
    {"epoch_scale": 0.001, "threshold_scale": 0.1},
    {"epoch_scale": 0.002, "threshold_scale": 0.05, "epsilon": 0.5},
    {"epoch_scale": 0.0003, "threshold_scale": 0.02, "epsilon": math.inf},
    {"epoch_scale": 0.0, "threshold_scale": 0.0},  # the audit's hints: one-round epochs
]


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize("kwargs", CASES, ids=lambda kw: str(kw).replace(" ", "") or "default")
def test_block_equals_act(monkeypatch, path, kwargs, blocking):
    use_jit_path(path, monkeypatch)
    play_both("dp-se", kwargs, 5, 5, False, BLOCKINGS[blocking])


def test_the_cases_end_epochs_apart_and_eliminate():
    """The cases above exercise what they claim: per-run epoch ends, one-arm runs, releases."""
    per_round, _ = play_both("dp-se", CASES[3], 5, 5, False, (400,))
    assert len(set(per_round.epoch.tolist())) > 1  # runs at different epochs
    counts = per_round.active.sum(axis=1)
    assert counts.min() == 1 and counts.max() > 1
    per_round, _ = play_both("dp-se", {}, 5, 5, False, (400,))
    assert per_round.releases.tolist() == [0] * 4  # default: one epoch of 5 x 1,652 rounds


def test_quiet_rounds_run_in_bulk(monkeypatch):
    rounds: list[int] = []
    original = bandit_block.play_rounds  # the act rounds between the quiet stretches

    def counting(agent, first, advice, losses, rows, actions, start, stop, lean=False):
        rounds.append(stop - start)
        return original(agent, first, advice, losses, rows, actions, start, stop, lean)

    monkeypatch.setattr(bandit_block, "play_rounds", counting)
    play_both("dp-se", {}, 5, 5, False, (400,))
    assert sum(rounds) == 1  # no epoch ends in 400 rounds: the first round only
    rounds.clear()
    blocked = play_both("dp-se", CASES[3], 5, 5, False, (400,))[1]
    # the first round and the rounds where some run's epoch ended
    assert 1 < sum(rounds) <= 1 + int(blocked.releases.sum())


# ---------------------------------------------------------------- planted bugs in the quiet rounds
_quiet = DPSE._play_quiet


def _choices_first(self, s):
    """Each run's s choice uniforms first, then the s x K Laplace ones (the order swapped)."""
    self.rng.random((s,))
    samplers.laplace(self.rng.random((s, int(self.n_arms))), self.noise_scale)


def _double_scale(self, s):
    samplers.laplace(self.rng.random((s, int(self.n_arms) + 1))[:, :, :-1], 2 * self.noise_scale)


def _copied_uniforms(self, s):
    """The same uniforms copied out of the stream's buffer first: the same variates."""
    if self.noise_scale == 0.0:
        self.rng.random((s,))
        return
    u = np.array(self.rng.random((s, int(self.n_arms) + 1)))
    samplers.laplace(u[:, :, :-1], self.noise_scale)


def _one_round_short(self, losses, rows, actions, lo, hi):
    _quiet(self, losses, rows, actions, lo, hi)
    self.position = self.position - 1


def _fresh_sums(self, losses, rows, actions, lo, hi):
    _quiet(self, losses, rows, actions, lo, hi)
    self.sums = np.array(self.sums, copy=True)  # the same doubles in a fresh array


@pytest.mark.parametrize(("mutant", "says"), [(_choices_first, "Laplace values"),
                                             (_double_scale, "Laplace values")])
def test_a_bug_in_the_quiet_draws_is_caught_and_a_harmless_change_passes(
    monkeypatch, mutant, says
):
    plant = functools.partial(monkeypatch.setattr, DPSE, "_quiet_draws")
    caught_then_passes("dp-se", plant, mutant, _copied_uniforms, says=says)


def test_a_bug_in_the_quiet_state_is_caught_and_a_harmless_change_passes(monkeypatch):
    plant = functools.partial(monkeypatch.setattr, DPSE, "_play_quiet")
    caught_then_passes("dp-se", plant, _one_round_short, _fresh_sums)


# --------------------------------------------------------------------- fall-backs to act
def test_other_backends_and_subclasses_play_every_round_through_act(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(DPSE, "_play_quiet", lambda *a: calls.append(1) or _quiet(*a))
    play_both("dp-se", {"noise": "grid"}, 5, 5, False, LONG)
    play_both("dp-se", {"noise": RecordingBackend()}, 5, 5, False, LONG)

    class Louder(DPSE):  # its own learning hook: the bulk rounds would skip it
        def _learn(self, obs):
            super()._learn(obs)

    agent = Louder(5, 50, n_arms=5, num_envs=2, seed=3)
    first = {"advice": np.broadcast_to(np.eye(5), (2, 5, 5)),
             "last_action": np.zeros(2, np.int64), "last_loss": np.zeros((2, 1))}
    agent.play_bandit_block(first, None, np.full((50, 2, 5), 0.5), np.arange(2))
    assert agent.t == 50 and not calls
    play_both("dp-se", {}, 5, 5, False, LONG)
    assert calls


def test_a_block_past_the_horizon_is_refused_as_act_refuses_it():
    agent = agents.make("dp-se", n_experts=5, n_arms=5, horizon=10, num_envs=2, seed=1)
    first = {"advice": np.broadcast_to(np.eye(5), (2, 5, 5)),
             "last_action": np.zeros(2, np.int64), "last_loss": np.zeros((2, 1))}
    with pytest.raises(ValueError, match="horizon"):
        agent.play_bandit_block(first, None, np.full((11, 2, 5), 0.5), np.arange(2))


# ---------------------------------------------------------------------------- the episode loop
def test_the_episode_loop_takes_the_block_path_with_the_per_round_rows(monkeypatch):
    grid = Grid(
        agents=[AgentEntry("dp-se", {"epoch_scale": 0.002, "threshold_scale": 0.1})],
        envs=[EnvEntry("DPExperts-Bandit-v0", {"horizon": 600})],
        epsilons=[1.0, math.inf],
        n_seeds=3,
        n_record=12,
    )
    cells = grid.cells()
    calls: list[int] = []
    monkeypatch.setattr(DPSE, "_play_quiet", lambda *a: calls.append(1) or _quiet(*a))
    blocks = rows_on_path(cells, monkeypatch, True)
    assert calls, "the compiled path's episode loop never played dp-se's quiet rounds in bulk"
    calls.clear()
    assert_same_rows(blocks, rows_on_path(cells, monkeypatch, False))
    assert not calls  # the numpy path is the per-round loop


def test_the_sampler_is_called_at_the_learners_scale(monkeypatch):
    """The quiet rounds draw their Laplace variates through samplers.laplace, noise_scale."""
    use_jit_path("numpy", monkeypatch)
    seen: list[tuple[tuple[int, ...], float]] = []
    original = samplers.laplace

    def spying(u, scale):
        seen.append((np.shape(u), float(scale)))
        return original(u, scale)

    monkeypatch.setattr(samplers, "laplace", spying)
    _, blocked = play_both("dp-se", {"epsilon": 0.5}, 5, 5, False, (120,))
    bulk = [shape for shape, _ in seen if len(shape) == 3]
    assert bulk and {shape[0::2] for shape in bulk} == {(4, 5)}  # (runs, rounds, K)
    # a release per learning round of each twin (119 each): the block's in bulk or through act
    assert sum(shape[1] for shape in bulk) + len(seen) - len(bulk) == 2 * 119
    assert {scale for _, scale in seen} == {float(blocked.noise_scale)}
