"""Path equivalence (``check_agent``'s ``paths`` check, :mod:`dp_experts_env.evaluation.paths`).

Users' runs play a learner's block entry point (compiled kernels when numba is present); the
audit plays ``act``. Every learner of the registry (found by lookup) must give equal actions,
state, random stream and drawn Laplace noise on both paths; a kernel-only bug planted in a
built-in learner -- its ``act`` untouched, its printed claim unchanged -- must fail the check
with its first differing round named. Harmless kernel changes (the same floats computed another
way) must pass.
"""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest
from conftest import use_jit_path

import agents
import agents._bandit_kernels as bandit_kernels
import agents._kernels as kernels
import agents._lazy_kernel as lazy_kernel
import agents._svt_kernels as svt_kernels
import agents.meta_expert as meta_expert
import agents.noisy_clipped_hedge as noisy_clipped_hedge
import agents.private_exp4 as private_exp4
from agents.ucb import UCB1
from dp_experts_env import samplers
from dp_experts_env.batch_rng import BatchRNG, laplace_tap
from dp_experts_env.evaluation import paths
from dp_experts_env.testing import ContractError, check_agent, path_reports

NAMES = [item["name"] for item in agents.available() if item["name"] != "ppo"]
_laplace = samplers.laplace


@contextlib.contextmanager
def _patched(module, name, fn):
    """``module.name`` replaced by ``fn``; ``"samplers.laplace"``: the law as ``module`` sees it
    (its own view of :mod:`dp_experts_env.samplers`, so only that module's draws change)."""
    if "." in name:
        name, law = name.split(".")
        fn = types.SimpleNamespace(**{**vars(getattr(module, name)), law: fn})
    old = getattr(module, name)
    setattr(module, name, fn)
    try:
        yield
    finally:
        setattr(module, name, old)


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("name", NAMES)
def test_every_learner_s_paths_agree(monkeypatch, path, name):
    use_jit_path(path, monkeypatch)
    found = path_reports(name)
    assert found, name
    for label, report in found:
        assert report.equal, f"{name} ({label}): {report.describe()}"
    cls = agents.spec(name).cls
    blocks = callable(getattr(cls, "play_block", None)) or callable(
        getattr(cls, "play_bandit_block", None)
    )
    # A learner with a block entry point is compared on it (not skipped as "act only").
    assert (found[0][1].method is not None) == blocks or agents.spec(name).feedback == "oco"


# ----------------------------------------------------------------------------- planted bugs
def _half_scale(u, scale):
    return _laplace(u, 0.5 * np.asarray(scale))


def _zero_scale(u, scale):
    return _laplace(u, 0.0 * np.asarray(scale))


def _one_draw_per_block(u, scale):
    out = _laplace(u, scale)
    out[:] = out[:1]  # every round of the block gets the first round's noise
    return out


def _tree_without_upper_noise(x, noise, exact, noisy, t0, out):
    noise = np.array(noise)
    for i in range(noise.shape[0]):
        if (t0 + i + 1) % 2 == 0:  # the node released at t has level >= 1 when t is even
            noise[i] = 0.0
    return _tree_block(x, noise, exact, noisy, t0, out)


_tree_block = kernels.tree_block
_lazy_rounds = lazy_kernel.lazy_rounds
_bandit_laplace = samplers.laplace


def _one_more_resample(*args):
    args = list(args)
    args[12] = args[12] + 1  # max_resamples: the budget off by one
    return _lazy_rounds(*args)


_one_more_resample.py_func = lambda *a: _lazy_rounds.py_func(  # type: ignore[attr-defined]
    *a[:12], a[12] + 1, *a[13:]
)


def _bandit_half_scale(u, scale):
    return _bandit_laplace(u, 0.5 * scale)


