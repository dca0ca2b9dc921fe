"""svt-restart's compiled block play (agents/_svt_kernels.py) against K calls of ``act``.

Bit for bit: the actions, every array of the agent's state, the detector's state and the next
uniforms of both random streams, over uneven blocks (restarts inside them), epsilons finite,
infinite and per run, both calibrated boundaries, strict and paper modes, a restart cap, both
window grids (the "all" grid compiled with the n-only slack, through the hooks with a
Bernstein/betting one), on the compiled path, the numpy path
(``DP_EXPERTS_NO_JIT``) and the kernel's Python form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import use_jit_path

import agents._svt_kernels as svt_kernels
from agents.svt_restart import SVTRestart
from dp_experts_env._jit import numba_available

HORIZON, RUNS, N = 360, 4, 4
BLOCKS = (1, 5, 97, 2, 160, 60, 35)  # 360 rounds


def _losses(seed: int = 0) -> np.ndarray:
    """Bernoulli losses whose best expert changes every 60 rounds (restarts), mixed with
    uniform ones (non-integer window sums)."""
    g = np.random.default_rng(seed)
    means = np.full((HORIZON // 60, RUNS, N), 0.8)
    for s in range(HORIZON // 60):
        means[s, :, s % N] = 0.05
    per_round = means[np.arange(HORIZON) // 60]
    coin = (g.random((HORIZON, RUNS, N)) < per_round).astype(float)
    return np.where(g.random((HORIZON, RUNS, 1)) < 0.8, coin, g.random((HORIZON, RUNS, N)))


def _agent(kw: dict) -> SVTRestart:
    kw = dict(kw)
    run_eps = kw.pop("run_epsilons", None)
    with pytest.warns(UserWarning) if kw.get("mode") == "paper" else _nothing():
        agent = SVTRestart(N, HORIZON, num_envs=RUNS, seed=[3, 1, 4, 1], **kw)
    if run_eps is not None:
        assert agent.set_run_epsilons(run_eps)
    return agent


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


#: act's numpy path computes its query in these buffers; the compiled paths do not use them
SCRATCH = ("_diff_buf", "_second_buf", "_bound_buf", "_term_buf", "_window_buf", "_dterm_buf")


def _assert_same(a: SVTRestart, b: SVTRestart, skip: tuple[str, ...] = ()) -> None:
    for key, value in vars(a).items():
        if key in skip:
            continue
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(b, key), value, err_msg=key)
        elif isinstance(value, (int, float, bool)) and key != "_selection_of":
            assert getattr(b, key) == value, key
    for key in ("_noisy_threshold", "halted", "n_tops"):
        np.testing.assert_array_equal(getattr(b.detector, key), getattr(a.detector, key), key)
    np.testing.assert_array_equal(b.rng.random((3,)), a.rng.random((3,)))
    runs = np.arange(RUNS)
    np.testing.assert_array_equal(b._selection.take(runs, 3), a._selection.take(runs, 3))


CASES = [
    {},
    {"epsilon": math.inf},
    {"epsilon": 0.3},
    {"boundary": "bernstein"},
    {"boundary": "bernstein", "epsilon": math.inf},
    {"mode": "paper"},
    {"max_restarts": 1, "epsilon": math.inf},
    {"threshold_scale": 1.7, "epsilon": 4.0},
    {"run_epsilons": [0.5, 1.0, 2.0, 8.0]},
    {"run_epsilons": [0.5, 1.0, 2.0, 8.0], "boundary": "bernstein"},
    {"window_grid": "all"},
    # the all-windows grid with the n-only slack (svt-restart:paper's): compiled blocks too
    {"window_grid": "all", "tuning": "paper", "threshold_scale": 0.05},
    {"window_grid": "all", "tuning": "paper", "threshold_scale": 0.05, "mode": "paper"},
    {"window_grid": "all", "tuning": "paper", "epsilon": math.inf, "max_restarts": 2},
    {
        "window_grid": "all",
        "boundary": "normal-mixture",
        "threshold_scale": 0.1,
        "run_epsilons": [0.5, 1.0, 2.0, 8.0],
    },
]


def _play(kw: dict, blocks: tuple[int, ...], obs: np.ndarray) -> tuple[SVTRestart, SVTRestart]:
    ref, blk = _agent(kw), _agent(kw)
    expected = np.array([ref.act(o) for o in obs])
    got, i = [], 0
    for k in blocks:
        got.append(blk.play_block(obs[i : i + k]))
        i += k
    np.testing.assert_array_equal(np.concatenate(got), expected)
    return ref, blk


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
@pytest.mark.parametrize("kw", CASES, ids=[str(c) for c in CASES])
def test_compiled_block_equals_act(kw: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    use_jit_path("compiled", monkeypatch)  # its own path: CI's numpy pass need not repeat it
    obs = _losses()
    for blocks in (BLOCKS, (HORIZON,), (7,) * 51 + (3,)):
        ref, blk = _play(kw, blocks, obs)
        _assert_same(ref, blk)
    # every case but the all-windows grid with a Bernstein/betting query plays compiled
    all_bernstein = kw.get("window_grid") == "all" and blk._bernstein
    assert svt_kernels.block_supported(blk) == (not all_bernstein)
    if kw.get("window_grid") == "all" and not all_bernstein:
        assert ref.restarts.sum() >= RUNS  # restarts inside blocks (slack-table growth too)
    if not math.isfinite(kw.get("epsilon", 1.0)):
        # restarts happened, at rounds inside the blocks too (a known answer of these losses)
        assert ref.restarts.sum() >= RUNS


PYTHON_FORM_CASES = CASES[:7] + CASES[8:9] + CASES[11:]


@pytest.mark.parametrize("kw", PYTHON_FORM_CASES, ids=[str(c) for c in PYTHON_FORM_CASES])
def test_python_form_block_equals_act(kw: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel run as Python (no JIT) gives the same as act's numpy path."""
    use_jit_path("numpy", monkeypatch)
    real = svt_kernels.block_supported
    monkeypatch.setattr(
        svt_kernels,
        "block_supported",
        lambda agent: (agent.window_grid == "dyadic") == agent._bernstein or real(agent),
    )
    ref, blk = _play(kw, BLOCKS, _losses(1))
    # act's numpy path does not use the compiled query's output buffer, nor the kernel its own
    _assert_same(ref, blk, skip=(*SCRATCH, "_query_out"))


