"""Block play of adap-ucb, dp-klucb and thompson against K calls of ``act``.

Their arm changes only where an episode ends, so the rounds where no run's episode ends run as
whole arrays (:meth:`agents.private_ucb.AdaPUCB.play_bandit_block`) and the others through
``act``'s hooks. A twin playing round by round and one playing blocks of uneven sizes on
NaN-poisoned losses give the same actions, state, next uniforms and drawn Laplace noise; a
planted bug in the quiet rounds (one play too few counted) is caught; the other noise backends
play every round through ``act``. Thompson sampling's block (its Beta inversions still
scipy's, round by round) equals ``act`` too, and a stale Bernoulli trial left by its block is
caught while the same doubles in a fresh array pass.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from _bandit_twins import caught_then_passes, play_both
from conftest import use_jit_path

import agents._bandit_block as bandit_block
import agents.private_ucb as private_ucb
from agents._bandit_block import play_rounds
from agents.ucb import ThompsonSampling
from dp_experts_env.testing import ContractError, check_agent

LONG = (1, 37, 3, 120, 1, 64, 2, 172)  # 400 rounds: quiet segments of tens of rounds
BLOCKINGS = {"long": LONG, "whole": (400,), "ones": (1,) * 90}
CASES = [
    ("adap-ucb", {}),
    ("adap-ucb", {"epsilon": 0.2, "alpha": 2.0}),
    ("adap-ucb", {"epsilon": math.inf}),
    ("dp-klucb", {}),
    ("dp-klucb", {"means": "last"}),
    ("dp-klucb:paper", {}),
]


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_episode_block_equals_act(monkeypatch, path, name, kwargs, blocking):
    use_jit_path(path, monkeypatch)
    play_both(name, kwargs, 5, 5, False, BLOCKINGS[blocking])


def test_quiet_rounds_run_in_bulk(monkeypatch):
    rounds = []
    original = play_rounds

    def counting(agent, first, advice, losses, rows, actions, start, stop, lean=False):
        rounds.append(stop - start)
        return original(agent, first, advice, losses, rows, actions, start, stop, lean)

    monkeypatch.setattr(bandit_block, "play_rounds", counting)  # the act rounds between stretches
    play_both("adap-ucb", {}, 5, 5, True, (400,))
    assert 0 < sum(rounds) < 400 // 2  # most rounds quiet (4 runs, 5 arms, doubling episodes)


def _one_play_short(self, losses, rows, actions, lo, hi):
    _quiet(self, losses, rows, actions, lo, hi)
    self.counts[self._rows, self.arm] -= 1


_quiet = private_ucb.AdaPUCB._play_quiet


@pytest.mark.parametrize("name", ["adap-ucb", "dp-klucb"])
def test_a_bug_in_the_quiet_rounds_fails_the_paths_check(monkeypatch, name):
    monkeypatch.setattr(private_ucb.AdaPUCB, "_play_quiet", _one_play_short)
    with pytest.raises(ContractError) as err:
        check_agent(name, checks=["paths"])
    assert err.value.check == "paths" and "differs from act" in str(err.value), str(err.value)


def test_grid_noise_plays_every_round_through_act(monkeypatch):
    calls = []
    monkeypatch.setattr(
        private_ucb.AdaPUCB, "_play_quiet", lambda *a: calls.append(1) or _quiet(*a)
    )
    play_both("adap-ucb", {"noise": "grid"}, 5, 5, False, LONG)
    assert not calls
    play_both("adap-ucb", {}, 5, 5, False, LONG)
    assert calls


# ----------------------------------------------------------------------------- Thompson sampling
@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize("arms", [2, 5, 9])
def test_thompson_block_equals_act(arms, blocking):
    play_both("thompson", {}, arms, arms, False, BLOCKINGS[blocking])


_thompson_block = ThompsonSampling.play_bandit_block


def _stale_trial(self, first, advice, losses, rows):
    actions = _thompson_block(self, first, advice, losses, rows)
    self._trial = np.array(self._trial) * 0.5  # the next learn sees another Bernoulli trial
    return actions


def _trial_copied(self, first, advice, losses, rows):
    actions = _thompson_block(self, first, advice, losses, rows)
    self._trial = np.array(self._trial)  # the same doubles in a fresh array
    return actions


def test_thompson_block_bug_is_caught_and_a_harmless_change_passes(monkeypatch):
    plant = functools.partial(monkeypatch.setattr, ThompsonSampling, "play_bandit_block")
    caught_then_passes("thompson", plant, _stale_trial, _trial_copied)