#: (learner, module, function, planted replacement, first differing round, what the report
#: says). The lazy samplers' budget binds only at their audit settings (``audit_hints``), which
#: the check plays too; the batched EXP4's segment code runs only when a batch spans rounds.
PLANTED = [
    ("noisy-clipped-hedge", noisy_clipped_hedge, "samplers.laplace", _half_scale, 2,
     "ratio block/act 0.5"),
    ("meta-expert-reduction", meta_expert, "samplers.laplace", _half_scale, 2,
     "ratio block/act 0.5"),
    ("noisy-clipped-hedge", noisy_clipped_hedge, "samplers.laplace", _zero_scale, 2,
     "the block path 0"),
    ("svt-restart", svt_kernels, "samplers.laplace", _half_scale, 2, "drawn noise"),
    ("ldp-exp4", bandit_kernels, "samplers.laplace", _one_draw_per_block, 3, "state"),
    ("dp-ftrl-tree", kernels, "tree_block", _tree_without_upper_noise, 3, "actions"),
    ("private-shrinking-dartboard", lazy_kernel, "lazy_rounds", _one_more_resample, None,
     "(budget=2"),
    ("private-lazy-hedge", lazy_kernel, "lazy_rounds", _one_more_resample, None, "(budget=1"),
    ("batched-private-shrinking-dartboard", lazy_kernel, "lazy_rounds", _one_more_resample, None,
     "batch_size="),
    ("private-batched-exp4", private_exp4, "samplers.laplace", _bandit_half_scale, 3,
     "drawn noise"),
]  # fmt: skip
PARAMS = {"private-batched-exp4": {"tau": 5}}


@pytest.mark.parametrize(
    ("name", "module", "function", "bug", "round_", "says"),
    PLANTED,
    ids=[f"{p[0]}-{p[3].__name__}" for p in PLANTED],
)
def test_a_kernel_only_bug_fails_check_agent_with_its_round(
    monkeypatch, name, module, function, bug, round_, says
):
    use_jit_path("compiled", monkeypatch)
    claim = agents.make(name, **_game(name), epsilon=1.0).privacy.summary()
    with _patched(module, function, bug):
        # act is untouched: the claim printed is the correct learner's
        assert agents.make(name, **_game(name), epsilon=1.0).privacy.summary() == claim
        with pytest.raises(ContractError) as err:
            check_agent(name, checks=["paths"], params=PARAMS.get(name))
    message = str(err.value)
    assert err.value.check == "paths" and says in message, message
    assert "differs from act at round " in message, message
    if round_ is not None:
        assert f"at round {round_}:" in message, message


def _game(name):
    if agents.spec(name).feedback == "bandit":
        return {"n_experts": 6, "n_arms": 3, "horizon": 40}
    return {"n_experts": 4, "horizon": 40}


def test_the_planted_zoo_covers_four_kernel_modules_and_six_learners():
    assert len({p[1] for p in PLANTED}) >= 4 and len({p[0] for p in PLANTED}) >= 6


# ----------------------------------------------------------------------------- harmless changes
def _scale_as_array(u, scale):
    return _laplace(u, np.array(scale, dtype=np.float64))


def _tree_on_copies(x, noise, exact, noisy, t0, out):
    return _tree_block(np.array(x), np.array(noise), exact, noisy, t0, out)


@pytest.mark.parametrize(
    ("name", "module", "function", "change"),
    [
        ("noisy-clipped-hedge", noisy_clipped_hedge, "samplers.laplace", _scale_as_array),
        ("dp-ftrl-tree", kernels, "tree_block", _tree_on_copies),
    ],
)
def test_a_harmless_kernel_change_passes(monkeypatch, name, module, function, change):
    use_jit_path("compiled", monkeypatch)
    with _patched(module, function, change):
        assert check_agent(name, checks=["paths"]).passed == ["paths"]


# ----------------------------------------------------------------------------- the parts
def test_the_tap_records_every_sampler_without_changing_a_draw():
    a, b = BatchRNG([3, 4]), BatchRNG([3, 4])
    plain = a.laplace(2.0, (5,))
    with laplace_tap() as drawn:
        tapped = b.laplace(2.0, (5,))
        u = np.full((2, 3), 0.25)
        from_uniforms = [samplers.laplace(u, 1.5), samplers.laplace(u, 1.5)]
    assert tapped.tobytes() == plain.tobytes()
    assert len(drawn) == 3
    assert drawn[0][0].tobytes() == tapped.tobytes() and np.all(drawn[0][1] == 2.0)
    for (values, scales), out in zip(drawn[1:], from_uniforms, strict=True):
        assert values.tobytes() == out.tobytes() and np.all(scales == 1.5)
    with laplace_tap() as later:
        pass
    assert later == []  # closed taps record nothing


