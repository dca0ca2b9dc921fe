"""Action-level privacy audits of the OCO learners (events on the released points) and P-COMW's
per-step costs against its accountant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.oco_baselines import DPFTRLOCO
from agents.p_comw import PCOMW
from dp_experts_env.evaluation.audit_oco import audit_oco_agent
from dp_experts_env.privacy.audit import epsilon_lower_bound
from dp_experts_env.privacy.audit_oco import detectable_epsilon, encode_points


def neighbours(horizon, dim=1):
    x = np.zeros((horizon, dim))
    x[0, 0] = 1.0
    xn = x.copy()
    xn[0, 0] = -1.0
    return x, xn


def test_encode_points():
    pts = np.array([[[0.5], [0.5], [-0.2]]])
    assert encode_points(pts, np.array([1.0])).tolist() == [[1, 1, 2]]


# --------------------------------------------------------------------------- DP-FTRL (tree)
# T = 3: the gradient of round 1 enters both tree nodes released before the last play, so the
# whole claimed epsilon is visible in the points; the audit then has the power to see a noise
# scale halved (true epsilon 2 against a claim of 1).
def tree_agent(scale_factor):
    def factory(num_envs, seed):
        # noise_multiplier scales the node noise; the claim still says epsilon = 1
        return DPFTRLOCO(
            1, 3, epsilon=1.0, num_envs=num_envs, seed=seed, noise_multiplier=scale_factor
        )

    return factory


def test_dp_ftrl_oco_passes_the_audit():
    x, xn = neighbours(3)
    result = audit_oco_agent(tree_agent(1.0), x, xn, n_runs=20_000, seed=1)
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.5  # the audit sees most of the claim


def test_dp_ftrl_oco_half_noise_mutant_is_caught():
    x, xn = neighbours(3)
    result = audit_oco_agent(tree_agent(0.5), x, xn, n_runs=20_000, seed=1)
    assert not result.passed, result.summary()
    assert result.epsilon_lower_bound > 1.2


# --------------------------------------------------------------------------- P-COMW
T_PCOMW = 128


# T = 2, d = 1, g_1 = +1 vs -1: the whole leak is the round-1 coin and one fresh Gibbs sample,
# where the Renyi certificate is within about 2x of the exact epsilon
# (tests/test_oco_accountant.py), so a learner with half the sampling noise shows more than
# its claim on the likelihood-ratio events.
@pytest.mark.slow
def test_p_comw_passes_the_audit_with_power():
    x, xn = neighbours(2)
    result = audit_oco_agent("p-comw", x, xn, n_runs=20_000, seed=2, epsilon=1.0)
    assert result.passed and result.claimed_epsilon == pytest.approx(1.0), result.summary()
    assert result.detectable_epsilon < 1.5  # the event could have shown a 50% violation
    assert "no violation found (could detect eps > 1." in result.summary()


def test_p_comw_half_noise_mutant_is_caught():
    x, xn = neighbours(2)
    result = audit_oco_agent(
        "p-comw", x, xn, n_runs=20_000, seed=2, epsilon=1.0, noise_multiplier=0.5
    )
    assert not result.passed and result.epsilon_lower_bound > 1.2, result.summary()
    assert result.statistic == "likelihood ratio" and "VIOLATION" in result.summary()


@pytest.mark.slow
def test_p_comw_half_noise_mutant_at_t_4():
    # Four rounds: three coins and up to three samples. With 60,000 runs a side the mutant's
    # bound sits at the claim (1.34 with this event selection; 0.98 with a stricter one), so only
    # what does not depend on the selection is pinned: the correct learner passes with power,
    # and the mutant shows far more than it.
    x, xn = neighbours(4)
    ok = audit_oco_agent("p-comw", x, xn, n_runs=60_000, seed=1, epsilon=1.0)
    assert ok.passed and ok.detectable_epsilon < 1.3, ok.summary()
    bad = audit_oco_agent("p-comw", x, xn, n_runs=60_000, seed=1, epsilon=1.0,
                          noise_multiplier=0.5)  # fmt: skip
    assert bad.epsilon_lower_bound > ok.epsilon_lower_bound + 0.7, bad.summary()


def test_p_comw_noise_free_mutant_is_caught():
    x, xn = neighbours(T_PCOMW)
    result = audit_oco_agent(
        "p-comw", x, xn, n_runs=10_000, seed=1, epsilon=1.0, noise_multiplier=0.0
    )
    assert not result.passed and result.epsilon_lower_bound > 3.0, result.summary()
    assert result.statistic == "sequence"  # the leader has no path density


def test_p_comw_passes_at_a_longer_horizon():
    x, xn = neighbours(T_PCOMW)
    result = audit_oco_agent("p-comw", x, xn, n_runs=10_000, seed=1, epsilon=1.0)
    assert result.passed and result.claimed_delta == 1e-5, result.summary()


def test_detectable_epsilon():
    # Known answers: with the favoured side's count fixed, the power is the ratio at which the
    # other side's count puts the bound exactly at the claim; more runs, more power; an event
    # seen 10 times in 10,000 runs cannot show any violation of epsilon = 1.
    kw = {"claimed_epsilon": 1.0, "delta": 1e-5, "alpha": 1e-3}
    strong = detectable_epsilon(3000, 10_000, **kw)
    weak = detectable_epsilon(300, 1_000, **kw)
    assert 1.0 < strong < weak < math.inf
    for x, above in ((strong + 0.01, True), (strong - 0.01, False)):
        k_lo = 10_000 * (0.3 - 1e-5) * math.exp(-x)
        lb = float(epsilon_lower_bound(3000, k_lo, 10_000, alpha=1e-3, delta=1e-5))
        assert (lb > 1.0) == above
    assert detectable_epsilon(10, 10_000, **kw) == math.inf
    assert detectable_epsilon(3000, 10_000, **{**kw, "claimed_epsilon": math.inf}) == math.inf


def _coin_switch_probability(agent, g, x):
    """Exact switch probability of the round-1 coin at point x after gradient g (d = 1)."""
    from agents._oco import log_normaliser

    cum0 = np.zeros((1, 1))
    log_r = -agent.beta * g * x - (
        log_normaliser("box", cum0 + g, agent.beta, agent.lam, 1.0)
        - log_normaliser("box", cum0, agent.beta, agent.lam, 1.0)
    )
    stay = np.exp(np.clip(log_r - agent.log_phi, -2 * agent.log_phi, 0.0))
    return agent.p + (1 - agent.p) * (1 - stay)


@pytest.mark.parametrize(("epsilon", "kappa"), [(1.0, None), (2000.0, 1e-4)])
def test_p_comw_round_t0_coin_costs_at_most_its_charge(epsilon, kappa):
    # Claim D.1: the coin reading the changed gradient costs at most 2 ln(Phi)/p (both outcomes,
    # every point x, every pair of gradients of norm <= G). Checked exactly on a grid of points
    # for the extreme pair g = +G, g' = -G.
    agent = PCOMW(1, T_PCOMW, epsilon=epsilon, kappa=kappa)
    xs = np.linspace(-1, 1, 401)
    sw_a = np.array([_coin_switch_probability(agent, 1.0, x) for x in xs]).ravel()
    sw_b = np.array([_coin_switch_probability(agent, -1.0, x) for x in xs]).ravel()
    loss = np.max(np.abs(np.r_[np.log(sw_a / sw_b), np.log((1 - sw_a) / (1 - sw_b))]))
    charge = 2 * agent.log_phi / agent.p
    assert 0 < loss <= charge
    # The Renyi accountant's round-t0 stay bound: min(2 ln Phi, 2 beta G D).
    stay = np.max(np.abs(np.log(1 - sw_a) - np.log(1 - sw_b)))
    assert stay <= min(2 * agent.log_phi, 2 * agent.beta * agent.diameter) + 1e-12


def test_dp_ftrl_oco_gaussian_passes_the_audit():
    x, xn = neighbours(3)
    result = audit_oco_agent(
        "dp-ftrl-oco", x, xn, n_runs=10_000, seed=2, epsilon=1.0, law="gaussian"
    )
    assert result.passed and result.claimed_delta == 1e-5, result.summary()


@pytest.mark.slow  # about 5 s of CPU: two searches of the first two scenarios
def test_dp_ftrl_oco_gaussian_half_noise_mutant_is_a_true_violation_and_caught():
    """dp-ftrl-oco's law='gaussian' keeps the zCDP rule's noise but claims the exact GDP
    profile of it (0.49 at a request of 1, delta = 1e-2). Halving sigma doubles mu: the mutant
    is truly (1.24, 1e-2), a violation, and the default search sees it (0.68 > 0.49; the
    learner 0.25). Under the old zCDP claim (1, 1e-2) the same bound 0.76 of the full audit
    could not exceed the claim, though the mutant violated it too (1.24 > 1)."""
    from dp_experts_env.evaluation.audit_oco import audit_oco_learner
    from dp_experts_env.privacy.gaussian import gdp_epsilon

    agent = DPFTRLOCO(1, 5, epsilon=1.0, law="gaussian", delta=1e-2)
    mu = math.sqrt(agent.levels) * 2.0 / agent.node_scale
    assert agent.privacy.epsilon == pytest.approx(gdp_epsilon(mu, 1e-2), rel=1e-9)
    assert 0.49 < agent.privacy.epsilon < 0.491 and 1.24 < gdp_epsilon(2 * mu, 1e-2) < 1.25
    kw = {"epsilon": 1.0, "runs": 20_000, "selection_runs": 4_000, "pairs": 2, "seed": 1}
    law = {"law": "gaussian"}
    good = audit_oco_learner("dp-ftrl-oco", params=law, **kw)
    half = audit_oco_learner("dp-ftrl-oco", params=law, multiplier=0.5, **kw)
    assert not good.violation and good.claim.delta == pytest.approx(1e-2), good.summary()
    assert half.violation and half.result.epsilon_lower_bound > 0.6, half.summary()  # 0.68


# --------------------------------------------------------------------------- the CLI search
# `dp-experts audit` on the OCO learners: the default search (first-round pairs at short
# horizons first), --multiplier mapped to the learners' noise_multiplier with the claim kept,
# exit code 1 on a violation. Small run counts and the first two scenarios keep each case at a
# few seconds; the full-size verdicts are in docs/privacy.md ("Measured: the mutant zoo").
_SMALL = ["--runs", "20000", "--selection-runs", "4000", "--pairs", "2", "--seed", "1"]
#: The noise-free mutants show at a tenth of the runs (counts 2000 vs 0, epsilon >= 5.57 against
#: the claimed 1, the same first-round pair chosen): the x0.5 mutants' sizes are not needed.
_NOISE_FREE = ["--runs", "2000", "--selection-runs", "1000", "--pairs", "2", "--seed", "1"]


@pytest.mark.slow  # 2-6 s a case on two shared cores
@pytest.mark.parametrize(
    ("name", "multiplier", "violation"),
    [
        ("p-comw", "1", False),
        ("p-comw", "0.5", True),
        ("p-comw", "0", True),
        ("dp-ftrl-oco", "1", False),
        ("dp-ftrl-oco", "0.5", True),
        ("dp-ftrl-oco", "0", True),
    ],
)
def test_cli_audit_of_oco_learners_and_their_mutants(name, multiplier, violation, capsys):
    from dp_experts_env.cli import main

    small = _NOISE_FREE if multiplier == "0" else _SMALL
    code = main(["audit", name, "--multiplier", multiplier, *small])
    out = capsys.readouterr().out
    assert code == (1 if violation else 0), out
    if violation:
        assert "VIOLATION" in out and f"mutant: noise x{multiplier}, claim unchanged" in out
    else:
        assert "no violation found (could detect eps > 1." in out
    assert "claimed 1" in out or "claim: (1, 1e-05)-DP" in out or "claim: 1-DP" in out
    assert "first-round +-G, d=1" in out  # a short pair of the default search was chosen


def test_cli_audit_oco_given_pair_and_bad_input(capsys):
    from dp_experts_env.cli import main

    args = ["audit", "p-comw", "--n-experts", "2", "--horizon", "4", "--runs", "2000"]
    assert main([*args, "--selection-runs", "1000"]) == 0
    assert "random signs, d=2, T=4, row 2 negated" in capsys.readouterr().out
    # The mutant's factor is given once; too few test runs are refused.
    bad = ["audit", "p-comw", "--multiplier", "0.5", "--set", "noise_multiplier=0.5"]
    assert main(bad) == 2
    assert "multiplier or noise_multiplier" in capsys.readouterr().err
    assert main(["audit", "p-comw", "--runs", "10"]) == 2


def test_oco_search_seeds_are_disjoint_and_reproducible():
    from dp_experts_env.evaluation.audit_oco import audit_oco_learner

    kw = {"runs": 2000, "selection_runs": 1000, "pairs": 2, "seed": 3}
    a = audit_oco_learner("p-comw", **kw)
    b = audit_oco_learner("p-comw", **kw)
    assert a.result == b.result and a.chosen.view == b.chosen.view  # bit for bit
    assert a.searched() == 2 and a.scenarios_total == 7 and a.test_runs == 2000


def test_audit_oco_paths_checks_the_recorded_paths():
    from dp_experts_env.privacy.audit_oco import audit_oco_paths

    x = np.array([[1.0], [0.0]])
    xn = np.array([[-1.0], [0.0]])
    good = np.zeros((300, 2, 1))
    with pytest.raises(ValueError, match="paths and neighbor_paths must both have shape"):
        audit_oco_paths(good, np.zeros((300, 3, 1)), x, xn, claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="exactly one row"):
        audit_oco_paths(good, good, x, x, claimed_epsilon=1.0)
    # Identical paths on both sides show nothing: no violation whatever the claim.
    same = audit_oco_paths(good, good, x, xn, claimed_epsilon=0.1)
    assert same.passed and same.epsilon_lower_bound <= 0.0
    # Paths that reveal the side exactly: the bound reaches what 300 runs allow (half of them
    # select the event, the other 150 a side count it: about 2.96 at alpha = 1e-3).
    up = np.ones((300, 2, 1))
    leak = audit_oco_paths(up, -up, x, xn, claimed_epsilon=1.0)
    assert not leak.passed and leak.epsilon_lower_bound > 2.5


# --------------------------------------------------------------------------- Gaussian DP-FTRL
# gaussian-dp-ftrl-oco (#29) is mu-GDP; its (epsilon, delta) claim at delta = 1e-5 is spent in
# tails of probability ~1e-5 that no action-level audit of 10^4-10^5 runs reaches, so it is
# audited at a claim with delta = 1e-2 (a valid, weaker claim of the same learner): there the
# noise-halved mutant shows epsilon > 1 on events of probability ~0.1. Measured at T = 3,
# 40,000 runs, seeds 1 and 2: correct 0.49 / 0.53, x0.5 1.11 / 1.12, x0 7.9 / 7.9.
def gaussian_tree_agent(scale_factor):
    from agents.oco_fair import GaussianDPFTRLOCO

    def factory(num_envs, seed):
        return GaussianDPFTRLOCO(
            1, 3, epsilon=1.0, delta=1e-2, num_envs=num_envs, seed=seed,
            noise_multiplier=scale_factor,
        )  # fmt: skip

    return factory


@pytest.mark.slow
def test_gaussian_dp_ftrl_oco_passes_the_audit():
    x, xn = neighbours(3)
    result = audit_oco_agent(gaussian_tree_agent(1.0), x, xn, n_runs=40_000, seed=1)
    assert result.passed and result.claimed_delta == 1e-2, result.summary()


@pytest.mark.slow
def test_gaussian_dp_ftrl_oco_half_noise_mutant_is_caught():
    x, xn = neighbours(3)
    result = audit_oco_agent(gaussian_tree_agent(0.5), x, xn, n_runs=40_000, seed=1)
    assert not result.passed, result.summary()
    removed = audit_oco_agent(gaussian_tree_agent(0.0), x, xn, n_runs=4_000, seed=1)
    assert not removed.passed and removed.epsilon_lower_bound > 4.0, removed.summary()


# --------------------------------------------------------------------------- declarations
def test_oco_scenarios_are_derived_from_declarations():
    """Trees get T = 2^m + 1 pairs and counters fed all T items; samplers long games; Gaussian
    trees are also audited at the public delta = 1e-2; nothing is keyed on a learner's name."""
    from dp_experts_env.evaluation.audit_oco import (
        GAUSSIAN_AUDIT_DELTA,
        default_oco_scenarios,
        derived_oco_scenarios,
        oco_declaration_of,
    )

    def labels(name, **params):
        return [s.label for s in default_oco_scenarios(name, params={"epsilon": 1.0, **params})]

    tree = labels("dp-ftrl-oco")
    assert tree[0].startswith("first-round +-G, d=1, T=3") and tree[1].startswith(
        "first-round +-G, d=1, T=5"
    )
    assert "tree fed all T items, d=1, T=33, row 0 negated" in tree
    gauss = default_oco_scenarios("gaussian-dp-ftrl-oco", params={"epsilon": 1.0})
    assert gauss[0].params == {"delta": GAUSSIAN_AUDIT_DELTA} and "delta=0.01" in gauss[0].label
    assert labels("dp-ftrl-oco", law="gaussian")[0].endswith("delta=0.01")
    sampler = labels("p-comw")
    assert sampler[0].startswith("first-round +-G, d=1, T=2")
    assert "long game, d=1, T=32, row 0 negated" in sampler
    # A tree fed all T items: a gradient every round, the pair differs in row 0 only.
    fed = next(s for s in gauss if s.label.startswith("tree fed all T items, d=1, T=17"))
    assert np.all(np.abs(fed.losses) == 1.0) and fed.changed_round == 0
    # Non-private learners declare nothing and are refused by the search.
    assert oco_declaration_of("lazy-ftrl-oco") is None and derived_oco_scenarios(None) == []
    from dp_experts_env.evaluation.audit_oco import audit_oco_learner

    with pytest.raises(ValueError, match="not a private OCO learner"):
        audit_oco_learner("lazy-ftrl-oco")


