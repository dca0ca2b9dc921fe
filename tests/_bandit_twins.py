"""Twins for the bandit block tests: one learner plays round by round, its twin in blocks.

The block twin's losses are NaN except at the arms the round-by-round twin played (the bandit
block protocol: only the played arm's loss is read, after playing it); actions, state and the
next uniforms must be equal (``play_both``). Beside them the kernels' scaffolding: ``spy``
(count a function's calls), ``kernel_path`` (the compiled kernel or its Python form) and
``caught_then_passes`` (a planted block-only bug fails ``check_agent``'s paths check, a
harmless change passes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import agents

HORIZON = 48
RUNS, STREAMS = 4, 3
ROWS = np.array([0, 1, 2, 0])  # runs 0 and 3 share a loss stream
BLOCKINGS = {
    "mixed": (1, 5, 3, 8, 1, 12, 2, 16),
    "ones": (1,) * HORIZON,
    "whole": (HORIZON,),
}


def game(
    n: int, arms: int, dense: bool, seed: int, horizon: int = HORIZON
) -> tuple[np.ndarray, np.ndarray | None]:
    """(T, S, A) losses (a third coarse, with ties) and (T, B, N, A) advice or None."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 3, size=(horizon, STREAMS, arms)) / 2.0
    losses = np.where(rng.random((horizon, STREAMS, 1)) < 0.3, coarse,
                      rng.random((horizon, STREAMS, arms)))
    if not dense:
        return losses, None
    advice = rng.random((horizon, RUNS, n, arms)) ** 3
    return losses, advice / advice.sum(axis=-1, keepdims=True)


def obs_at(advice, n, t, action=None, loss=None) -> dict:
    """Round t's observation (identity advice when ``advice`` is None)."""
    adv = np.broadcast_to(np.eye(n), (RUNS, n, n)) if advice is None else advice[t]
    return {
        "advice": adv,
        "last_action": np.zeros(RUNS, np.int64) if action is None else action,
        "last_loss": np.zeros((RUNS, 1)) if loss is None else loss,
    }


def state(agent) -> dict:
    """Every array and plain number of the agent and of its core, and its next uniforms."""
    core = getattr(agent, "core", getattr(agent, "base_learner", None))
    out = {}
    owners = [(agent, "")] + ([] if core is None else [(core, "core.")])
    for owner, prefix in owners:
        for key, value in vars(owner).items():
            if isinstance(value, np.ndarray) or (
                isinstance(value, (int, float, bool)) and not isinstance(value, np.generic)
            ):
                out[prefix + key] = np.asarray(value)
    out["stream"] = agent.rng.random((3,))
    return out


def play_both(name, kwargs, n, arms, dense, blocks, seed=5) -> tuple:
    """A twin plays round by round, the other in ``blocks`` on NaN-poisoned losses: equal.

    Returns the two twins (round by round, in blocks) for further comparisons.
    """
    horizon = sum(blocks)
    per_round, blocked = (
        agents.make(name, n_experts=n, n_arms=arms, horizon=horizon, num_envs=RUNS, seed=11,
                    **kwargs)
        for _ in range(2)
    )
    losses, advice = game(n, arms, dense, seed, horizon)
    t, first = 0, obs_at(advice, n, 0)
    for k in blocks:
        want = []
        obs = first
        for i in range(k):
            a = per_round.act(obs)
            want.append(a)
            obs = obs_at(advice, n, min(t + i + 1, horizon - 1), a.copy(),
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
    a, b = state(per_round), state(blocked)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key
    return per_round, blocked


def spy(monkeypatch, owner: Any, attr: str) -> list:
    """Count the calls of ``owner.attr`` (it still runs): one item per call in the list."""
    calls: list = []
    original = getattr(owner, attr)
    monkeypatch.setattr(owner, attr, lambda *a, **kw: calls.append(1) or original(*a, **kw))
    return calls


def kernel_path(
    param: str, monkeypatch, module: Any, ready: str, run: str, compiled: Callable[[], bool]
) -> list:
    """A ``path`` fixture's set-up: ``module.run`` compiled, or as its Python form (``"python"``).

    The compiled path is skipped unless ``compiled()``; the Python form is made ready
    (``module.ready`` true). Returns the spy on ``module.run``: the fixture asserts it ran.
    """
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)
    if param == "compiled":
        if not compiled():
            pytest.skip("numba or the loops are unavailable")
    else:
        monkeypatch.setattr(module, ready, lambda: True)
        python_form = functools.partial(getattr(module, run), compiled=False)
        monkeypatch.setattr(module, run, python_form)
    return spy(monkeypatch, module, run)


def caught_then_passes(name: str, plant: Callable[[Any], None], mutant: Any, harmless: Any,
                       says: str = "differs from act") -> None:  # fmt: skip
    """``plant(mutant)`` fails ``check_agent``'s paths check on ``name`` (its message holding
    ``says``); ``plant(harmless)`` passes it."""
    from dp_experts_env.testing import ContractError, check_agent

    plant(mutant)
    with pytest.raises(ContractError) as err:
        check_agent(name, checks=["paths"])
    assert err.value.check == "paths" and says in str(err.value), str(err.value)
    plant(harmless)
    assert check_agent(name, checks=["paths"]).passed == ["paths"]