def test_padding_is_left_out_and_nothing_else():
    """The stated reason the paths' noise may differ: values a block computes from padding.

    A block whose first round learns nothing pads its uniforms with 0 or 0.5; those values
    (``samplers.laplace(0, s)``, and 0) are thrown away by the kernel and not compared. A genuine
    draw and a noise at another scale are compared.
    """
    scales = np.array([1.0, 2.5])
    pad = samplers.laplace(np.zeros(2), scales)
    genuine = samplers.laplace(np.array([0.1, 0.9]), scales)
    kept = paths._drop_padding([(np.concatenate([pad, genuine, [0.0, -0.0]]),
                                 np.concatenate([scales, scales, [1.0, 1.0]]))])  # fmt: skip
    assert kept[0][0].tobytes() == genuine.tobytes()
    assert paths._noise_difference([(genuine, scales)], [(genuine, scales)]) == ""
    assert "ratio" in paths._noise_difference([(genuine, scales)], [(genuine / 2, scales / 2)])
    assert "variates" in paths._noise_difference([(genuine, scales)], [(pad, scales)])


def test_a_plug_in_whose_block_path_differs_fails_and_names_round_1():
    from _planted_agents import BlockPathHalfNoise

    with pytest.raises(ContractError, match=r"paths.*at round 1: drawn noise.*ratio block/act 0.5"):
        check_agent(BlockPathHalfNoise, checks=["paths"])


class _UCB1ActOnly(UCB1):
    play_bandit_block = None  # a plug-in with act alone: no block entry point


def test_a_learner_without_a_block_path_is_skipped_with_the_reason():
    # Every registered learner but ppo (slow: it trains) has a block path now, ucb1 included
    # (compared on it); its act-only copy is what an outside learner with act alone looks like.
    assert check_agent("ucb1", checks=["paths"]).passed == ["paths"]
    report = check_agent(_UCB1ActOnly, checks=["paths"])
    assert report.skipped == {"paths": "no block entry point: act is the only path users run"}


# ----------------------------------------------------------------------------- in the audit
def _small_audit(name, **kw):
    from dp_experts_env.evaluation.audit import audit_learner

    return audit_learner(
        name, runs=2_000, selection_runs=400, time_budget=2.0, pairs=2, part_tests=False, **kw
    )


@pytest.mark.parametrize(
    ("name", "scenario_losses"),
    [
        pytest.param("private-lazy-hedge", "rival", marks=pytest.mark.slow),
        pytest.param("noisy-clipped-hedge", "rival", marks=pytest.mark.slow),
        ("ldp-exp4", "flip"),
    ],
)
def test_the_block_path_plays_the_audit_s_runs_as_act(monkeypatch, name, scenario_losses):
    """Same seeds, same actions on both paths (full information and bandit block protocols)."""
    from dp_experts_env.evaluation import audit

    use_jit_path("compiled", monkeypatch)
    scenario = audit.derived_scenarios(name, audit.declaration_of(name, {"epsilon": 1.0}))[0]
    assert scenario_losses in scenario.label
    params = {**scenario.params, "epsilon": 1.0}
    scenario = audit.Scenario(
        scenario.label, scenario.losses, scenario.neighbor, params, advice=scenario.advice
    )
    for side in (0, 1):
        act = audit.play_scenario(name, scenario, side=side, n_runs=500, seed=3)
        block = audit.play_scenario(name, scenario, side=side, n_runs=500, seed=3, block=True)
        assert block.actions.tobytes() == act.actions.tobytes()
        assert len(np.unique(act.actions[:, -1])) > 1  # the noise decides: a real comparison


