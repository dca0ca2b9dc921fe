"""FTPL-GR's adaptive (self-confident) rate, an option of Alg. 1 + FTPL-GR (#29).

Known answers of the rate rule (one arm: every resample hits, so ``M_n = 1``), the steps of its
regret bound (the truncated-geometric moment inequality by exact sums, the Laplace moments by
numerical integration, the self-confident summation lemma on random sequences), the tuning's
monotonicity in epsilon and its epsilon = inf limit, batch = single runs, the privacy claim and
bad input.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from conftest import rollout
from scipy import integrate

import agents
from agents.bandit_core import AdaptiveFtplRate, FtplGRCore
from agents.private_bandit import PrivateBatchedBandit
from agents.private_bandit_tuning import (
    DEFAULT_FTPL_RATE,
    _bandit_caps,
    ftpl_gr_adaptive_bound,
    ftpl_gr_adaptive_calibrated,
    laplace_fed_moment,
    laplace_max_mean,
    tune_batched_bandit,
)
from dp_experts_env.batch_rng import BatchRNG

K, T = 3, 60


# ------------------------------------------------------------------ the rate rule
def test_rate_rule_known_answer_on_one_arm():
    # One arm: the first redraw always hits, so M_n = 1 and q_n = y^2 exp(eta_n M y^-).
    rule = AdaptiveFtplRate(penalty=1.0, q0=2.0, eta_max=math.inf)
    core = FtplGRCore(BatchRNG([1, 2]), 1, eta=1.0, max_resamples=4, adaptive=rule)
    assert core.rate() == pytest.approx([0.5, 0.5])  # sqrt(1 / (2 * 2))
    core.sample()
    core.update(np.zeros(2, dtype=np.int64), np.array([-0.5, 0.5]))
    np.testing.assert_array_equal(core.last_resamples, [1, 1])
    s = np.array([2.0 + 0.25 * math.exp(0.5 * 4 * 0.5), 2.25])
    np.testing.assert_allclose(core.second_moment, s)
    np.testing.assert_allclose(core.rate(), np.sqrt(1.0 / (2.0 * s)))
    # A masked run keeps its state.
    core.sample()
    core.update(np.zeros(2, dtype=np.int64), np.array([1.0, 1.0]), mask=np.array([True, False]))
    np.testing.assert_allclose(core.second_moment, [s[0] + 1.0, s[1]])


def test_rate_is_capped_and_non_increasing():
    rule = AdaptiveFtplRate(penalty=2.0, q0=1.0, eta_max=0.3)
    core = FtplGRCore(BatchRNG([5, 6, 7]), 4, eta=1.0, max_resamples=8, adaptive=rule)
    assert np.all(core.rate() == 0.3)  # sqrt(2 / 2) = 1 > 0.3
    rng = np.random.default_rng(0)
    previous = core.rate()
    for _ in range(50):
        arms = core.sample()
        core.update(arms, rng.laplace(0.5, 3) + rng.random(3))
        now = core.rate()
        assert np.all(now <= previous) and np.all(now > 0)
        previous = now


def test_fixed_rate_core_is_unchanged_by_the_option():
    a = FtplGRCore(BatchRNG([3, 4]), 5, eta=0.2, max_resamples=7)
    b = FtplGRCore(BatchRNG([3, 4]), 5, eta=0.2, max_resamples=7, adaptive=None)
    rng = np.random.default_rng(1)
    for _ in range(20):
        arms_a, arms_b = a.sample(), b.sample()
        np.testing.assert_array_equal(arms_a, arms_b)
        y = rng.random(2)
        a.update(arms_a, y)
        b.update(arms_b, y)
    np.testing.assert_array_equal(a.cum_estimate, b.cum_estimate)


# ------------------------------------------------------------------ the bound's steps
@pytest.mark.parametrize("cap", [1, 2, 5, 40])
@pytest.mark.parametrize("p", [0.01, 0.2, 0.5, 1.0])
def test_truncated_geometric_second_moment(cap, p):
    # K = min(Geometric(p), M): p E K^2 = 2 E K - 1 - (2M - 1)(1 - p)^M <= 2 E K, and K^2 <= M K.
    k = np.arange(1, cap + 1)
    pmf = p * (1 - p) ** (k - 1)
    pmf[-1] = (1 - p) ** (cap - 1)
    ek, ek2 = float(pmf @ k), float(pmf @ k**2)
    assert p * ek2 == pytest.approx(2 * ek - 1 - (2 * cap - 1) * (1 - p) ** cap, abs=1e-12)
    assert p * ek2 <= 2 * ek + 1e-12 and ek2 <= cap * ek + 1e-12


@pytest.mark.parametrize("power", [2, 4])
@pytest.mark.parametrize(
    ("level", "lam", "rate"), [(0.0, 0.5, 1.0), (1.0, 0.5, 0.9), (0.3, 1.0, 0.4)]
)
def test_laplace_fed_moment_by_integration(power, level, lam, rate):
    def f(x):
        z = level + x
        return z**power * math.exp(rate * max(0.0, -z) - abs(x) / lam) / (2 * lam)

    pieces = [(-np.inf, -level), (-level, 0.0), (0.0, np.inf)]
    value = sum(integrate.quad(f, a, b, limit=200)[0] for a, b in pieces)
    assert laplace_fed_moment(level, lam, power, rate) == pytest.approx(value, rel=1e-7)
    assert laplace_fed_moment(level, lam, power, 1.0 / lam) == math.inf
    assert laplace_fed_moment(level, 0.0, power, rate) == level**power


def test_laplace_fed_moment_convex_in_the_level():
    levels = np.linspace(0, 1, 21)
    for power, rate in [(2, 1.2), (4, 0.8)]:
        vals = np.array([laplace_fed_moment(x, 0.5, power, rate) for x in levels])
        assert np.all(np.diff(vals, 2) >= -1e-12)
        assert vals.max() == max(vals[0], vals[-1])


def test_psi_is_below_its_exponential_quadratic_bound():
    # psi(x) = e^-x - 1 + x <= (x^2 / 2) e^(max(0, -x)), the step from the gap to q_n.
    x = np.linspace(-30.0, 30.0, 60_001)
    psi = np.expm1(-x) + x
    assert np.all(psi <= x * x / 2 * np.exp(np.maximum(0.0, -x)) * (1 + 1e-12) + 1e-15)


def _laplace_potential(cum, eta):
    """Phi(L) = E min_i (L_i + Z_i/eta), Z standard Laplace, by quadrature of its tails."""
    x = np.linspace(-80.0, 80.0, 400_001) / eta + np.mean(cum)
    w = eta * (x[:, None] - np.asarray(cum)[None, :])
    surv = np.where(w < 0, 1 - 0.5 * np.exp(np.minimum(w, 0)), 0.5 * np.exp(-np.maximum(w, 0)))
    above = np.prod(surv, axis=1)  # P(min > x)
    pos, neg = x >= 0, x <= 0
    return np.trapezoid(above[pos], x[pos]) - np.trapezoid(1 - above[neg], x[neg])


def test_changing_rates_step_on_the_exact_potential():
    # For eta' <= eta: 0 <= Phi_eta(L) - Phi_eta'(L) <= E_m (1/eta' - 1/eta), E_m of m Laplaces.
    e_m = laplace_max_mean(3)
    for cum in ([0.0, 0.0, 0.0], [0.3, -0.5, 1.1], [5.0, 0.0, 9.0]):
        for eta, eta2 in [(1.0, 0.5), (0.7, 0.69), (2.0, 0.1)]:
            drop = _laplace_potential(cum, eta) - _laplace_potential(cum, eta2)
            assert -1e-6 <= drop <= e_m * (1 / eta2 - 1 / eta) + 1e-6
    # All losses equal: the drop is exactly E_m (1/eta' - 1/eta).
    drop = _laplace_potential([0.0] * 3, 1.0) - _laplace_potential([0.0] * 3, 0.5)
    assert drop == pytest.approx(e_m, abs=1e-5)


def test_self_confident_summation_lemma():
    # sum_n q_n / sqrt(S_{n-1}) <= 2 sqrt(S_N) + sum_n q_n^2 / (2 q0^1.5), S_0 = q0.
    rng = np.random.default_rng(2)
    for q0 in (0.1, 1.0, 50.0):
        for _ in range(200):
            q = rng.exponential(rng.uniform(0.01, 20), size=rng.integers(1, 200))
            s = q0 + np.concatenate([[0.0], np.cumsum(q)])
            lhs = float(np.sum(q / np.sqrt(s[:-1])))
            assert lhs <= 2 * math.sqrt(s[-1]) + float(np.sum(q**2)) / (2 * q0**1.5) + 1e-9


def test_adaptive_bound_known_answer_without_noise():
    m, tb, cap, q0 = 10, 5_000, 100, 1_000.0
    pen = laplace_max_mean(m)
    expected = (
        2 * math.sqrt(2 * pen * (q0 + tb * m))
        + math.sqrt(pen / 2) * tb * cap * m / (2 * q0**1.5)
        + m * tb * (cap / (cap + 1)) ** cap / (cap + 1)
    )
    assert ftpl_gr_adaptive_bound(m, tb, 0.0, cap, 0.25, q0) == pytest.approx(expected)
    assert ftpl_gr_adaptive_bound(m, tb, 0.5, cap, 0.5, q0) == math.inf  # needs s < 1/2
    assert ftpl_gr_adaptive_bound(m, tb, 0.5, cap, 0.2, q0) > expected


# ------------------------------------------------------------------ tuning
def test_tuned_bound_is_monotone_in_epsilon_with_the_inf_limit():
    bounds = [
        tune_batched_bandit("ftpl-gr", 10, 10_000, e, "calibrated", rate="adaptive").bound
        for e in (0.25, 0.5, 1.0, 2.0, 8.0, 1e6)
    ]
    assert all(a >= b for a, b in zip(bounds, bounds[1:], strict=False))
    inf = tune_batched_bandit("ftpl-gr", 10, 10_000, math.inf, "calibrated", rate="adaptive")
    assert inf.params["eta"] == math.inf and inf.tau == 1
    eta, cap, q0, bound = ftpl_gr_adaptive_calibrated(10, 10_000, 0.0)
    assert (inf.params["resample_cap"], inf.params["q0"]) == (cap, q0)
    assert bounds[-1] == pytest.approx(inf.bound, rel=1e-3)


def test_tuned_cap_keeps_the_noise_moments_finite():
    for eps in (0.5, 1.0, 2.0, 8.0):
        t = tune_batched_bandit("ftpl-gr", 10, 10_000, eps, "calibrated", rate="adaptive")
        s = t.params["eta"] * t.params["resample_cap"] * t.lam
        assert 0 < s < 0.5


def test_cap_warning_when_the_rate_cap_sits_on_the_proofs_limit():
    lam, cap = 0.5, 100
    on = {"eta": 0.495 / (cap * lam), "resample_cap": cap, "q0": 1.0}
    off = on | {"eta": 0.3 / (cap * lam)}
    args = ("ftpl-gr", 10, 10_000, "calibrated", 2, True, lam)
    assert any("limit of its proof" in c for c in _bandit_caps(*args, on))
    assert _bandit_caps(*args, off) == ()


# ------------------------------------------------------------------ the learner
def _adaptive(**kw):
    return PrivateBatchedBandit(K, T, n_arms=K, base="ftpl-gr", rate="adaptive", **kw)


def test_learner_builds_the_adaptive_core_from_the_tuning():
    agent = _adaptive(epsilon=1.0, seed=3)
    rule = agent.base_learner.adaptive
    assert rule == AdaptiveFtplRate(
        laplace_max_mean(K), agent.base_params["q0"], agent.base_params["eta"]
    )
    assert agent.rate == "adaptive"
    default = PrivateBatchedBandit(K, T, n_arms=K, base="ftpl-gr")
    assert default.rate == DEFAULT_FTPL_RATE
    assert (default.base_learner.adaptive is None) == (DEFAULT_FTPL_RATE == "fixed")


@pytest.mark.parametrize("name", ["private-batched-bandit", "private-bandit-over-experts"])
def test_adaptive_batch_equals_single_runs(name):
    rng = np.random.default_rng(0)
    losses = rng.random((T, K))
    advice = rng.dirichlet(np.ones(K), size=(T, K))
    params = {"n_experts": K, "horizon": T, "n_arms": K, "epsilon": 0.5, "tau": 3}
    params |= {"base": "ftpl-gr", "rate": "adaptive"}
    batch = rollout(agents.make(name, num_envs=3, seed=7, **params), losses, advice=advice)
    for b in range(3):
        single = rollout(agents.make(name, seed=7 + b, **params), losses, advice=advice)
        np.testing.assert_array_equal(batch.actions[:, b], single.actions[:, 0])


def test_adaptive_rate_leaves_the_privacy_claim_unchanged():
    fixed = PrivateBatchedBandit(K, T, n_arms=K, base="ftpl-gr", rate="fixed", tau=2)
    adaptive = _adaptive(tau=2)
    # Same claim but for the notes' bound value (a vacuous-bound warning at this tiny T).
    assert dataclasses.replace(adaptive.privacy, notes="") == dataclasses.replace(
        fixed.privacy, notes=""
    )
    assert repr(adaptive.declaration) == repr(fixed.declaration)
    assert adaptive.noise_scale == fixed.noise_scale


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base": "ftpl-gr", "rate": "fast"}, "rate must be one of"),
        ({"base": "exp3", "rate": "adaptive"}, "applies to base='ftpl-gr'"),
        ({"base": "ftpl-gr", "rate": "adaptive", "tuning": "paper"}, "tuning='paper' is Lemma"),
    ],
)
def test_bad_rate(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivateBatchedBandit(K, T, n_arms=K, **kwargs)


def test_bad_rule():
    with pytest.raises(ValueError, match="q0 must be > 0"):
        AdaptiveFtplRate(1.0, 0.0)
    with pytest.raises(ValueError, match="eta_max must be > 0"):
        AdaptiveFtplRate(1.0, 1.0, -1.0)
    with pytest.raises(TypeError, match="adaptive must be an AdaptiveFtplRate"):
        FtplGRCore(BatchRNG([1]), 2, eta=1.0, max_resamples=2, adaptive=0.5)