@pytest.mark.slow  # about 5 s of CPU: three searches of the first two scenarios
def test_gaussian_dp_ftrl_oco_default_search_verdicts():
    """The default search (first two derived scenarios: delta = 1e-2, T = 3 and 5) catches
    the noise-halved and noise-removed mutants and passes the learner (docs/privacy.md).

    The noise-removed mutant at a tenth of the runs: without noise its plays are a function
    of the losses alone, so every run of a side plays alike and the counts are n vs 0 with
    probability 1 (no false failure at any seed); at n = 2,000 and confidence 0.999 that bound
    is 5.56 (delta 1e-2) > 4, on the same first-round pair as at 20,000 runs (7.86).
    """
    from dp_experts_env.evaluation.audit_oco import audit_oco_learner

    kw = {"epsilon": 1.0, "runs": 20_000, "selection_runs": 4_000, "pairs": 2, "seed": 1}
    good = audit_oco_learner("gaussian-dp-ftrl-oco", **kw)
    half = audit_oco_learner("gaussian-dp-ftrl-oco", multiplier=0.5, **kw)
    small = {**kw, "runs": 2_000, "selection_runs": 1_000}
    gone = audit_oco_learner("gaussian-dp-ftrl-oco", multiplier=0.0, **small)
    assert not good.violation and good.claim.delta == pytest.approx(1e-2), good.summary()
    assert "scenarios derived from the declaration" in good.summary()
    assert half.violation and half.result.epsilon_lower_bound > 1.2, half.summary()  # 1.37
    assert gone.violation and gone.result.epsilon_lower_bound > 4.0, gone.summary()
    assert gone.result.counts == (2_000, 0), gone.summary()  # the premise of the run count


