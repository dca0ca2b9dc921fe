"""The Tsallis-INF block kernel (:mod:`agents._bandit_tsallis`) against K calls of ``act``.

``tsallis-inf`` over the arms and the batched conversions with their HTINF base
(``private-batched-bandit``, ``private-bandit-over-experts``) play blocks of uneven sizes (1 and
the whole horizon included) on a game whose unplayed losses are NaN (the protocol: only the
played arm's loss is read, after playing it): the same actions, state and next uniforms as a
twin playing round by round, compiled and as the kernel's Python form. The power loop gives
numpy's bits where the C library's ``pow`` (what numba's ``**`` calls) does not; a planted
kernel-only bug (half the release noise) fails ``check_agent``'s paths check, a harmless change
passes; the other noise backends and bases keep their own paths.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import agents
import agents._bandit_block as bandit_block
from agents import _bandit_kernels as kernels
from agents import _bandit_tsallis as tsallis
from dp_experts_env import _jit
from dp_experts_env.testing import ContractError, check_agent

HORIZON = 48
RUNS, STREAMS = 4, 3
ROWS = np.array([0, 1, 2, 0])  # runs 0 and 3 share a loss stream
BLOCKINGS = {
    "mixed": (1, 5, 3, 8, 1, 12, 2, 16),
    "ones": (1,) * HORIZON,
    "whole": (HORIZON,),
}


def _game(n: int, arms: int, dense: bool, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 3, size=(HORIZON, STREAMS, arms)) / 2.0
    losses = np.where(rng.random((HORIZON, STREAMS, 1)) < 0.3, coarse,
                      rng.random((HORIZON, STREAMS, arms)))
    if not dense:
        return losses, None
    advice = rng.random((HORIZON, RUNS, n, arms)) ** 3
    return losses, advice / advice.sum(axis=-1, keepdims=True)


def _obs(advice, n, t, action=None, loss=None) -> dict:
    adv = np.broadcast_to(np.eye(n), (RUNS, n, n)) if advice is None else advice[t]
    return {
        "advice": adv,
        "last_action": np.zeros(RUNS, np.int64) if action is None else action,
        "last_loss": np.zeros((RUNS, 1)) if loss is None else loss,
    }


def _state(agent) -> dict:
    core = agent.core if hasattr(agent, "core") else agent.base_learner
    out = {}
    for owner, prefix in ((agent, ""), (core, "core.")):
        for key, value in vars(owner).items():
            if isinstance(value, np.ndarray) or (
                isinstance(value, (int, float, bool)) and not isinstance(value, np.generic)
            ):
                out[prefix + key] = np.asarray(value)
    out["stream"] = agent.rng.random((3,))
    return out


def _play_both(name, kwargs, n, arms, dense, blocks, seed=5) -> None:
    per_round, blocked = (
        agents.make(name, n_experts=n, n_arms=arms, horizon=HORIZON, num_envs=RUNS, seed=11,
                    **kwargs)
        for _ in range(2)
    )
    losses, advice = _game(n, arms, dense, seed)
    t, first = 0, _obs(advice, n, 0)
    for k in blocks:
        want = []
        obs = first
        for i in range(k):
            a = per_round.act(obs)
            want.append(a)
            obs = _obs(advice, n, min(t + i + 1, HORIZON - 1), a.copy(),
                       losses[t + i][ROWS, a][:, None])
        want = np.stack(want)
        poisoned = np.full((k, STREAMS, arms), np.nan)
        for i in range(k):
            poisoned[i, ROWS, want[i]] = losses[t + i, ROWS, want[i]]
        block_advice = None if advice is None else advice[t : t + k]
        got = blocked.play_bandit_block(first, block_advice, poisoned, ROWS)
        assert got.dtype == np.int64 and np.array_equal(got, want), (name, t)
        assert blocked.t == per_round.t == t + k
        t += k
        first = obs
    a, b = _state(per_round), _state(blocked)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel or its Python form; the block must not fall back to ``act``."""
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)
    if request.param == "compiled":
        if not _jit.jit_enabled():
            pytest.skip("numba is not installed")
    else:
        monkeypatch.setattr(tsallis, "tsallis_ready", lambda: True)
        monkeypatch.setattr(
            tsallis, "run_tsallis_block",
            functools.partial(tsallis.run_tsallis_block, compiled=False),
        )
    calls = []
    original = tsallis.run_tsallis_block
    monkeypatch.setattr(
        tsallis, "run_tsallis_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
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
    _play_both(name, kwargs, n, arms, dense, BLOCKINGS[blocking])


def test_power_loop_gives_numpy_s_bits_and_the_c_library_s_pow_does_not():
    if not _jit.jit_enabled() or tsallis.power_loop() is None:
        pytest.skip("numba or numpy's power loop unavailable")
    import numba

    tsallis._register()
    call = tsallis._power_into

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


def _half_noise(u, scale):
    return _laplace(u, 0.5 * scale)


def _same_noise_as_array(u, scale):
    return _laplace(u, np.float64(scale))


_laplace = bandit_block.laplace_from_uniforms


@pytest.mark.parametrize("name", ["private-batched-bandit", "private-bandit-over-experts"])
def test_a_kernel_only_noise_bug_is_caught_and_a_harmless_change_passes(monkeypatch, name):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    if not tsallis.tsallis_ready():
        pytest.skip("the kernel does not run here")
    monkeypatch.setattr(bandit_block, "laplace_from_uniforms", _half_noise)
    with pytest.raises(ContractError) as err:
        check_agent(name, checks=["paths"])
    assert err.value.check == "paths" and "drawn noise" in str(err.value), str(err.value)
    monkeypatch.setattr(bandit_block, "laplace_from_uniforms", _same_noise_as_array)
    assert check_agent(name, checks=["paths"]).passed == ["paths"]


def test_other_backends_and_bases_keep_their_paths(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    calls = []
    original = tsallis.run_tsallis_block
    monkeypatch.setattr(
        tsallis, "run_tsallis_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
    )
    fallback = []
    act_loop = kernels.act_loop
    monkeypatch.setattr(kernels, "act_loop", lambda *a: fallback.append(1) or act_loop(*a))
    _play_both("private-batched-bandit", {"noise": "grid"}, 3, 3, False, BLOCKINGS["mixed"])
    _play_both("private-batched-bandit", {"base": "exp3"}, 3, 3, False, BLOCKINGS["mixed"])
    _play_both("tsallis-inf", {"over": "experts"}, 4, 3, True, BLOCKINGS["mixed"])
    assert not calls
    assert len(fallback) == len(BLOCKINGS["mixed"])  # tsallis-inf over experts: act, per block


def test_numpy_path_plays_through_act(monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    calls = []
    original = tsallis.run_tsallis_block
    monkeypatch.setattr(
        tsallis, "run_tsallis_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
    )
    _play_both("tsallis-inf", {}, 5, 5, False, BLOCKINGS["mixed"])
    _play_both("private-batched-bandit", {}, 5, 5, False, BLOCKINGS["mixed"])
    assert not calls
