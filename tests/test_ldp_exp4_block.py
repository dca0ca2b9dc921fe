"""``play_bandit_block`` of ldp-exp4, exp4 and exp3 against K calls of ``act`` (bandit blocks).

Synthetic blocks (identity advice passed as None, one-hot advice, dense advice) in uneven block
sizes (1 included), at a private epsilon and at epsilon = inf: the same actions, the same state
(weights, clock, last law, the next uniforms of every stream), then more rounds with ``act`` on
both. The protocol's poison test fills every loss the learner did not play with NaN. The kernel
runs compiled and as Python (its numpy reference form); ``DP_EXPERTS_NO_JIT`` plays through
``act``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import agents
from agents import _bandit_kernels as kernels
from agents import _numpy_loops as numpy_loops
from dp_experts_env import _jit

HORIZON = 60
BLOCKS = (1, 5, 3, 8, 1, 12, 2)  # 32 rounds in blocks, then act to the horizon
RUNS, STREAMS = 5, 3
ROWS = np.array([0, 1, 2, 0, 1])  # runs 0 and 3 (1 and 4) share a loss stream


def _pair(name: str, n: int, arms: int, **kwargs) -> list:
    return [
        agents.make(name, n_experts=n, n_arms=arms, horizon=HORIZON, num_envs=RUNS, seed=11,
                    **kwargs)
        for _ in range(2)
    ]


def _game(kind: str, n: int, arms: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(T, S, A) losses and (T, B, N, A) advice (None: the identity)."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 3, size=(HORIZON, STREAMS, arms)) / 2.0
    losses = np.where(rng.random((HORIZON, STREAMS, 1)) < 0.3, coarse,
                      rng.random((HORIZON, STREAMS, arms)))
    if kind == "identity":
        return losses, None
    if kind == "one-hot":
        advice = np.zeros((HORIZON, RUNS, n, arms))
        pick = rng.integers(0, arms, size=(HORIZON, RUNS, n))
        np.put_along_axis(advice, pick[..., None], 1.0, axis=-1)
        return losses, advice
    advice = rng.random((HORIZON, RUNS, n, arms)) ** 3
    return losses, advice / advice.sum(axis=-1, keepdims=True)


def _identity(n: int) -> np.ndarray:
    eye = np.broadcast_to(np.eye(n), (RUNS, n, n))  # read-only, as the env hands it out
    assert not eye.flags.writeable
    return eye


def _obs(advice, n: int, t: int, action=None, loss=None) -> dict:
    return {
        "advice": _identity(n) if advice is None else advice[t],
        "last_action": np.zeros(RUNS, np.int64) if action is None else action,
        "last_loss": np.zeros((RUNS, 1)) if loss is None else loss,
    }


def _state(agent) -> dict:
    out = {}
    for owner, prefix in ((agent, ""), (agent.core, "core.")):
        for key, value in vars(owner).items():
            if isinstance(value, np.ndarray) or (
                isinstance(value, (int, float, bool)) and not isinstance(value, np.generic)
            ):
                out[prefix + key] = value
    out["stream"] = agent.rng.random((4,))  # the next uniforms of every run
    return out


def _same(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _assert_same_state(a, b) -> None:
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    for key in sa:
        assert _same(sa[key], sb[key]), key


def _play(per_round, blocked, losses, advice, n: int, blocks=BLOCKS) -> None:
    """Blocks on ``blocked``, K acts on ``per_round``; then both act to the horizon."""
    t, first = 0, _obs(advice, n, 0)
    for k in blocks:
        block_advice = None if advice is None else advice[t : t + k]
        want = np.stack([per_round.act(o) for o in _round_obs(first, advice, losses, t, k,
                                                               per_round)])
        got = blocked.play_bandit_block(first, block_advice, losses[t : t + k], ROWS)
        assert got.dtype == np.int64 and got.shape == (k, RUNS)
        assert _same(got, want), t
        assert blocked.t == per_round.t == t + k
        last = got[-1]
        t += k
        first = _obs(advice, n, min(t, HORIZON - 1), last.copy(),
                     losses[t - 1][ROWS, last][:, None])
    obs = first
    for i in range(t, HORIZON):
        a, b = per_round.act(obs), blocked.act(obs)
        assert _same(a, b), i
        obs = _obs(advice, n, min(i + 1, HORIZON - 1), a.copy(), losses[i][ROWS, a][:, None])
    _assert_same_state(per_round, blocked)


def _round_obs(first, advice, losses, t, k, agent):
    """The per-round observations, each built after the previous round's act (a generator)."""
    yield first
    for i in range(1, k):
        last = agent.last_actions
        yield {
            "advice": first["advice"] if advice is None else advice[t + i],
            "last_action": last.copy(),
            "last_loss": losses[t + i - 1][ROWS, last][:, None],
        }