@pytest.mark.slow
def test_the_audit_reports_both_paths_and_passes_a_correct_learner(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    report = _small_audit("private-lazy-hedge")
    assert not report.violation and not report.paths_differ
    assert "play_block (compiled path) equals act" in report.paths and "budget=1" in report.paths
    assert report.block_result is not None  # an action view: counted on the block path too
    assert report.block_result.counts == report.result.counts
    assert "the same test on the block path" in report.summary()


@pytest.mark.parametrize(
    ("name", "module", "function", "bug"),
    [
        pytest.param("dp-ftrl-tree", kernels, "tree_block", _tree_without_upper_noise,
                     marks=pytest.mark.slow),
        ("ldp-exp4", bandit_kernels, "samplers.laplace", _one_draw_per_block),
        pytest.param("private-lazy-hedge", lazy_kernel, "lazy_rounds", _one_more_resample,
                     marks=pytest.mark.slow),
    ],
)  # fmt: skip
def test_the_audit_fails_a_kernel_only_bug_naming_the_round(
    monkeypatch, name, module, function, bug
):
    use_jit_path("compiled", monkeypatch)
    with _patched(module, function, bug):
        report = _small_audit(name)
    assert report.violation and report.verdict.startswith("VIOLATION: the block path")
    assert "differs from act at round" in report.paths_differ
    assert report.result.passed  # the act path alone would have passed


def test_a_difference_on_the_audit_s_own_runs_names_run_and_round():
    from dp_experts_env.audit import Outputs, first_difference

    a = Outputs(np.zeros((3, 4), dtype=np.int16), None, None, 0.0)
    b = Outputs(a.actions.copy(), None, None, 0.0)
    assert first_difference([a, a], [b, b]) == ""
    b.actions[2, 1] = 1
    found = first_difference([a, a], [a, b])
    assert found.startswith("the audit's test runs: side 1, run 2") and "round 2" in found


def test_a_subclass_overriding_act_s_hooks_plays_them_on_the_block_path_too():
    """noisy-clipped-hedge's block path defers to a subclass's _learn (as svt-restart's does):
    otherwise users' runs would play the parent's kernel, not the learner audited on act.

    Users' runs no longer call an inherited block method past such an override
    (tests/test_block_entry.py); the copy that declares the override covered
    (``_block_path_covers``) is played on it, and the kernel's own deferral is what it checks.
    """
    from agents._kernels import own_hooks
    from agents.noisy_clipped_hedge import NoisyClippedHedge

    class ExtraDraw(NoisyClippedHedge):
        def _learn(self, obs):
            self.noise.add_laplace(self.rng, np.zeros((self.num_envs, 2)), 1.0)
            super()._learn(obs)

    class DeclaredExtraDraw(ExtraDraw):
        _learn = ExtraDraw._learn
        _block_path_covers = frozenset({"_learn"})

    assert own_hooks(NoisyClippedHedge(3, 10), NoisyClippedHedge)
    assert not own_hooks(ExtraDraw(3, 10), NoisyClippedHedge)
    assert check_agent(DeclaredExtraDraw, checks=["paths"]).passed == ["paths"]
    skipped = check_agent(ExtraDraw, checks=["paths"]).skipped["paths"]
    assert skipped.startswith("inherited play_block not played (overridden: _learn (")


def test_an_oco_block_path_is_compared_on_the_env_s_gradients():
    """An OCO learner's play_block is compared on the env's gradients: a wrong one is caught."""
    ogd = agents.spec("ogd").cls

    class Blocked(ogd):
        def play_block(self, obs):
            return np.stack([np.asarray(self.act(row), dtype=np.float64) for row in obs])

    class Shrunk(Blocked):
        def play_block(self, obs):
            return 0.5 * super().play_block(obs)  # a block path that moves the points

    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    try:
        agents.register("test-ogd-blocked", private=False, summary="ogd with a block path")(Blocked)
        agents.register("test-ogd-shrunk", private=False, summary="wrong block path")(Shrunk)
        assert check_agent("test-ogd-blocked", checks=["paths"]).passed == ["paths"]
        # round 1 plays the origin on both paths (half of 0 is 0): round 2 is the first
        with pytest.raises(ContractError, match=r"differs from act at round 2: actions"):
            check_agent("test-ogd-shrunk", checks=["paths"])
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)
