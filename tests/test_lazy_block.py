"""The lazy samplers' ``play_block`` against ``act`` round by round, float for float.

private-lazy-hedge, private-shrinking-dartboard and batched-private-shrinking-dartboard play a
block of K rounds in one kernel (:mod:`agents._lazy_kernel`). Here random block lengths (0 and 1
included, blocks that split a decision block, single ``act`` rounds in between, an episode that
ends in the middle of a decision block) are played by one agent and the same rounds by ``act``
on a twin; the actions and every array of the state (cumulative and block sums, held loss, held
expert, resamples, switches, the random stream) must be the same bytes after every segment, on
the compiled and the numpy paths. The "stress" settings raise the forced-resample probability
and the budget, so that most decisions move and the exponential mechanism's draw runs often.
"""

from __future__ import annotations

import numpy as np
import pytest
from _block_plans import mixed_losses, random_segments
from conftest import use_jit_path

import agents
from dp_experts_env.privacy.noise import ScaledBackend

NAMES = ("private-lazy-hedge", "private-shrinking-dartboard", "batched-private-shrinking-dartboard")
HORIZON = 41  # prime: every batch > 1 (3, 4, the calibrated ones) leaves the last block open
RUNS, EXPERTS = 3, 5

# name of the setting -> (agent keywords, attributes set on both twins after construction)
SETTINGS: dict[str, tuple[dict, dict]] = {
    "eps1": ({"epsilon": 1.0}, {}),
    "inf": ({"epsilon": float("inf")}, {}),
    "stress": ({"epsilon": 1.0}, {"p": 0.4, "max_resamples": 10**6}),
    "stress-batch3": ({"epsilon": 1.0}, {"p": 0.4, "max_resamples": 10**6, "batch": 3}),
    "budget2-batch4": ({"epsilon": 1.0}, {"p": 0.9, "max_resamples": 2, "batch": 4}),
    "audit-half": ({"epsilon": 1.0, "noise": ScaledBackend("fast", 0.5)}, {"p": 0.4}),
    "audit-off": ({"epsilon": 1.0, "noise": ScaledBackend("fast", 0.0)}, {"p": 0.4}),
}


def _losses(seed: int) -> np.ndarray:
    return mixed_losses(seed, HORIZON, RUNS, EXPERTS)


def _segments(seed: int) -> list[tuple[str, int]]:
    return random_segments(seed, HORIZON, 0.25, [0, 1, 2, 3, 5, 7, 11])


def _state(agent) -> dict[str, bytes]:
    return {
        key: np.asarray(value).tobytes() + str(np.asarray(value).dtype).encode()
        for key, value in vars(agent).items()
        if isinstance(value, (np.ndarray, int, float, bool))
    }


def _twins(name: str, setting: str, seed: int, run_epsilons: bool):
    kwargs, attrs = SETTINGS[setting]
    twins = [
        agents.make(name, n_experts=EXPERTS, horizon=HORIZON, num_envs=RUNS, seed=seed, **kwargs)
        for _ in range(2)
    ]
    for agent in twins:
        # The batched dartboard refuses epsilons whose block sizes differ: a closer triple.
        if run_epsilons and not any(
            agent.set_run_epsilons(e) for e in ([0.5, 2.0, 8.0], [1.0, 1.5, 2.0])
        ):
            pytest.skip(f"{name} refuses these per-run epsilons (block sizes differ)")
        for key, value in attrs.items():
            setattr(agent, key, value)
        agent.reset(seed)
    return twins


def _use_path(monkeypatch, jit: bool) -> None:
    use_jit_path("compiled" if jit else "numpy", monkeypatch)


CASES = [
    (name, setting, False) for name in NAMES for setting in SETTINGS
] + [(name, "eps1", True) for name in NAMES] + [(name, "stress", True) for name in NAMES]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize(
    ("name", "setting", "run_epsilons"),
    CASES,
    ids=[f"{n}-{s}{'-per-run' if r else ''}" for n, s, r in CASES],
)
def test_blocks_equal_act_round_by_round(monkeypatch, jit, name, setting, run_epsilons):
    _use_path(monkeypatch, jit)
    moved = decisions = 0
    for seed in range(3):
        per_round, blocked = _twins(name, setting, seed, run_epsilons)
        obs = _losses(seed)
        t = 0
        for kind, k in _segments(seed):
            want = np.array([per_round.act(obs[t + i]) for i in range(k)], dtype=np.int64)
            want = want.reshape(k, RUNS)
            if kind == "act":
                got = np.asarray(blocked.act(obs[t]))[None]
            else:
                got = blocked.play_block(obs[t : t + k])
                assert got.dtype == np.int64 and got.shape == (k, RUNS)
            assert got.tobytes() == want.tobytes(), (seed, t, kind, k)
            t += k
            assert _state(blocked) == _state(per_round), (seed, t)
        assert t == HORIZON
        assert blocked.rng.random((4,)).tobytes() == per_round.rng.random((4,)).tobytes()
        moved += int(np.sum(blocked.resamples))
        decisions += RUNS * ((HORIZON - 1) // blocked.batch)
    if setting.startswith("stress"):
        # The exponential mechanism's draw ran often (a control: the kernel's resample branch;
        # forced resamples alone have probability 0.4 per decision).
        assert moved >= 0.2 * decisions > 0


def test_the_stress_settings_split_batches_and_end_mid_batch():
    """A control on the cases above: blocks that split a decision block, an unfinished one."""
    assert HORIZON % 3 and HORIZON % 4
    for name in NAMES:  # the calibrated blocks too
        agent = agents.make(name, n_experts=EXPERTS, horizon=HORIZON, num_envs=RUNS, epsilon=1.0)
        assert agent.batch == 1 or HORIZON % agent.batch, name
    lengths = [k for seed in range(3) for kind, k in _segments(seed) if kind == "block"]
    assert 0 in lengths and 1 in lengths and any(k % 3 for k in lengths if k > 1)


def test_a_changed_float_would_show(monkeypatch):
    """A negative control: the state comparison sees the last bit of one cumulative loss."""
    _use_path(monkeypatch, jit=False)
    per_round, blocked = _twins("private-lazy-hedge", "eps1", 0, False)
    obs = _losses(0)
    blocked.play_block(obs[:5])
    for i in range(5):
        per_round.act(obs[i])
    assert _state(blocked) == _state(per_round)
    blocked.cum_loss[1, 2] = np.nextafter(blocked.cum_loss[1, 2], 10.0)
    assert _state(blocked) != _state(per_round)
