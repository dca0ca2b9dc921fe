"""One sampler per law (issue 41): a law changed in :mod:`dp_experts_env.samplers` moves every path.

The patch is a different map from uniforms to the same law: Laplace and normal variates are
symmetric, so the negated draw (``-law(u)``) is again a valid Laplace or normal draw. Under it,
for every registered learner (PPO aside) on both paths:

* ``act`` draws every variate of a law it declares through the patched law (counted), and every
  Laplace variate the taps see went through it (a copy reporting its own draws is counted apart);
* the block entry point users run (compiled and numpy) equals ``act`` under the patch (actions,
  state, stream, drawn noise): a block path keeping its own copy of the law plays the old law
  while ``act`` plays the new one, so it is caught;
* the noise backends (``fast`` on both kinds of source, ``grid``, the audit wrappers) follow.

Controls: a block path with its own copy of the Laplace law (what agents/_kernels.py held before
this module existed) is caught; a block path that reaches the law another way (the sampler on a
copy of its uniforms) passes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types

import numpy as np
import pytest
from conftest import rollout, tiny_env, use_jit_path

import agents
import agents._kernels as kernels
import agents.noisy_clipped_hedge as noisy_clipped_hedge
from dp_experts_env import samplers
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.declaration import (
    LaplaceRelease,
    Mechanism,
    SparseVector,
    TreeAggregation,
)
from dp_experts_env.privacy.noise import (
    FastBackend,
    GridBackend,
    RecordingBackend,
    ScaledBackend,
)
from dp_experts_env.samplers import laplace_tap
from dp_experts_env.testing import path_reports

NAMES = [item["name"] for item in agents.available() if item["name"] != "ppo"]
HOME_ENV = {
    "full": "DPExperts-Stochastic-v0",
    "any": "DPExperts-Stochastic-v0",
    "bandit": "DPExperts-BanditAdvice-v0",
    "oco": "DPExperts-OCO-v0",
}
#: The laws patched, by the sampler's name; the learners' declarations name them so.
LAWS = {"laplace": "laplace_law", "gaussian": "normal"}
#: Learners that must be found drawing each law (the generic search must not come back empty).
KNOWN = {
    "laplace": {"noisy-clipped-hedge", "meta-expert-reduction", "svt-restart", "ldp-exp4",
                "dp-ftrl-tree", "private-fixed-share", "private-batched-exp4"},
    "gaussian": {"gaussian-tree-hedge"},
}  # fmt: skip


class _Negated:
    """``samplers.<name>`` negated, counting the variates drawn inside and outside blocks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.law = getattr(samplers, name)
        self.counts = {"act": 0, "block": 0}
        self.where = "act"

    def __call__(self, *args):  # noqa: ANN002, ANN204
        out = -self.law(*args)
        self.counts[self.where] += int(np.size(out))
        return out


