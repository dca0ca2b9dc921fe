"""The OCO learners' ``play_block`` against ``act`` round by round, float for float.

Every registered OCO learner (found by lookup), box and ball, one and several coordinates, at
epsilon 1 and inf, on the compiled and numpy paths: the points, the whole state (trees
included), the random stream and the drawn Laplace noise after each block of uneven sizes
(:func:`dp_experts_env.evaluation.paths.compare_paths`). P-COMW's chain is decided by a kernel
whose dot product is not numpy's and confirmed by numpy (:func:`agents._oco_kernels.pcomw_path`):
a kernel that decides wrongly must still give act's points (the confirmation replays it), and
the same wrong kernel without the confirmation must be caught.
"""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
from conftest import use_jit_path

import agents
import agents._oco_kernels as oco_kernels
import agents.p_comw as p_comw
from dp_experts_env.evaluation.paths import compare_paths
from dp_experts_env.testing import ContractError, check_agent

OCO = sorted(e["name"] for e in agents.available() if agents.spec(e["name"]).feedback == "oco")
HORIZON, RUNS = 60, 3
BLOCKS = (1, 6, 13, 2, 9, 3, 17, 5)


def _gradients(family: str, body: str, dim: int, seed: int = 5) -> tuple[object, np.ndarray]:
    env = gym.make_vec(
        "DPExperts-OCO-v0",
        num_envs=RUNS,
        vectorization_mode="vector_entry_point",
        family=family,
        body=body,
        dim=dim,
        horizon=HORIZON,
    )
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = [np.array(obs, dtype=np.float64)]
    for _ in range(HORIZON - 1):  # points played at random: the families are oblivious
        obs, *_ = env.step(rng.uniform(-0.5, 0.5, (RUNS, dim)))
        out.append(np.array(obs, dtype=np.float64))
    return env, np.stack(out)


def _compare(name, env, grads, **params):
    def make():
        return agents.make(name, env=env, seed=[3, 4, 5], **params)

    return compare_paths(make, horizon=HORIZON, gradients=grads, blocks=BLOCKS)


CASES = [
    (name, eps, body, dim)
    for name in OCO
    for eps in ([1.0, float("inf")] if agents.spec(name).private else [None])
    for body, dim in (("box", 3), ("ball", 3), ("box", 1))
]


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize(("name", "epsilon", "body", "dim"), CASES)
def test_play_block_equals_act(monkeypatch, path, name, epsilon, body, dim):
    use_jit_path(path, monkeypatch)
    env, grads = _gradients("stochastic" if dim > 1 else "rademacher", body, dim)
    params = {} if epsilon is None else {"epsilon": epsilon}
    report = _compare(name, env, grads, **params)
    assert report.method == "play_block"
    assert report.equal, f"{name} {body} d={dim}: {report.describe()}"


#: Settings where the chains move often (many switches, the budget binding) or the noise is
#: reweighted: where a kernel's recursion has the most to get wrong.
BUSY = [
    ("p-comw-lazy", {"switch_budget": 40}),
    ("p-comw", {"epsilon": 50.0}),
    ("p-comw", {"epsilon": 1.0, "noise_multiplier": 0.5}),
    ("p-comw", {"epsilon": 1.0, "noise_multiplier": 0.0}),
    ("dp-ftrl-oco", {"epsilon": 1.0, "law": "gaussian"}),
    ("dp-ftrl-oco", {"epsilon": 1.0, "noise": "grid"}),
    ("dp-ftrl-oco", {"epsilon": 1.0, "noise_multiplier": 0.0}),
    ("gaussian-dp-ftrl-oco", {"epsilon": 1.0, "noise_multiplier": 0.0}),
    ("lazy-ftrl-oco", {"switch_budget": 0}),
    ("ogd", {"step": 3.0}),
]


@pytest.mark.parametrize(("name", "params"), BUSY, ids=[f"{n}-{p}" for n, p in BUSY])
def test_play_block_equals_act_where_the_recursion_is_busy(monkeypatch, name, params):
    use_jit_path("compiled", monkeypatch)
    env, grads = _gradients("anti_ftl", "box", 4)
    report = _compare(name, env, grads, **params)
    assert report.equal, report.describe()
    if name == "p-comw-lazy":  # the chain moved: a real test of the recursion
        agent = agents.make(name, env=env, seed=[3, 4, 5], **params)
        agent.play_block(grads)
        assert agent.switches.min() >= 5


