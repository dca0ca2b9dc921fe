"""Outside learners get a strong audit (issue 37, item 4): the example plug-in declares what it
runs and takes ``noise=``; ``check_agent`` audits it, checks its own power on the learner built
with half its noise, and warns loudly about a learner that declares nothing or cannot be
weakened.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pytest
from _planted_agents import BlockLeader
from _shared_reports import checked

from agents.base import clip_unit
from agents.noisy_clipped_hedge import NoisyClippedHedge, clip_project
from dp_experts_env.privacy.mechanisms import report_noisy_min
from dp_experts_env.testing import TOO_LOW, ContractError, check_agent

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin_example"


@pytest.fixture
def example(monkeypatch):
    """The example plug-in registered for this test only, and a copy with half its noise."""
    import agents
    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from dp_plugin_example.ftpl import PrivateBlockFTPL

    @agents.register("test-ftpl-half-noise", private=True, summary="planted: half the noise")
    class HalfNoise(PrivateBlockFTPL):
        """Selects with twice the epsilon it accounts for (the claim printed is unchanged)."""

        def _choose(self, obs):
            if self.t % self.block == 0:
                self.leader = report_noisy_min(
                    self.cumulative, sensitivity=1.0, epsilon=2 * self.epsilon / self.n_spending,
                    rng=self.rng, noise=self.noise,
                ).value  # fmt: skip
            return self.leader

    yield PrivateBlockFTPL
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    for name in [m for m in sys.modules if m.startswith("dp_plugin_example")]:
        del sys.modules[name]


@pytest.mark.slow
def test_the_example_with_half_its_noise_fails_and_unchanged_passes_with_power(example):
    import agents

    claim = agents.make("private-block-ftpl", n_experts=4, horizon=16).privacy.summary()
    assert agents.make("test-ftpl-half-noise", n_experts=4, horizon=16).privacy.summary() == claim
    with pytest.raises(ContractError, match="VIOLATION") as err:
        check_agent("test-ftpl-half-noise", checks=["audit"])
    assert err.value.check == "audit"
    report = check_agent("private-block-ftpl", checks=["audit"])
    assert not report.audit.violation and report.warnings == []
    assert report.power.startswith("the learner built with half its noise is caught")
    assert "derived from the declaration" in report.audit.summary()


def test_the_example_declares_what_it_runs(example):
    from dp_experts_env.privacy.declaration import account

    agent = example(4, 16, epsilon=1.0)
    declared = agent.declaration
    assert declared is not None and "report-noisy-min" in declared.describe()
    # The declaration and the printed claim agree: the accountant reads what runs.
    assert account(declared).epsilon == pytest.approx(agent.privacy.epsilon)
    assert example(4, 16, epsilon=float("inf")).declaration is None


def test_an_undeclared_learner_is_warned_about_loudly():
    with pytest.warns(UserWarning, match="declares no mechanisms"):
        report = check_agent(BlockLeader, checks=["claim"])
    assert any("declares no mechanisms" in w for w in report.warnings)


@pytest.mark.slow
def test_a_learner_the_audit_cannot_weaken_gets_power_too_low():
    """BlockLeader takes neither noise= nor noise_multiplier: the power is unknown, said so."""
    with pytest.warns(UserWarning, match=TOO_LOW):
        report = check_agent(BlockLeader, checks=["audit"], audit_runs=4_000)
    assert report.power.startswith(f"{TOO_LOW}: unknown")


@pytest.mark.slow
def test_a_factory_whose_one_pair_misses_half_noise_reports_power_too_low(example):
    """An unregistered factory is audited on one pair only: too weak, and the report says so."""
    with pytest.warns(UserWarning, match=TOO_LOW):
        report = check_agent(example, checks=["audit"])
    assert report.power.startswith(TOO_LOW) and "register it" in report.power


@pytest.mark.slow
def test_the_power_check_catches_a_built_in_learner_s_half_noise_build():
    # The report of test_check_agent.py's audit of limited-updates (computed once per session).
    report = checked("limited-updates", ("audit",))
    assert report.power.startswith("the learner built with half its noise is caught")


@pytest.fixture
def undeclared():
    """BlockLeader (no declaration) registered for this test only."""
    import agents
    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    agents.register("test-undeclared-leader", private=True, summary="no declaration")(BlockLeader)
    yield "test-undeclared-leader"
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_an_undeclared_learner_gets_the_long_generic_search(undeclared):
    from dp_experts_env.evaluation.audit import default_scenarios

    longer = default_scenarios(undeclared)
    labels = [s.label for s in longer]
    assert max(s.horizon for s in longer) == 64
    assert any(label.startswith("swap, long game") for label in labels)
    # A declared learner keeps the short search (its scenarios come from its declaration).
    assert max(s.horizon for s in default_scenarios("limited-updates")) <= 16


def test_the_swap_pair_differs_in_one_row_by_a_swap():
    from dp_experts_env.evaluation.audit import swap_pair

    x, xp = swap_pair(16, 4, 5)
    assert np.flatnonzero(np.any(x != xp, axis=1)).tolist() == [5]
    assert xp[5, 0] == x[5, 1] and xp[5, 1] == x[5, 0] and np.all(x[:, 0] < x[:, 1])


@pytest.mark.slow
def test_the_audit_and_list_warn_about_an_undeclared_learner(undeclared, capsys):
    from dp_experts_env.cli import main
    from dp_experts_env.evaluation.audit import audit_learner

    with pytest.warns(UserWarning, match="declares no mechanisms"):
        report = audit_learner(undeclared, pairs=1, runs=400, selection_runs=200, time_budget=1)
    assert "WARNING: no declared mechanisms" in report.summary()
    assert "test-undeclared-leader declares no mechanisms" in report.summary()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("test-undeclared-leader") :].splitlines()[:5]
    assert any("WARNING: declares no mechanisms" in line for line in block)
    # ...and only there: every built-in private learner declares what it runs.
    assert out.count("WARNING: declares no mechanisms") == 1


# ----------------------------------------------------------------------------- the tree counter
@contextlib.contextmanager
def _one_level_short():
    """Planted: node noise calibrated to one level fewer at T = 2^m (the claim text unchanged
    in epsilon): the bug the tree scenarios missed on dp-ftrl-tree."""
    import dp_experts_env.privacy.mechanisms as mechanisms

    original = mechanisms.TreeCounter.__init__

    def short(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.node_scale = self.node_scale * max(1, (self.horizon - 1).bit_length()) / self.levels

    mechanisms.TreeCounter.__init__ = short
    try:
        yield
    finally:
        mechanisms.TreeCounter.__init__ = original


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dp-ftrl-tree", "dp-ftrl-oco"])
def test_the_tree_counter_part_test_catches_one_level_short(name):
    from dp_experts_env.evaluation.audit import tree_counter_test

    small = {"runs": 10_000, "selection_runs": 2_000, "horizons": (3,)}
    good = tree_counter_test(name, **small)
    assert good is not None and not good.violation, good.describe()
    with _one_level_short():
        bad = tree_counter_test(name, **small)
    assert bad.violation and bad.horizon == 3 and bad.items == 2, bad.describe()
    assert bad.result.epsilon_lower_bound > 1.3


@pytest.mark.slow
def test_more_tree_noise_passes_and_a_learner_without_a_tree_has_no_tree_test():
    from dp_experts_env.evaluation.audit import tree_counter_test

    small = {"runs": 10_000, "selection_runs": 2_000, "horizons": (3,)}
    more = tree_counter_test("dp-ftrl-tree", multiplier=2.0, **small)
    assert not more.violation
    assert tree_counter_test("noisy-clipped-hedge", runs=400, selection_runs=400) is None


@pytest.mark.slow
def test_the_audit_of_dp_ftrl_tree_fails_one_level_short():
    from dp_experts_env.evaluation.audit import audit_learner

    with _one_level_short():
        report = audit_learner("dp-ftrl-tree", runs=20_000, selection_runs=2_000, time_budget=10)
    assert report.violation and "tree counter" in report.verdict, report.summary()


# ----------------------------------------------------------------------------- the noise used
class _DrawsFreshUsesFirst(NoisyClippedHedge):
    """Planted: draws a fresh release every round through the backend (counts and freshness
    are those of a correct learner) but learns from the first round's noise every time."""

    def _learn(self, obs):
        losses = clip_unit(obs)
        noisy = self.noise.add_laplace(self.rng, losses, self._run_scale)
        if not hasattr(self, "_cached"):
            self._cached = noisy - losses
        w = clip_project(self._log_w - self.eta * (losses + self._cached), self.clip_level)
        self._log_w = np.log(w)