# --------------------------------------------------------------------------- block path (issue 37)
class _OCOBlockTwin(DPFTRLOCO):
    """Harmless: a block entry point that is K calls of ``act`` (what a correct kernel gives)."""

    def play_block(self, obs):
        return np.stack([np.asarray(self.act(row), dtype=np.float64) for row in obs])


class _OCOBlockShrunk(_OCOBlockTwin):
    """Planted: the block path pulls every point after a block's first halfway to the centre."""

    def play_block(self, obs):
        out = super().play_block(obs)
        out[1:] *= 0.5
        return out


def audit_learner_default(name):
    from dp_experts_env.audit import audit_learner

    return audit_learner(name, runs=2_000, selection_runs=1_000, pairs=1, seed=3)


def _audit_registered(cls, name):
    from agents.registry import _REGISTRY, register
    from dp_experts_env.audit import audit_learner

    register(name, private=True, summary="test copy of dp-ftrl-oco with a block path")(cls)
    try:
        return audit_learner(name, runs=2_000, selection_runs=1_000, pairs=1, seed=3)
    finally:
        _REGISTRY.pop(name, None)


def test_the_oco_audit_runs_the_path_check_on_any_block_entry_point():
    """Any OCO learner with ``play_block`` gets check_agent's path check and a block replay.

    Harmless: K calls of act (paths equal, the audit passes as dp-ftrl-oco's does, the same
    event counted on the block path). Mutant caught: a block path whose points differ from
    act's from a block's second round (``paths_differ`` names round 3; a violation); without
    the path check in the OCO audit it would pass, since act is correct.
    """
    twin = _audit_registered(_OCOBlockTwin, "h41a-oco-twin")
    assert "play_block" in twin.paths and "equals act" in twin.paths, twin.paths
    assert twin.paths_differ == "" and not twin.violation, twin.summary()
    assert twin.block_result is not None and twin.block_result.counts == twin.result.counts
    bad = _audit_registered(_OCOBlockShrunk, "h41a-oco-shrunk")
    assert bad.result.passed  # act is dp-ftrl-oco's: the event test alone sees nothing
    # Blocks of 1, 6, ... rounds: the second block starts at round 2, its second round is 3.
    assert bad.violation and "differs from act at round 3" in bad.paths_differ, bad.summary()
    assert "VIOLATION: the block path users run differs from act" in bad.verdict


