"""P-COMW's fair opponents (#29): lazy FTRL and Gaussian DP-FTRL with the exact GDP accountant."""

import math

import numpy as np
import pytest
from scipy.stats import norm

import agents
from agents.oco_baselines import DPFTRLOCO, FTRLOCO
from agents.oco_fair import GaussianDPFTRLOCO, LazyFTRLOCO, lazy_schedule
from dp_experts_env.privacy.gaussian import (
    gaussian_tree_calibration,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
)


def play(agent, grads):
    """Points (T, B, d) of an OCO agent fed the (T, B, d) gradients."""
    out, g = [], np.zeros(grads.shape[1:])
    for t in range(grads.shape[0]):
        out.append(np.array(agent.act(g)))
        g = grads[t]
    return np.array(out)


# ----------------------------------------------------------------------------- the accountant
def test_gdp_delta_is_the_analytic_gaussian_profile():
    # Balle & Wang 2018, Thm 8, written out with scipy's normal CDF.
    for eps, mu in [(0.5, 0.3), (1.0, 1.0), (3.0, 2.5), (8.0, 4.0)]:
        want = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert gdp_delta(eps, mu) == pytest.approx(want, rel=1e-9, abs=1e-15)
    mu = gdp_mu(1.0, 1e-5)
    assert gdp_delta(1.0, mu) <= 1e-5 and gdp_delta(1.0, mu * (1 + 1e-9)) > 1e-5 * (1 - 1e-6)
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(("eps", "levels", "delta"), [(1.0, 14, 1e-5), (8.0, 14, 1e-5),
                                                       (0.5, 5, 1e-6)])  # fmt: skip