def test_numpy_path_plays_the_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the JIT the block falls back to the hooks (and still equals act)."""
    use_jit_path("numpy", monkeypatch)
    ref, blk = _play({}, (10, 50, 300), _losses(2))
    assert not svt_kernels.block_supported(blk)
    _assert_same(ref, blk)


def test_restarts_inside_blocks() -> None:
    """A control: the losses make the exact detector fire at rounds inside a long block."""
    agent = _agent({"epsilon": math.inf})
    before = agent.restarts.copy()
    agent.play_block(_losses()[:200])
    assert (agent.restarts > before).all()
    assert (agent.epoch_start > 1).all() and (agent.epoch_start < 200).all()


def test_block_checks_losses() -> None:
    agent = _agent({})
    bad = _losses()[:5].copy()
    bad[3, 1, 2] = 1.5
    with pytest.raises(ValueError, match="round 4"):
        agent.play_block(bad)


def test_replaced_hook_plays_the_hooks() -> None:
    """A subclass that replaces a hook the kernel does (here the query) is played by its hooks."""
    calls = []

    class Counting(SVTRestart):
        def _bernstein_query_dyadic(self) -> np.ndarray:
            calls.append(self.t)
            return super()._bernstein_query_dyadic()

    agent = Counting(N, HORIZON, num_envs=RUNS, seed=[3, 1, 4, 1])
    assert not svt_kernels.block_supported(agent)
    agent.play_block(_losses()[:20])
    assert calls == list(range(1, 20))


def test_a_replaced_choice_plays_the_hooks() -> None:
    """The kernel also makes act's choice: a subclass choosing otherwise is played by its hooks
    when play_block is called directly (the episode loop's guard, dp_experts_env.block_entry,
    already plays it through act), with act's actions."""

    class Stubborn(SVTRestart):
        def _choose(self, obs: np.ndarray) -> np.ndarray:
            return np.zeros(self.num_envs, dtype=np.int64)

    agent = Stubborn(N, HORIZON, num_envs=RUNS, seed=[3, 1, 4, 1])
    assert not svt_kernels.block_supported(agent)
    assert (agent.play_block(_losses()[:20]) == 0).all()
