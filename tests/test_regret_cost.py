"""Large S and N made explicit: the cost estimate, the refusal by name and the opt-out."""

from __future__ import annotations

import math
import tracemalloc
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import JIT_PATHS, use_jit_path

from dp_experts_env.envs.core import SlowRegretWarning
from dp_experts_env.regret import RegretTracker, regret_cost


def test_the_estimate_counts_the_table():
    cost = regret_cost(64, 1000, 4096, 10**5)
    assert cost.table_bytes == 64 * 4096 * 1000 * 8
    assert cost.entry_updates == 10**5 * 64 * 4097 * 1000
    assert cost.seconds > 0
    assert regret_cost(64, 1000, 4096, 10**5, dynamic=False).table_bytes == 0
    assert regret_cost(2, 10, 50, 20).table_bytes == 0  # S >= T - 1: no table needed


def test_a_table_that_does_not_fit_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_MAX_TABLE_BYTES", str(1 << 20))
    with pytest.raises(ValueError, match=r"n_switches=64, n_experts=1000.*dynamic_regret=False"):
        RegretTracker(4, 1000, 64, 10**4)
    with pytest.raises(ValueError, match="n_switches=4096, n_experts=1000"):
        gym.make_vec(
            "DPExperts-Shift-v0",
            num_envs=64,
            vectorization_mode="vector_entry_point",
            n_experts=1000,
            n_switches=4096,
            horizon=10**5,
        )
    # The opt-out builds it, and so does a table within the limit.
    env = gym.make_vec(
        "DPExperts-Shift-v0",
        num_envs=64,
        vectorization_mode="vector_entry_point",
        n_experts=1000,
        n_switches=4096,
        horizon=10**5,
        dynamic_regret=False,
    )
    assert env.unwrapped.core.tracker.state_nbytes() < 64 * 1000 * 8 * 8
    RegretTracker(4, 100, 64, 10**4)


def test_dynamic_regret_false_reports_nan_and_changes_nothing_else():
    kw = {"n_experts": 5, "horizon": 30, "n_shifts": 3}
    on, off = (
        gym.make("DPExperts-Shift-v0", **kw),
        gym.make("DPExperts-Shift-v0", dynamic_regret=False, **kw),
    )
    on.reset(seed=2)
    off.reset(seed=2)
    for t in range(30):
        a, b = on.step(t % 5), off.step(t % 5)
        assert np.array_equal(a[0], b[0]) and a[1] == b[1]
        assert math.isnan(b[4]["dynamic_regret"])
        for key in a[4]:
            if key != "dynamic_regret":
                assert a[4][key] == b[4][key], key
    with pytest.raises(TypeError, match="dynamic_regret"):
        gym.make("DPExperts-Shift-v0", dynamic_regret="no")


def test_a_slow_comparator_warns_before_the_episode(monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_MAX_TABLE_BYTES", "1e12")
    with pytest.warns(SlowRegretWarning, match=r"n_switches=1024, n_experts=10000.*CPU s"):
        gym.make("DPExperts-Shift-v0", n_experts=10_000, n_switches=1024, horizon=10**6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym.make("DPExperts-Shift-v0", n_experts=10, horizon=10**6)


@pytest.mark.parametrize("path", JIT_PATHS)
def test_n_1e4_and_s_1024_run_within_the_stated_memory(path, monkeypatch):
    """N = 10^4 experts, S = 1024 switches: an episode holds the table ``regret_cost`` states
    (78 MiB), not twice it (a reset frees the old table before allocating the new one)."""
    use_jit_path(path, monkeypatch)
    monkeypatch.setenv("DP_EXPERTS_MAX_TABLE_BYTES", "1e12")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowRegretWarning)
        warm = gym.make("DPExperts-Shift-v0", n_experts=1000, n_switches=100, horizon=10**4)
        warm.reset(seed=0)
        warm.step(0)  # imports and kernels outside the measurement
        tracemalloc.start()
        try:
            env = gym.make("DPExperts-Shift-v0", n_experts=10**4, n_switches=1024, horizon=10**4)
            cost = env.unwrapped.core.regret_cost
            env.reset(seed=0)
            for t in range(5):
                env.step(t % 10)
            env.reset(seed=1)
            env.step(0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert cost.table_bytes == 1024 * 10**4 * 8
    assert cost.table_bytes <= peak < cost.table_bytes + 4 * 2**20, peak / 2**20
