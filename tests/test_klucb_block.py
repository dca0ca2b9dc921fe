"""KL-UCB's block kernel (:mod:`agents._bandit_klucb`) against K calls of ``act``.

A twin playing round by round and one playing blocks (uneven sizes, the whole horizon, single
rounds) on NaN-poisoned losses give the same actions, state and stream, compiled and as the
kernel's Python form; the bound's arithmetic equals :func:`agents.ucb.kl_lower_bound` on edge
cases (means 0 and 1, one play, long runs); the C library's ``log`` in place of numpy's loop is
a mutant the loops' test catches; a kernel run at half the confidence level fails
``check_agent``'s paths check while the same losses passed as a copy pass.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from _bandit_twins import caught_then_passes, kernel_path, play_both, spy

from agents import _bandit_klucb as klucb
from agents import _numpy_loops as numpy_loops
from agents.ucb import kl_lower_bound
from dp_experts_env import _jit

BLOCKINGS = {
    "long": (1, 37, 3, 120, 1, 64, 2, 172),
    "whole": (400,),
    "ones": (1,) * 60,
}


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel or its Python form; the block must run the kernel."""
    ready = klucb.klucb_ready
    calls = kernel_path(request.param, monkeypatch, klucb, "klucb_ready", "run_klucb_block", ready)
    yield request.param
    assert calls, "the kernel never ran"


@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize(
    ("kwargs", "arms"), [({}, 5), ({"c": 3.0, "iterations": 3}, 9), ({}, 2)]
)
def test_klucb_block_equals_act(path, kwargs, arms, blocking):
    play_both("kl-ucb", kwargs, arms, arms, False, BLOCKINGS[blocking])


def _edge_cases() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 5000, size=(400, 7))
    sums = np.floor(rng.random((400, 7)) * counts * 4) / 4  # means on a grid, 0 and 1 included
    sums[:40] = 0.0
    sums[40:80] = counts[40:80]
    counts[80:120] = 1
    return sums, counts


def test_the_bound_equals_kl_lower_bound_on_edge_cases():
    """One compiled round from a given state picks kl_lower_bound's argmin, run by run."""
    if not klucb.klucb_ready():
        pytest.skip("numba or the loops are unavailable")
    sums, counts = _edge_cases()
    runs, arms = sums.shape
    level = math.log(arms)
    got_sums, got_counts = sums.copy(), counts.copy()
    got = klucb.run_klucb_block(
        got_sums, got_counts, np.full(runs, 3, np.int64), np.array([level]), arms, 8,
        np.zeros((1, runs, arms)), np.arange(runs), np.full(runs, 0.25),
    )
    sums[:, 3] += 0.25  # round 0 learns loss0 on the arm played before the block
    counts[:, 3] += 1
    want = np.argmin(kl_lower_bound(sums / counts, level / counts, 8), axis=1)
    assert np.array_equal(got[0], want)
    assert np.array_equal(got_sums, sums) and np.array_equal(got_counts, counts)


def test_the_loops_give_numpy_s_bits_and_the_c_library_s_do_not():
    """numba's ``math.log`` / ``math.exp`` (the C library's) are the mutants the loops avoid."""
    if not klucb.klucb_ready():
        pytest.skip("numba or the loops are unavailable")
    import numba
    from scipy.special import xlogy

    numpy_loops.register()
    log_into, exp_into, xlogy_into = (
        numpy_loops.log_into, numpy_loops.exp_into, numpy_loops.xlogy_into
    )

    @numba.njit
    def rows(x, y, out, loops):  # noqa: ANN001, ANN202
        for lo in range(0, x.size, 7):  # short rows, as the kernel's runs
            n = min(7, x.size - lo)
            exp_into(x[lo:], out[0, lo:], n, loops[0])
            log_into(x[lo:], out[1, lo:], n, loops[1])
            xlogy_into(x[lo:], y[lo:], out[2, lo:], n, loops[2])

    rng = np.random.default_rng(0)
    x, y = rng.random(50_000), rng.random(50_000)
    x[::97] = 0.0
    out = np.empty((3, x.size))
    rows(x, y, out, klucb.klucb_loops())
    with np.errstate(divide="ignore"):
        assert np.array_equal(out[0], np.exp(x)) and np.array_equal(out[1], np.log(x))
    assert np.array_equal(out[2], xlogy(x, y))
    libm = np.array([math.log(v) if v else -math.inf for v in x])
    with np.errstate(divide="ignore"):
        if np.array_equal(libm, np.log(x)):
            pytest.skip("this CPU's numpy log is the C library's: no mutant to catch")


def test_numpy_path_plays_through_act(monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    assert not _jit.jit_enabled() and not klucb.klucb_ready()
    calls = spy(monkeypatch, klucb, "run_klucb_block")
    play_both("kl-ucb", {}, 5, 5, False, BLOCKINGS["long"])
    assert not calls


_run = klucb.run_klucb_block


def _half_level(sums, counts, last, levels, t0, iterations, *rest, **kw):
    return _run(sums, counts, last, np.asarray(levels) * 0.5, t0, iterations, *rest, **kw)


def _losses_copied(sums, counts, last, levels, t0, iterations, losses, *rest, **kw):
    return _run(sums, counts, last, levels, t0, iterations, np.array(losses), *rest, **kw)


def test_a_kernel_only_bug_is_caught_and_a_harmless_change_passes(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    if not klucb.klucb_ready():
        pytest.skip("numba or the loops are unavailable")
    plant = functools.partial(monkeypatch.setattr, klucb, "run_klucb_block")
    caught_then_passes("kl-ucb", plant, _half_level, _losses_copied)