@pytest.fixture(params=["compiled", "python"])
def path(request, monkeypatch):
    """The compiled kernel, or its Python form (the kernel's numpy reference)."""
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)
    if request.param == "compiled":
        if not _jit.jit_enabled():
            pytest.skip("numba is not installed")
    else:
        monkeypatch.setattr(kernels, "jit_enabled", lambda: True)  # kernel_ready without numba
        monkeypatch.setattr(
            kernels, "run_exp4_block", functools.partial(kernels.run_exp4_block, compiled=False)
        )
    calls = []
    original = kernels.act_loop
    monkeypatch.setattr(kernels, "act_loop", lambda *a: calls.append(1) or original(*a))
    yield request.param
    assert not calls, "the block fell back to act"


SHAPES = [
    ("identity", 5, 5),
    ("identity", 9, 9),  # pairwise sums (N, K >= 8)
    ("one-hot", 10, 5),
    ("one-hot", 20, 9),
    ("dense", 10, 3),
    ("one-hot", 1, 2),
]


@pytest.mark.parametrize("epsilon", [1.0, 0.3, math.inf])
@pytest.mark.parametrize(("kind", "n", "arms"), SHAPES)
def test_ldp_exp4_block_equals_act(path, kind, n, arms, epsilon):
    per_round, blocked = _pair("ldp-exp4", n, arms, epsilon=epsilon)
    losses, advice = _game(kind, n, arms, seed=n * arms)
    _play(per_round, blocked, losses, advice, n)


BASELINES = [
    ("exp4", {}),
    ("exp4", {"rate": "anytime", "gamma": 0.1}),
    ("exp3", {}),
    ("exp3", {"rate": "anytime", "gamma": 0.2}),
]


@pytest.mark.parametrize(("kind", "n", "arms"), SHAPES[::2] + SHAPES[3:4])
@pytest.mark.parametrize(("name", "kwargs"), BASELINES, ids=[f"{n}-{k}" for n, k in BASELINES])
def test_baseline_block_equals_act(path, name, kwargs, kind, n, arms):
    per_round, blocked = _pair(name, n, arms, **kwargs)
    losses, advice = _game(kind, n, arms, seed=n + arms)
    _play(per_round, blocked, losses, advice, n)


