"""UCB1's block kernel (:mod:`agents._bandit_ucb1`) against K calls of ``act``.

A twin playing round by round and one playing blocks (uneven sizes, the whole horizon, single
rounds) on NaN-poisoned losses give the same actions, state and stream, compiled and as the
kernel's Python form; the numpy path plays through ``act``; a kernel run at half the
exploration level fails ``check_agent``'s paths check while the same losses passed as a copy
pass; a subclass overriding a hook the kernel recomputes plays its blocks through ``act``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _bandit_twins import caught_then_passes, kernel_path, play_both, spy
from conftest import use_jit_path

from agents import _bandit_ucb1 as ucb1
from dp_experts_env import _jit

BLOCKINGS = {
    "long": (1, 37, 3, 120, 1, 64, 2, 172),
    "whole": (400,),
    "ones": (1,) * 60,
}


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel or its Python form; the block must run the kernel."""
    use_jit_path("compiled", monkeypatch)  # its own path: CI's numpy pass need not repeat it
    calls = kernel_path(
        request.param, monkeypatch, ucb1, "ucb1_ready", "run_ucb1_block", ucb1.ucb1_ready
    )
    yield request.param
    assert calls, "the kernel never ran"


@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize(("kwargs", "arms"), [({}, 5), ({"c": 0.5}, 9), ({}, 2), ({"c": 0.0}, 3)])
def test_ucb1_block_equals_act(path, kwargs, arms, blocking):
    play_both("ucb1", kwargs, arms, arms, False, BLOCKINGS[blocking])


def test_numpy_path_plays_through_act(monkeypatch):
    use_jit_path("numpy", monkeypatch)
    assert not _jit.jit_enabled() and not ucb1.ucb1_ready()
    calls = spy(monkeypatch, ucb1, "run_ucb1_block")
    play_both("ucb1", {}, 5, 5, False, BLOCKINGS["long"])
    assert not calls


_run = ucb1.run_ucb1_block


def _half_level(sums, counts, last, levels, *rest, **kw):
    return _run(sums, counts, last, np.asarray(levels) * 0.5, *rest, **kw)


def _losses_copied(sums, counts, last, levels, t0, losses, *rest, **kw):
    return _run(sums, counts, last, levels, t0, np.array(losses), *rest, **kw)


def test_a_kernel_only_bug_is_caught_and_a_harmless_change_passes(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    if not ucb1.ucb1_ready():
        pytest.skip("numba is unavailable")
    plant = functools.partial(monkeypatch.setattr, ucb1, "run_ucb1_block")
    caught_then_passes("ucb1", plant, _half_level, _losses_copied)


def test_a_subclass_overriding_a_hook_plays_its_blocks_through_act(monkeypatch):
    """A plug-in subclass of ucb1 with its own index or statistic is the learner audited on
    ``act``: its blocks play ``act`` (the kernel would play UCB1's index and clipped loss;
    ``check_agent``'s paths check failed such subclasses at round 5 and 2), while a subclass
    overriding nothing the kernel computes keeps the kernel."""
    from agents.ucb import UCB1
    from dp_experts_env.testing import check_agent

    use_jit_path("compiled", monkeypatch)
    if not ucb1.ucb1_ready():
        pytest.skip("numba is unavailable")

    class Greedy(UCB1):
        def _index(self):
            return self.means()

    class Squared(UCB1):
        def _observed(self, obs):
            return np.clip(obs.last_loss, 0.0, 1.0) ** 2

    class Renamed(UCB1):
        pass

    # Users' runs no longer call an inherited block method past such overrides
    # (dp_experts_env/block_entry.py); copies that declare them covered are played on UCB1's
    # play_bandit_block, whose own deferral is what this test checks.
    class DeclaredGreedy(Greedy):
        _index = Greedy._index
        _block_path_covers = frozenset({"_index"})

    class DeclaredSquared(Squared):
        _observed = Squared._observed
        _block_path_covers = frozenset({"_observed"})

    calls = spy(monkeypatch, ucb1, "run_ucb1_block")
    for cls in (DeclaredGreedy, DeclaredSquared):
        assert check_agent(cls, checks=["paths"]).passed == ["paths"], cls.__name__
    for cls in (Greedy, Squared):
        skipped = check_agent(cls, checks=["paths"]).skipped["paths"]
        assert skipped.startswith("inherited play_bandit_block not played"), cls.__name__
    assert not calls
    assert check_agent(Renamed, checks=["paths"]).passed == ["paths"]
    assert calls, "a subclass that overrides no hook plays the kernel"
