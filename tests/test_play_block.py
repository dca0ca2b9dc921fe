"""``play_block`` against K calls of ``act``: the same actions, state and random stream.

Every registered learner that has ``play_block`` is found by lookup and played on the compiled
and the numpy paths (``DP_EXPERTS_NO_JIT``), at the default epsilons of a private learner too,
in uneven blocks, then a few more rounds with ``act`` on both (a stream consumed differently
would show there).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import use_jit_path

import agents

ROOT = Path(__file__).resolve().parents[1]
HORIZON = 40
BLOCKS = (1, 6, 13, 2, 9)  # 31 rounds in blocks, then 9 more with act


def block_learners() -> list[str]:
    """Full-information learners with ``play_block`` (OCO ones: tests/test_oco_play_block.py)."""
    return sorted(
        item["name"]
        for item in agents.available()
        if callable(getattr(agents.spec(item["name"]).cls, "play_block", None))
        and agents.spec(item["name"]).feedback != "oco"
    )


def _env(num_envs: int, n_experts: int = 5):
    return gym.make_vec(
        "DPExperts-Shift-v0",
        num_envs=num_envs,
        vectorization_mode="vector_entry_point",
        n_experts=n_experts,
        horizon=HORIZON,
        n_shifts=2,
    )


def _losses(runs: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Coarse values (ties for FTL's leaders and the argmins) mixed with fine ones.
    coarse = rng.integers(0, 3, size=(HORIZON, runs, n)) / 2.0
    fine = rng.random((HORIZON, runs, n))
    return np.where(rng.random((HORIZON, runs, 1)) < 0.5, coarse, fine)


def _state(agent) -> dict:
    out = {}
    for key, value in vars(agent).items():
        if isinstance(value, np.ndarray):
            out[key] = value
        elif isinstance(value, (int, float, bool)):
            out[key] = value
    out["stream"] = agent.rng.random((3,))  # the next uniforms of every run
    return out


def _same(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.tobytes() == y.tobytes()


#: Keywords a learner needs here besides the game's: PPO trains first (keep it short).
EXTRA = {"ppo": {"timesteps": 256}}


def _pair(name: str, epsilon: float | None, runs: int = 3):
    if name == "ppo":
        pytest.importorskip("stable_baselines3")
    kwargs = {} if epsilon is None else {"epsilon": epsilon}
    kwargs.update(EXTRA.get(name, {}))
    env = _env(runs)
    return [agents.make(name, env=env, seed=17, **kwargs) for _ in range(2)]


def _epsilons(name: str) -> list[float | None]:
    return [1.0, math.inf] if agents.spec(name).private else [None]


CASES = [(name, eps) for name in block_learners() for eps in _epsilons(name)]


def test_the_default_comparisons_baselines_have_play_block():
    assert {"uniform", "follow-the-leader", "hedge", "fixed-share", "shrinking-dartboard"} <= set(
        block_learners()
    )


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize(("name", "epsilon"), CASES, ids=[f"{n}-{e}" for n, e in CASES])
def test_play_block_equals_act(monkeypatch, jit, name, epsilon):
    use_jit_path("compiled" if jit else "numpy", monkeypatch)
    per_round, blocked = _pair(name, epsilon)
    obs = _losses(per_round.num_envs, per_round.n_experts, seed=len(name))
    t = 0
    for k in BLOCKS:
        want = np.stack([per_round.act(obs[t + i]) for i in range(k)])
        got = blocked.play_block(obs[t : t + k])
        assert got.dtype == np.int64 and _same(got, want), (name, t)
        assert blocked.t == per_round.t == t + k
        t += k
    for i in range(t, HORIZON):
        assert _same(blocked.act(obs[i]), per_round.act(obs[i])), (name, i)
    a, b = _state(per_round), _state(blocked)
    assert a.keys() == b.keys()
    for key in a:
        assert _same(a[key], b[key]), (name, key)


@pytest.mark.parametrize("name", block_learners())
def test_play_block_checks_like_act(name):
    agent = _pair(name, 1.0 if agents.spec(name).private else None)[0]
    obs = _losses(agent.num_envs, agent.n_experts, 0)[:5]
    obs[3, 1, 2] = 1.5
    with pytest.raises(ValueError, match="round 4"):
        agent.play_block(obs)
    with pytest.raises(ValueError, match=r"shape \(K, 3, 5\)"):
        agent.play_block(obs[:, :2])
    agent.play_block(_losses(agent.num_envs, agent.n_experts, 0)[: HORIZON - 1])
    with pytest.raises(ValueError, match="horizon"):
        agent.play_block(_losses(agent.num_envs, agent.n_experts, 0)[:2])


#: pytest plug-ins the lock files never use, not loaded in their subprocesses (hypothesis's
#: imports hypothesis, ~0.3 s a process); blocking one that is not installed is a no-op.
NO_UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")


@pytest.mark.slow
def test_the_locks_hold_on_the_numpy_path():
    """The learner and env locks' numpy half in a process with the JIT switched off from its
    start (the block and kernel tests are parametrised over both paths in-process; the locks'
    compiled half ran in this process already). Left out there: the share's control
    (``test_a_recording_is_shared_...``), which switches its process to the compiled path
    (importing numba) and runs in this process."""
    env = dict(os.environ, DP_EXPERTS_NO_JIT="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    tests = ["tests/test_learner_lock.py", "tests/test_env_lock.py"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-m",
            "not slow",
            "-k",
            "not compiled and not recording_is_shared",
            "-p",
            "no:cacheprovider",
            *NO_UNUSED_PLUGINS,
            *tests,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_kernels_give_numpys_floats(monkeypatch, jit):
    """numpy's pairwise sum and the clipped projection, float for float, at many sizes."""
    from agents import _kernels
    from agents.noisy_clipped_hedge import clip_project

    if jit:
        pytest.importorskip("numba")
        monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    else:
        monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    rng = np.random.default_rng(3)
    for n in [*range(1, 20), 31, 64, 127, 128, 129, 300, 1000]:
        rows = rng.random((4, n)) * 10.0 ** rng.integers(-8, 8, size=(4, n))
        got = [_kernels.numpy_sum(r, 0, n) for r in rows]
        assert _same(np.array(got), rows.sum(axis=1)), n
        log_v = rng.normal(scale=3.0, size=(6, n))
        for floor in (0.5 / n, 0.9 / n, 1e-3 / n):
            want = clip_project(log_v, floor)
            v = np.exp(log_v - log_v.max(axis=1, keepdims=True))
            out = np.empty_like(v)
            _kernels.clip_peel(v, floor, out, np.empty(n))
            assert _same(out, want), (n, floor)