def _biased_rounds(g, dz, coins, fresh, start, beta, log_phi, p, budget, first, forced, state):
    """The chain's kernel deciding on a wrong ``log r`` (shifted by 0.7): most coins differ."""
    return _rounds(g, dz + 0.7, coins, fresh, start, beta, log_phi, p, budget, first, forced, state)


_rounds = oco_kernels.pcomw_rounds
_path = oco_kernels.pcomw_path


def _unconfirmed_path(g, dz, coins, fresh, start, params, first, state):
    """The mutant: the biased kernel's path taken without numpy's confirmation."""
    beta, log_phi, p, budget = params
    forced = np.full(dz.shape, -1, dtype=np.int8)
    src, _ = _biased_rounds(g, dz, coins, fresh, start, beta, log_phi, p, budget, first, forced,
                            state)  # fmt: skip
    cols = np.arange(dz.shape[1])
    points = np.where((src >= 0)[..., None], fresh[np.maximum(src, 0), cols], start)
    return points, np.zeros(dz.shape)


def test_a_wrong_chain_kernel_is_corrected_by_the_confirmation(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    env, grads = _gradients("anti_ftl", "box", 4)
    monkeypatch.setattr(oco_kernels, "pcomw_rounds", _biased_rounds)
    for name, params in [("p-comw-lazy", {"switch_budget": 40}), ("p-comw", {"epsilon": 50.0})]:
        assert _compare(name, env, grads, **params).equal, name


def test_a_wrong_chain_without_the_confirmation_is_caught(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    monkeypatch.setattr(p_comw, "pcomw_path", _unconfirmed_path)
    with pytest.raises(ContractError, match=r"play_block \(compiled path\) differs from act"):
        check_agent("p-comw-lazy", checks=["paths"], params={"switch_budget": 20})


def test_play_block_checks_like_act():
    env, grads = _gradients("stochastic", "box", 3)
    agent = agents.make("p-comw", env=env, seed=1, epsilon=1.0)
    bad = grads[:5].copy()
    bad[3, 1] *= 3.0  # longer than G
    with pytest.raises(ValueError, match="obs for round 4: gradients must be finite"):
        agent.play_block(bad)
    bad[3, 1, 0] = np.nan
    with pytest.raises(ValueError, match="round 4"):
        agent.play_block(bad)
    with pytest.raises(ValueError, match=r"shape \(K, 3, 3\)"):
        agent.play_block(grads[:4, :2])
    with pytest.raises(TypeError, match="gradient observations"):
        agent.play_block({"g": grads})
    assert agent.t == 0 and agent.play_block(grads[:0]).shape == (0, 3, 3)
    agent.play_block(grads[: HORIZON - 1])
    with pytest.raises(ValueError, match="horizon"):
        agent.play_block(grads[:2])


@pytest.mark.parametrize("name", OCO)
def test_the_compiled_path_never_falls_back_to_the_hooks_on_the_box(monkeypatch, name):
    """On the default geometry (box, d >= 2, fast noise) every learner's own block code runs."""
    use_jit_path("compiled", monkeypatch)

    def refuse(agent, grads):
        raise AssertionError(f"{agent.name} played its block round by round")

    for module in ("agents.oco_baselines", "agents.oco_fair", "agents.p_comw"):
        monkeypatch.setattr(f"{module}.oco_hook_loop", refuse, raising=False)
    env, grads = _gradients("stochastic", "box", 3)
    params = {"epsilon": 1.0} if agents.spec(name).private else {}
    agent = agents.make(name, env=env, seed=[3, 4, 5], **params)
    assert agent.play_block(grads).shape == (HORIZON, RUNS, 3)


class _OwnAct(agents.spec("ogd").cls):
    """A plug-in OCO learner with its own ``act`` (half of OGD's point): that act is its law."""

    def act(self, obs):
        return 0.5 * super().act(obs)


class _OwnLearn(agents.spec("ftrl-oco").cls):
    """A plug-in overriding a hook: ftrl-oco on twice the gradients."""

    def _learn(self, g):
        self.cum += 2.0 * g


@pytest.mark.parametrize("cls", [_OwnAct, _OwnLearn], ids=["own-act", "own-learn"])
def test_a_subclass_s_own_act_or_hooks_are_what_its_block_plays(monkeypatch, cls):
    use_jit_path("compiled", monkeypatch)
    env, grads = _gradients("stochastic", "box", 3)
    kw = {"dim": 3, "horizon": HORIZON, "num_envs": RUNS, "seed": 1}
    report = compare_paths(lambda: cls(**kw), horizon=HORIZON, gradients=grads, blocks=BLOCKS)
    assert report.equal, report.describe()
    # and the block differs from the parent's: the subclass's law is really the one played
    parent = cls.__mro__[1](**kw)
    ours = cls(**kw)
    assert not np.array_equal(ours.play_block(grads[:9]), parent.play_block(grads[:9]))


@pytest.mark.parametrize("name", OCO)
def test_a_block_played_in_parts_equals_act(monkeypatch, name):
    """``play_block`` hands ``_block`` parts of at most ``PART_ELEMENTS`` doubles: here 2 rounds."""
    import agents._oco as oco

    use_jit_path("compiled", monkeypatch)
    monkeypatch.setattr(oco, "PART_ELEMENTS", 2 * RUNS * 3)
    env, grads = _gradients("shifting", "box", 3)
    params = {"epsilon": 1.0} if agents.spec(name).private else {}
    report = _compare(name, env, grads, **params)
    assert report.equal, report.describe()


def test_a_long_block_s_temporaries_stay_small(monkeypatch):
    """P-COMW's block path makes ~15 arrays of the block's size: parts keep them a few MB."""
    import tracemalloc

    use_jit_path("compiled", monkeypatch)
    agent = agents.make("p-comw", dim=5, horizon=9000, num_envs=25, seed=1, epsilon=1.0)
    grads = np.random.default_rng(0).uniform(-1, 1, (8192, 25, 5)) / 3  # 7.8 MB, as a grid's
    agent.play_block(grads[:2])  # kernels compiled or loaded outside the measure
    tracemalloc.start()
    try:
        agent.play_block(grads[2:])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * grads.nbytes, f"{peak / 2**20:.0f} MB"  # 146 MB in one part, 27 in parts


# ----------------------------------------------------------------------------- planted bugs
import agents.oco_baselines as oco_baselines  # noqa: E402
from dp_experts_env import samplers  # noqa: E402

_laplace = samplers.laplace
_ogd_rounds = oco_kernels.ogd_box_rounds


def _plant(monkeypatch, function, fn):
    """oco_baselines' ``function`` replaced; ``"samplers.laplace"``: the law as it sees it."""
    if function == "samplers.laplace":
        view = types.SimpleNamespace(**{**vars(samplers), "laplace": fn})
        monkeypatch.setattr(oco_baselines, "samplers", view)
    else:
        monkeypatch.setattr(oco_baselines, function, fn)


def _half_noise(u, scale):
    return _laplace(u, 0.5 * np.asarray(scale))


def _shrunk_box(g, point, step, radius, learn_first, out):
    return _ogd_rounds(g, point, step, 0.9 * radius, learn_first, out)


def _ogd_on_copies(g, point, step, radius, learn_first, out):
    return _ogd_rounds(np.array(g), point, float(step), float(radius), bool(learn_first), out)


def _laplace_as_array(u, scale):
    return _laplace(u, np.array(scale, dtype=np.float64))


@pytest.mark.parametrize(
    ("name", "function", "bug", "says"),
    [
        ("dp-ftrl-oco", "samplers.laplace", _half_noise, "at round 2: actions"),
        ("ogd", "ogd_box_rounds", _shrunk_box, "actions"),
    ],
)
def test_a_kernel_only_bug_in_an_oco_block_path_fails_the_paths_check(
    monkeypatch, name, function, bug, says
):
    use_jit_path("compiled", monkeypatch)
    _plant(monkeypatch, function, bug)
    with pytest.raises(ContractError) as err:
        check_agent(name, checks=["paths"])
    assert says in str(err.value) and "differs from act at round " in str(err.value)


@pytest.mark.parametrize(
    ("name", "function", "change"),
    [
        ("dp-ftrl-oco", "samplers.laplace", _laplace_as_array),
        ("ogd", "ogd_box_rounds", _ogd_on_copies),
    ],
)
def test_a_harmless_change_in_an_oco_block_path_passes(monkeypatch, name, function, change):
    use_jit_path("compiled", monkeypatch)
    _plant(monkeypatch, function, change)
    assert check_agent(name, checks=["paths"]).passed == ["paths"]