class _OCOActOnly(DPFTRLOCO):
    play_block = None  # a plug-in with act alone: no block entry point


def test_an_oco_learner_without_a_block_path_reports_act_only():
    """A learner without a block entry point: the audit says act is the only path.

    Every built-in OCO learner plays blocks now, so dp-ftrl-oco's report names its play_block;
    the act-only copy is what an outside learner with ``act`` alone looks like.
    """
    report = _audit_registered(_OCOActOnly, "oco-act-only")
    assert "act is the only path" in report.paths and report.block_result is None
    builtin = audit_learner_default("dp-ftrl-oco")
    assert "play_block" in builtin.paths and "equals act" in builtin.paths, builtin.paths


def test_oco_scenario_keeps_its_former_argument_order():
    """``OCOScenario``'s fifth positional argument is ``runs``, as before it became ``Scenario``.

    A bare alias of ``Scenario`` read it as ``keyed`` and silently dropped the run count.
    """
    from dp_experts_env.audit.oco import OCOScenario
    from dp_experts_env.audit.scenarios import Scenario

    grads = np.zeros((3, 2))
    neighbor = grads.copy()
    neighbor[1, 0] = 1.0
    scenario = OCOScenario("pair", grads, neighbor, {"step": 0.1}, 1000)
    assert isinstance(scenario, Scenario)
    assert scenario.runs == 1000 and not scenario.keyed and dict(scenario.params) == {"step": 0.1}