def test_tree_calibration_matches_dp_accounting(eps, levels, delta):
    """Cross-check: dp-accounting's PLD accountant, `levels` Gaussian releases of noise
    multiplier sigma / (2G), gives the same epsilon (to 1e-6); its RDP accountant (a bound)
    gives a larger one; the zCDP rule of dp-ftrl-oco's law='gaussian' needs more noise."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    sigma, guarantee = gaussian_tree_calibration(2.0, levels, eps, delta)
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma / 2.0), levels)
    pld = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_SPECIAL, value_discretization_interval=1e-4
    )
    pld.compose(event)
    assert pld.get_epsilon(delta) == pytest.approx(guarantee.epsilon, abs=1e-6)
    assert guarantee.epsilon <= eps
    rdp = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_SPECIAL
    )
    rdp.compose(event)
    assert rdp.get_epsilon(delta) > guarantee.epsilon
    rho = (math.sqrt(math.log(1 / delta) + eps) - math.sqrt(math.log(1 / delta))) ** 2
    assert 2.0 * math.sqrt(levels / (2 * rho)) > sigma  # zCDP's sigma is larger


def test_gaussian_dp_ftrl_claim_noise_and_limits():
    a = agents.make("gaussian-dp-ftrl-oco", dim=3, horizon=10_000, epsilon=1.0, seed=0)
    zcdp = DPFTRLOCO(3, 10_000, epsilon=1.0, law="gaussian", seed=0)
    assert a.privacy.epsilon == pytest.approx(1.0) and a.privacy.delta == 1e-5
    assert a.privacy.certified and "GDP" in a.privacy.accountant
    assert a.node_scale < 0.8 * zcdp.node_scale  # 24% less noise for the same budget
    off = agents.make("gaussian-dp-ftrl-oco", dim=3, horizon=50, epsilon=math.inf, seed=0)
    ftrl = FTRLOCO(3, 50, lam=off.lam)
    g = np.random.default_rng(0).uniform(-0.5, 0.5, size=(50, 1, 3))
    np.testing.assert_allclose(play(off, g), play(ftrl, g))  # eps = inf is FTRL itself
    with pytest.raises(ValueError, match="noise"):
        agents.make("gaussian-dp-ftrl-oco", dim=3, horizon=50, noise="grid")
    with pytest.raises(ValueError, match="delta"):
        agents.make("gaussian-dp-ftrl-oco", dim=3, horizon=50, delta=0.0)


def test_gaussian_tree_noise_has_the_calibrated_scale():
    # Zero gradients: the released sum after round 1 is one node's noise, N(0, sigma^2 I).
    b = 20_000
    a = GaussianDPFTRLOCO(2, 64, epsilon=2.0, lam=1e6, num_envs=b, seed=0)
    a.act(np.zeros((b, 2)))
    a.act(np.zeros((b, 2)))
    assert np.std(a.noisy_sum) == pytest.approx(a.node_scale, rel=0.02)


# ----------------------------------------------------------------------------- lazy FTRL
def test_lazy_schedule_splits_t_into_s_plus_one_blocks():
    rounds = lazy_schedule(100, 3)
    np.testing.assert_array_equal(rounds, [26, 51, 76])
    assert len(lazy_schedule(10, 20)) == 9  # at most T - 1 recomputations
    assert len(lazy_schedule(100, 0)) == 0


def test_lazy_ftrl_recomputes_only_on_its_schedule_and_equals_ftrl_there():
    t, s = 60, 4
    g = np.random.default_rng(1).uniform(-0.5, 0.5, size=(t, 2, 3))
    lazy = LazyFTRLOCO(3, t, switch_budget=s, num_envs=2, seed=0)
    full = FTRLOCO(3, t, lam=lazy.lam, num_envs=2, seed=0)
    x, y = play(lazy, g), play(full, g)
    schedule = set(lazy_schedule(t, s).tolist())
    for r in range(1, t + 1):  # round r's point: FTRL's on the schedule, else unchanged
        if r in schedule:
            np.testing.assert_allclose(x[r - 1], y[r - 1])
        elif r > 1:
            np.testing.assert_array_equal(x[r - 1], x[r - 2])
    assert np.all(lazy.switches <= s) and np.all(lazy.switches >= 1)
    default = agents.make("lazy-ftrl-oco", dim=5, horizon=400)
    assert default.switch_budget == math.floor(math.sqrt(5 * 400))  # lazy P-COMW's budget
    with pytest.raises(ValueError, match="switch_budget"):
        LazyFTRLOCO(3, 10, switch_budget=20)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 8.0])
def test_gaussian_tree_claim_is_the_library_epsilon(eps):
    """dp-ftrl-oco's law='gaussian' keeps the zCDP rule's sigma and claims the exact profile of
    the same tree: dp-accounting's PLD accountant (levels Gaussian releases of noise multiplier
    sigma / 2G) gives the same epsilon, below the request (0.352 / 0.742 / 1.56 / 6.76)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    agent = DPFTRLOCO(3, 1000, epsilon=eps, law="gaussian")
    claim = agent.privacy
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(agent.node_scale / 2.0), agent.levels
    )
    pld = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_SPECIAL, value_discretization_interval=1e-4
    )
    pld.compose(event)
    assert pld.get_epsilon(1e-5) == pytest.approx(claim.epsilon, abs=1e-4)
    assert claim.epsilon < 0.9 * eps and claim.delta == 1e-5 and claim.certified
    rho = agent.levels * 4.0 / (2 * agent.node_scale**2)  # the noise is the zCDP rule's
    assert rho + 2 * math.sqrt(rho * math.log(1e5)) == pytest.approx(eps)


def test_both_gaussian_trees_share_one_implementation():
    """dp-ftrl-oco and gaussian-dp-ftrl-oco differ only in calibration, deltas and backends."""
    from agents.oco_baselines import TreeFTRLOCO

    assert issubclass(DPFTRLOCO, TreeFTRLOCO) and issubclass(GaussianDPFTRLOCO, TreeFTRLOCO)
    for method in ("_init_state", "_learn", "_gaussian_step", "_choose", "declaration", "privacy"):
        assert method not in vars(DPFTRLOCO) and method not in vars(GaussianDPFTRLOCO), method
