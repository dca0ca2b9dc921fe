"""UCB1's block kernel (:mod:`agents._bandit_ucb1`) against K calls of ``act``.

A twin playing round by round and one playing blocks (uneven sizes, the whole horizon, single
rounds) on NaN-poisoned losses give the same actions, state and stream, compiled and as the
kernel's Python form; the numpy path plays through ``act``; a kernel run at half the
exploration level fails ``check_agent``'s paths check while the same losses passed as a copy
pass.
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