@pytest.fixture
def cached_noise():
    import agents
    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    agents.register("test-cached-noise", private=True, summary="planted")(_DrawsFreshUsesFirst)
    yield "test-cached-noise"
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_cached_noise_cannot_pass_as_fresh(cached_noise):
    from dp_experts_env.audit import noise_freshness, noise_provenance, provenance_game

    game = provenance_game(cached_noise, {"epsilon": 1.0})
    assert noise_freshness(cached_noise, game) == ""  # its draws are fresh...
    found = noise_provenance(cached_noise, game, params={"epsilon": 1.0})
    assert "cached noise" in found  # ...but the noise it uses is not the noise it draws
    correct = provenance_game("noisy-clipped-hedge", {"epsilon": 1.0})
    assert noise_provenance("noisy-clipped-hedge", correct, params={"epsilon": 1.0}) == ""


def test_the_later_calls_backend_keeps_the_first_calls():
    from dp_experts_env.batch_rng import BatchRNG
    from dp_experts_env.privacy.noise import LaterCallsScaled

    backend = LaterCallsScaled("fast", 0.0, keep=2)
    rng = BatchRNG([1, 2])
    first = [backend.laplace(rng, 1.0, (3,)) for _ in range(2)]
    later = backend.add_laplace(rng, np.ones((2, 3)), 1.0)
    assert all(np.all(f != 0.0) for f in first) and np.all(later == 1.0)
    assert rng.random(()).shape == (2,) and backend.calls == 3


# ------------------------------------------------------------------ svt-restart's queries
@pytest.mark.slow
def test_svt_restart_query_sensitivity_holds_by_brute_force():
    from dp_experts_env.evaluation.audit import query_sensitivity_check

    assert query_sensitivity_check("svt-restart") == ""
    assert query_sensitivity_check("noisy-clipped-hedge") == ""  # no sparse vector: nothing


def test_a_declared_query_sensitivity_below_the_true_one_is_caught(monkeypatch):
    """Planted: the detector calibrated (and declared) for half the queries' true sensitivity."""
    import agents.svt_restart as svt_restart
    from dp_experts_env.evaluation.audit import query_sensitivity_check

    true = svt_restart.betting_query_sensitivity
    monkeypatch.setattr(svt_restart, "betting_query_sensitivity", lambda s: 0.5 * true(s))
    found = query_sensitivity_check("svt-restart")
    assert "above the declared sensitivity 1" in found and "brute force over 3072 pairs" in found