@contextlib.contextmanager
def _patched_law(name: str, cls: type | None = None):
    """``samplers.<name>`` negated; with ``cls``, its block entry points flagged as "block"."""
    law = _Negated(name)
    saved = {}
    for method in ("play_block", "play_bandit_block") if cls is not None else ():
        inner = getattr(cls, method, None)
        if not callable(inner):
            continue
        saved[method] = vars(cls).get(method)

        def flagged(self, *args, _inner=inner, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
            outer, law.where = law.where, "block"
            try:
                return _inner(self, *args, **kw)
            finally:
                law.where = outer

        setattr(cls, method, flagged)
    setattr(samplers, name, law)
    try:
        yield law
    finally:
        setattr(samplers, name, law.law)
        for method, old in saved.items():
            if old is None:
                delattr(cls, method)
            else:
                setattr(cls, method, old)


def _walk(mechanism: object):
    if isinstance(mechanism, Mechanism):
        yield mechanism
    if dataclasses.is_dataclass(mechanism):
        for field in dataclasses.fields(mechanism):
            value = getattr(mechanism, field.name)
            for item in value if isinstance(value, (list, tuple)) else (value,):
                yield from _walk(item)


def _declared_laws(agent: object) -> set[str]:
    """The laws of the noise ``agent`` declares (its ``declaration``)."""
    laws = set()
    for m in _walk(getattr(agent, "declaration", None)):
        if isinstance(m, (LaplaceRelease, SparseVector)):
            laws.add("laplace")
        if isinstance(m, TreeAggregation):
            laws.add(m.noise)
    return laws


def _act_run(name: str):
    """The learner at epsilon 1 on a small env of its kind, played through ``act``."""
    feedback = agents.spec(name).feedback
    env = tiny_env(HOME_ENV[feedback], num_envs=2)
    extra = {"epsilon": 1.0} if agents.spec(name).private else {}
    agent = agents.make(name, env=env, seed=7, **extra)
    rollout(agent, env=env, seed=3)
    env.close()
    return agent


def _follows(name: str, law: str) -> tuple[int, int, set[str]]:
    """(variates ``act`` drew, variates the block path drew, the laws declared) under the
    patched law; fails when a path does not follow it."""
    with _patched_law(LAWS[law]) as patched, laplace_tap() as drawn:
        agent = _act_run(name)
    act_count = patched.counts["act"]
    if law == "laplace":
        # Every Laplace variate reported went through the one law (a copy reports apart).
        tapped = sum(v.size for v, _ in drawn)
        assert tapped == act_count, f"{name}: {tapped} variates tapped, {act_count} by the law"
    declared = _declared_laws(agent)
    if law in declared:
        assert act_count > 0, f"{name} declares {law} noise; act drew none through the law"
    with _patched_law(LAWS[law], type(agent)) as patched:
        found = path_reports(name)
    for label, report in found:
        assert report.equal, f"{name} ({label}) under the patched {law} law: {report.describe()}"
    return act_count, patched.counts["block"], declared


@pytest.mark.slow
@pytest.mark.parametrize("law", sorted(LAWS))
@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_every_learner_s_paths_follow_a_patched_law(monkeypatch, path, law):
    use_jit_path(path, monkeypatch)
    drawers = set()
    for name in NAMES:
        act_count, block_count, declared = _follows(name, law)
        if act_count or block_count:
            drawers.add(name)
    assert KNOWN[law] <= drawers, sorted(KNOWN[law] - drawers)


# ----------------------------------------------------------------------------- backends
def _sources():
    """(a fresh source, values of one release's shape for it): B = 2 runs, or one."""
    return [
        (lambda: BatchRNG([3, 4], 5), np.zeros((2, 4))),
        (lambda: np.random.default_rng(5), np.zeros(4)),
    ]


@pytest.mark.parametrize(
    "backend",
    [FastBackend(), ScaledBackend("fast", 0.5), RecordingBackend("fast")],
    ids=["fast", "scaled", "recording"],
)
def test_the_laplace_and_gumbel_backends_follow(backend):
    for source, zeros in _sources():
        plain = backend.laplace(source(), 1.5, (4,)), backend.add_laplace(source(), zeros, 2.0)
        gumbel = backend.gumbel(source(), (3,))
        with _patched_law("laplace_law"):
            after = backend.laplace(source(), 1.5, (4,)), backend.add_laplace(source(), zeros, 2.0)
        with _patched_law("gumbel"):
            gumbel_after = backend.gumbel(source(), (3,))
        np.testing.assert_array_equal(after[0], -plain[0])
        np.testing.assert_array_equal(after[1], -plain[1])
        np.testing.assert_array_equal(gumbel_after, -gumbel)


def test_the_lattice_backend_follows_its_discrete_law():
    grid = GridBackend(bits=8)
    for source, _ in _sources():
        plain = grid.laplace(source(), 0.5, (6,))
        with _patched_law("discrete_laplace"):
            after = grid.laplace(source(), 0.5, (6,))
        np.testing.assert_array_equal(after, -plain)
        assert np.any(plain != 0.0)


def test_batch_rng_draws_every_law_through_the_samplers():
    for name, draw in [
        ("laplace_law", lambda r: r.laplace(1.0, (5,))),
        ("normal", lambda r: r.normal((5,))),
        ("gumbel", lambda r: r.gumbel((5,))),
        ("exponential", lambda r: r.exponential((5,))),
    ]:
        plain = draw(BatchRNG([1, 2]))
        with _patched_law(name):
            np.testing.assert_array_equal(draw(BatchRNG([1, 2])), -plain)


# ----------------------------------------------------------------------------- controls
def _own_copy(u, scale):
    """The law written a second time, as block paths had it before this module."""
    out = np.maximum(u, samplers.OPEN_LOW)
    np.minimum(out, samplers.OPEN_HIGH, out=out)
    out -= 0.5
    signed = np.multiply(-np.asarray(scale), np.sign(out))
    np.abs(out, out=out)
    out *= -2.0
    np.log1p(out, out=out)
    drawn = signed * out
    samplers.tap_laplace(scale, drawn)
    return drawn


def _on_a_copy_of_the_uniforms(u, scale):
    return samplers.laplace(np.array(u), scale)


@contextlib.contextmanager
def _block_path_draws_with(fn):
    module = noisy_clipped_hedge
    saved = module.samplers
    module.samplers = types.SimpleNamespace(**{**vars(samplers), "laplace": fn})
    try:
        yield
    finally:
        module.samplers = saved


def test_a_block_path_with_its_own_copy_of_the_law_is_caught(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    with _block_path_draws_with(_own_copy):
        # Unpatched, the copy is the same law: the paths agree ...
        assert all(r.equal for _, r in path_reports("noisy-clipped-hedge"))
        # ... but it does not follow a change of the law.
        with pytest.raises(AssertionError, match="under the patched laplace law"):
            _follows("noisy-clipped-hedge", "laplace")


def test_a_block_path_reaching_the_law_another_way_passes(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    with _block_path_draws_with(_on_a_copy_of_the_uniforms):
        _, block_count, declared = _follows("noisy-clipped-hedge", "laplace")
    assert block_count > 0 and "laplace" in declared


# ----------------------------------------------------------------------------- uniforms per round
#: Settings where round 2 releases (private-fixed-share releases every ``block`` rounds).
ROUND_PARAMS = {"private-fixed-share": {"block": 1}}
DECLARING = [n for n in NAMES if callable(getattr(agents.spec(n).cls, "noise_uniforms", None))]


def _reads_as_declared(agent) -> bool:
    """Rounds 1 and 2 of ``act`` read ``PLAY_UNIFORMS``, then ``noise_uniforms() +
    PLAY_UNIFORMS`` uniforms per run (a twin stream skipping that many is where act left it)."""
    import copy

    losses = np.random.default_rng(0).random((2, agent.num_envs, agent.n_experts))
    for t, reads in enumerate([0, agent.noise_uniforms()]):
        twin = copy.deepcopy(agent.rng)
        agent.act(losses[t])
        twin.random((reads + kernels.PLAY_UNIFORMS,))
        if twin.random((8,)).tobytes() != agent.rng.random((8,)).tobytes():
            return False
    return True


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
@pytest.mark.parametrize("name", DECLARING)
def test_act_reads_the_uniforms_per_round_the_block_path_is_told(name, epsilon):
    """A learning round of ``act`` reads what the learner declares, the number its block path
    reads its rounds' uniforms with."""
    params = ROUND_PARAMS.get(name, {})
    agent = agents.make(
        name, n_experts=4, horizon=10, num_envs=2, seed=5, epsilon=epsilon, **params
    )
    assert _reads_as_declared(agent)
    assert len(DECLARING) >= 4 and (epsilon == np.inf) == (agent.noise_uniforms() == 0)


def test_a_wrong_declaration_of_uniforms_is_caught():
    cls = agents.spec("noisy-clipped-hedge").cls

    class OneMore(cls):
        def noise_uniforms(self):
            return super().noise_uniforms() + 1

    assert _reads_as_declared(cls(4, 10, num_envs=2, seed=5))
    assert not _reads_as_declared(OneMore(4, 10, num_envs=2, seed=5))
