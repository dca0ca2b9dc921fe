"""``dp_experts_env.testing.check_agent``: passes the suite's learners and the example plug-in,
and catches a learner with a planted contract bug -- each bug by the check meant for it.

The control (``BlockLeader``, correct) passes every check; each mutant of ``_planted_agents``
breaks one thing and must fail exactly the check named in ``PLANTED`` (earlier checks pass).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _planted_agents import PLANTED, BlockLeader
from _shared_reports import checked

import agents
from dp_experts_env.testing import CHECKS, ContractError, check_agent

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin_example"
#: One learner per feedback kind and privacy mechanism family, for the quick run (all: slow).
REPRESENTATIVE = ["hedge", "exp3", "limited-updates", "private-batched-exp4", "dp-ftrl-oco"]
QUICK = {"hedge", "exp3", "limited-updates"}
#: Audited in the slow test: one per feedback kind (their full audits are in test_audit_zoo.py
#: and test_oco_audit.py; these use check_agent's smaller default audit).
AUDITED = ["limited-updates", "private-batched-exp4", "dp-ftrl-oco"]


@pytest.mark.slow
def test_the_correct_control_passes_every_check():
    report = check_agent(BlockLeader)
    assert report.passed == list(CHECKS) and report.skipped == {}
    assert report.audit.passed  # the audit of a factory: one given pair


def _slow_if_audited(mutants):
    return [
        pytest.param(m, marks=pytest.mark.slow) if PLANTED[m] == "audit" else m for m in mutants
    ]


@pytest.mark.parametrize("mutant", _slow_if_audited(PLANTED), ids=lambda c: c.__name__)
def test_a_planted_bug_fails_its_check(mutant):
    want = PLANTED[mutant]
    with pytest.raises(ContractError) as err:
        check_agent(mutant)
    assert err.value.check == want, str(err.value)
    # ...and nothing before it: the bug is caught by the check meant for it (every earlier
    # check ran and passed in this call, none skipped: the same as running them alone).
    before = list(CHECKS[: CHECKS.index(want)])
    assert err.value.passed == before, err.value.passed


@pytest.mark.parametrize(
    "name",
    [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow) for n in REPRESENTATIVE],
)
def test_check_agent_passes_representative_learners(name):
    report = check_agent(name, skip=["audit"])
    private = agents.spec(name).private
    assert ("monotone" in report.passed) == private
    assert "batching" in report.passed and "claim" in report.passed


@pytest.mark.slow
@pytest.mark.parametrize("name", AUDITED)
def test_check_agent_audits_representative_private_learners(name):
    # limited-updates' report is test_audit_power.py's too (its power check): computed once.
    report = checked(name, ("audit",))
    assert report.passed == ["audit"] and not report.audit.violation


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="check 'nope'"):
        check_agent("hedge", checks=["nope"])
    with pytest.raises(ValueError, match="unknown agent"):
        check_agent("no-such-learner")
    with pytest.raises(TypeError, match="name or a factory"):
        check_agent(3)


@pytest.fixture
def example_module(monkeypatch):
    """The example plug-in's learner class, imported without registering it for good."""
    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from dp_plugin_example.ftpl import PrivateBlockFTPL

    yield PrivateBlockFTPL
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    for name in [m for m in sys.modules if m.startswith("dp_plugin_example")]:
        del sys.modules[name]


@pytest.mark.slow
def test_the_example_plug_in_passes_every_check(example_module):
    by_name = check_agent("private-block-ftpl")
    # No block method: act is the only path, so the paths check does not apply.
    assert by_name.passed == [c for c in CHECKS if c != "paths"] and not by_name.audit.violation
    assert list(by_name.skipped) == ["paths"]
    as_factory = check_agent(example_module, skip=["monotone", "audit"])
    assert as_factory.private and "epsilon_inf" in as_factory.passed


class _EveryRoundLeader(BlockLeader):
    """Re-selects every round: at epsilon = inf it is follow-the-leader (random ties)."""

    epsilon_inf_limit = "follow-the-leader"

    def __init__(self, n_experts, horizon, *, epsilon=1.0, num_envs=1, seed=None):
        super().__init__(n_experts, horizon, epsilon=epsilon, num_envs=num_envs, seed=seed)
        self.block, self.k = 1, horizon


class _WrongLimit(BlockLeader):
    """Declares the FTL limit but keeps its blocks at epsilon = inf."""

    epsilon_inf_limit = "follow-the-leader"


def test_a_declared_epsilon_inf_limit_is_checked():
    assert check_agent(_EveryRoundLeader, checks=["epsilon_inf"]).passed == ["epsilon_inf"]
    with pytest.raises(ContractError, match="epsilon_inf_limit='follow-the-leader'"):
        check_agent(_WrongLimit, checks=["epsilon_inf"])
