"""The Tsallis-INF block kernel (:mod:`agents._bandit_tsallis`) against K calls of ``act``.

``tsallis-inf`` over the arms and the batched conversions with their HTINF base
(``private-batched-bandit``, ``private-bandit-over-experts``) play blocks of uneven sizes (1 and
the whole horizon included) on a game whose unplayed losses are NaN (the protocol: only the
played arm's loss is read, after playing it): the same actions, state and next uniforms as a
twin playing round by round, compiled and as the kernel's Python form. The power loop gives
numpy's bits where the C library's ``pow`` (what numba's ``**`` calls) does not; a planted
kernel-only bug (half the release noise; tsallis-inf's skipping flipped) fails
``check_agent``'s paths check, a harmless change passes; the other noise backends and bases
keep their own paths.
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np
import pytest
from _bandit_twins import BLOCKINGS, caught_then_passes, kernel_path, play_both, spy

from agents import _bandit_kernels as kernels
from agents import _bandit_tsallis as tsallis
from agents import _numpy_loops as numpy_loops
from dp_experts_env import _jit, samplers


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel or its Python form; the block must not fall back to ``act``."""
    calls = kernel_path(
        request.param, monkeypatch, tsallis, "tsallis_ready", "run_tsallis_block", _jit.jit_enabled
    )
    yield request.param
    assert calls, "the kernel never ran"


CASES = [
    ("tsallis-inf", {}, 5, 5, False),
    ("tsallis-inf", {"skip": False, "sigma": 0.3}, 9, 9, False),  # pairwise sums (m >= 8)
    ("tsallis-inf", {"sigma": 0.05}, 4, 3, True),  # skips often; advice ignored
    ("private-batched-bandit", {}, 5, 5, False),
    ("private-batched-bandit", {"tau": 5}, 3, 4, True),
    ("private-batched-bandit", {"tau": 7, "tail": "sample", "epsilon": 0.3}, 2, 3, True),
    ("private-batched-bandit", {"epsilon": math.inf}, 4, 4, False),
    ("private-bandit-over-experts", {}, 5, 5, False),  # identity advice: still one uniform
    ("private-bandit-over-experts", {"tau": 1}, 6, 3, True),
    ("private-bandit-over-experts", {"tau": 6, "tail": "sample"}, 10, 4, True),
]


@pytest.mark.parametrize("blocking", sorted(BLOCKINGS))
@pytest.mark.parametrize(("name", "kwargs", "n", "arms", "dense"), CASES)
def test_tsallis_block_equals_act(path, name, kwargs, n, arms, dense, blocking):
    play_both(name, kwargs, n, arms, dense, BLOCKINGS[blocking])


def test_power_loop_gives_numpy_s_bits_and_the_c_library_s_pow_does_not():
    if not _jit.jit_enabled() or tsallis.power_loop() is None:
        pytest.skip("numba or numpy's power loop unavailable")
    import numba

    tsallis._register()
    call = numpy_loops.power_scalar_into

    @numba.njit
    def powers(x, out, loop):  # noqa: ANN001, ANN202
        exponent = np.array([1.5])
        for lo in range(0, x.size, 7):  # short rows, as the kernel's runs
            n = min(7, x.size - lo)
            call(x[lo:], exponent, out[lo:], n, loop)

    x = np.random.default_rng(0).random(20_000) * 3.0
    out = np.empty_like(x)
    powers(x, out, tsallis.power_loop())
    assert np.array_equal(out, x**1.5)
    # the mutant the loop exists for: the C library's pow differs in the last bit somewhere
    libm = np.array([math.pow(v, 1.5) for v in x])
    if np.array_equal(libm, x**1.5):
        pytest.skip("this CPU's numpy pow is the C library's: no mutant to catch")
    assert np.abs(libm - x**1.5).max() <= 4e-16 * 3.0**1.5


def _plant_law(monkeypatch, fn):
    """The Laplace law as the kernel's module sees it replaced by ``fn`` (only its draws)."""
    view = types.SimpleNamespace(**{**vars(samplers), "laplace": fn})
    monkeypatch.setattr(tsallis, "samplers", view)


def _half_noise(u, scale):
    return _laplace(u, 0.5 * scale)


def _same_noise_as_array(u, scale):
    return _laplace(u, np.float64(scale))


_laplace = samplers.laplace


@pytest.mark.parametrize("name", ["private-batched-bandit", "private-bandit-over-experts"])
def test_a_kernel_only_noise_bug_is_caught_and_a_harmless_change_passes(monkeypatch, name):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    if not tsallis.tsallis_ready():
        pytest.skip("the kernel does not run here")
    plant = functools.partial(_plant_law, monkeypatch)
    caught_then_passes(name, plant, _half_noise, _same_noise_as_array, "drawn noise")


def test_other_backends_and_bases_keep_their_paths(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    calls = spy(monkeypatch, tsallis, "run_tsallis_block")
    fallback = spy(monkeypatch, kernels, "act_loop")
    play_both("private-batched-bandit", {"noise": "grid"}, 3, 3, False, BLOCKINGS["mixed"])
    play_both("private-batched-bandit", {"base": "exp3"}, 3, 3, False, BLOCKINGS["mixed"])
    play_both("tsallis-inf", {"over": "experts"}, 4, 3, True, BLOCKINGS["mixed"])
    assert not calls
    assert len(fallback) == len(BLOCKINGS["mixed"])  # tsallis-inf over experts: act, per block


def test_numpy_path_plays_through_act(monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    calls = spy(monkeypatch, tsallis, "run_tsallis_block")
    play_both("tsallis-inf", {}, 5, 5, False, BLOCKINGS["mixed"])
    play_both("private-batched-bandit", {}, 5, 5, False, BLOCKINGS["mixed"])
    assert not calls


_run_tsallis = tsallis.run_tsallis_block


def _skip_flipped(core, rng, **kw):
    core.skip = not core.skip  # the kernel alone forgets (or adds) HTINF's skipping
    try:
        return _run_tsallis(core, rng, **kw)
    finally:
        core.skip = not core.skip


def _rows_copied(core, rng, **kw):
    return _run_tsallis(core, rng, **{**kw, "rows": np.array(kw["rows"])})


def test_tsallis_inf_kernel_bug_is_caught_and_a_harmless_change_passes(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    if not tsallis.tsallis_ready():
        pytest.skip("the kernel does not run here")
    plant = functools.partial(monkeypatch.setattr, tsallis, "run_tsallis_block")
    caught_then_passes("tsallis-inf", plant, _skip_flipped, _rows_copied)