def test_exp3_over_experts_plays_through_act(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    per_round, blocked = _pair("exp3", 10, 5, over="experts")
    losses, advice = _game("one-hot", 10, 5, seed=4)
    calls = []
    original = kernels.act_loop
    monkeypatch.setattr(kernels, "act_loop", lambda *a: calls.append(1) or original(*a))
    _play(per_round, blocked, losses, advice, 10)
    assert len(calls) == len(BLOCKS)


@pytest.mark.parametrize("epsilon", [1.0, math.inf])
@pytest.mark.parametrize(("kind", "n", "arms"), [SHAPES[0], SHAPES[2], SHAPES[4]])
def test_batched_exp4_of_one_round_batches_runs_the_kernel(
    path, monkeypatch, kind, n, arms, epsilon
):
    """private-batched-exp4 at tau = 1, release='loss' (its default at T = 1e4): ldp-exp4's."""
    calls = []
    original = kernels.run_exp4_block
    monkeypatch.setattr(
        kernels, "run_exp4_block", lambda *a, **kw: calls.append(1) or original(*a, **kw)
    )
    per_round, blocked = _pair("private-batched-exp4", n, arms, epsilon=epsilon, tau=1,
                               release="loss")
    losses, advice = _game(kind, n, arms, seed=2 * n + arms)
    _play(per_round, blocked, losses, advice, n)
    assert len(calls) == len(BLOCKS)
    assert np.array_equal(blocked.action_probs, per_round.action_probs)
    assert not blocked._acc.any() and not np.signbit(blocked._acc).any()


def test_ldp_exp4_block_with_explicit_constants(path):
    per_round, blocked = _pair("ldp-exp4", 10, 5, epsilon=2.0, eta=0.7, gamma=0.0)
    losses, advice = _game("one-hot", 10, 5, seed=3)
    _play(per_round, blocked, losses, advice, 10)


def test_ldp_exp4_block_of_the_whole_horizon(path):
    per_round, blocked = _pair("ldp-exp4", 5, 5, epsilon=1.0)
    losses, _ = _game("identity", 5, 5, seed=1)
    _play(per_round, blocked, losses, None, 5, blocks=(HORIZON,))


def test_ldp_exp4_block_reads_only_played_losses(path):
    """The protocol's poison test: every loss the learner did not play is NaN."""
    n, arms = 10, 5
    per_round, blocked = _pair("ldp-exp4", n, arms, epsilon=1.0)
    losses, advice = _game("one-hot", n, arms, seed=5)
    t, first = 0, _obs(advice, n, 0)
    for k in BLOCKS:
        want = np.stack(
            [per_round.act(o) for o in _round_obs(first, advice, losses, t, k, per_round)]
        )
        poisoned = np.full((k, STREAMS, arms), np.nan)
        for i in range(k):
            poisoned[i, ROWS, want[i]] = losses[t + i, ROWS, want[i]]
        got = blocked.play_bandit_block(first, advice[t : t + k], poisoned, ROWS)
        assert _same(got, want), t
        t += k
        first = _obs(advice, n, t, want[-1].copy(), losses[t - 1][ROWS, want[-1]][:, None])
    _assert_same_state(per_round, blocked)


def test_numpy_path_plays_through_act(monkeypatch):
    """``DP_EXPERTS_NO_JIT``: the K rounds go through ``act`` (the reference), same results."""
    losses, advice = _game("one-hot", 10, 5, seed=9)
    results = []
    for no_jit in ("1", "0"):
        monkeypatch.setenv("DP_EXPERTS_NO_JIT", no_jit)
        per_round, blocked = _pair("ldp-exp4", 10, 5, epsilon=1.0)
        _play(per_round, blocked, losses, advice, 10)
        results.append(_state(blocked))
    assert results[0].keys() == results[1].keys()
    for key in results[0]:
        assert _same(results[0][key], results[1][key]), key


def test_grid_backend_falls_back_to_act(monkeypatch):
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    per_round, blocked = _pair("ldp-exp4", 10, 5, epsilon=1.0, noise="grid")
    losses, advice = _game("one-hot", 10, 5, seed=2)
    calls = []
    original = kernels.act_loop
    monkeypatch.setattr(kernels, "act_loop", lambda *a: calls.append(1) or original(*a))
    _play(per_round, blocked, losses, advice, 10)
    assert len(calls) == len(BLOCKS)


def test_block_past_the_horizon_is_refused(path):
    agent = _pair("ldp-exp4", 5, 5, epsilon=1.0)[0]
    losses, _ = _game("identity", 5, 5, seed=0)
    agent.play_bandit_block(_obs(None, 5, 0), None, losses[: HORIZON - 2], ROWS)
    with pytest.raises(ValueError, match="horizon"):
        agent.play_bandit_block(_obs(None, 5, 0, agent.last_actions.copy(),
                                     np.zeros((RUNS, 1))), None, losses[:3], ROWS)


def test_first_observation_is_checked_like_act(path):
    agent = _pair("ldp-exp4", 5, 5, epsilon=1.0)[0]
    losses, _ = _game("identity", 5, 5, seed=0)
    agent.play_bandit_block(_obs(None, 5, 0), None, losses[:2], ROWS)
    wrong = _obs(None, 5, 0, (agent.last_actions + 1) % 5, np.zeros((RUNS, 1)))
    with pytest.raises(ValueError, match="last_action"):
        agent.play_bandit_block(wrong, None, losses[2:4], ROWS)
    bad_loss = _obs(None, 5, 0, agent.last_actions.copy(), np.full((RUNS, 1), 1.5))
    with pytest.raises(ValueError, match="last_loss"):
        agent.play_bandit_block(bad_loss, None, losses[2:4], ROWS)


def test_numpy_exp_loop_is_numpys_exp():
    """The kernel's call on a (B, N) array: every element, compiled and in Python."""
    loop = numpy_loops.ufunc_loop(np.exp, (8, 8))
    if loop is None:
        pytest.skip("this numpy does not hand out its strided loops")
    pytest.importorskip("numba")
    numpy_loops.register()
    import numba

    call = numba.njit(lambda z, out, loop: numpy_loops.exp_into(z, out, z.size, loop))
    z = -np.random.default_rng(0).random((300, 7)) * 40.0
    z[0, :3] = (0.0, -0.0, -745.5)  # exp(0) = 1, and an underflow to a subnormal
    python = lambda z, out, loop: numpy_loops.exp_into(z, out, z.size, loop)  # noqa: E731
    for run in (call, python):
        out = np.full_like(z, np.nan)
        run(z, out, loop)
        assert _same(out, np.exp(z))


@pytest.mark.parametrize(
    ("env_id", "name"),
    [
        ("DPExperts-BanditAdvice-v0", "ldp-exp4"),
        ("DPExperts-BanditAdvice-v0", "exp4"),
        ("DPExperts-Bandit-v0", "ldp-exp4"),
        ("DPExperts-Bandit-v0", "exp3"),
    ],
)
def test_blocks_of_a_real_env(path, env_id, name):
    """The env's own blocks (``next_block``), handed over as the protocol says, equal ``act``."""
    import gymnasium as gym

    from dp_experts_env.evaluation.episode import _bandit_block_actions

    runs = 4
    env = gym.make_vec(env_id, num_envs=runs, vectorization_mode="vector_entry_point",
                       horizon=HORIZON)
    kwargs = {"epsilon": 1.0} if agents.spec(name).private else {}
    per_round, blocked = (agents.make(name, env=env, seed=5, **kwargs) for _ in range(2))
    base = env.unwrapped
    core = base.core
    first, _ = env.reset(seed=3)
    t = 0
    for k in (1, 7, 16, 2, 30, 4):
        block = base.next_block(k)
        want = np.empty((k, runs), dtype=np.int64)
        _bandit_block_actions(core, [per_round], [(0, runs)], first, block, want)
        advice = None
        if not core.identity_advice:
            advice = block.advice.reshape(k, core.num_streams, core.n_experts, core.n_arms)
            advice = advice[:, core._rows]
        got = blocked.play_bandit_block(first, advice, block.losses, core._rows)
        assert _same(got, want), t
        first, *_ = base.step_block(got)
        t += k
    _assert_same_state(per_round, blocked)
