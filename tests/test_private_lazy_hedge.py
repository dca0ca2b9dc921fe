"""private-lazy-hedge (discrete P-COMW, unnormalised ratio): recipe numbers, exact marginal, coins,
budget, batch = single runs, audits and mutant, regret below the bound, epsilon monotonicity."""

import math

import numpy as np
import pytest
from conftest import rollout

import agents
from agents.private_lazy_hedge import PrivateLazyHedge
from dp_experts_env.evaluation.audit import audit_agent

NAME = "private-lazy-hedge"


def binomial_ok(emp, p, n, sigmas=5.0):
    return np.all(np.abs(emp - p) <= sigmas * np.sqrt(p * (1 - p) / n) + 1e-12)


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    ("t", "eps", "beta", "budget", "bound"),
    [(10_000, 1.0, 1.655e-3, 815, 1394), (1_000_000, 4.0, 1.284e-3, 20339, 1953)],
)
def test_recipe_reproduces_the_reality_check_table(t, eps, beta, budget, bound):
    # Reference numbers: N = 10, delta = 1e-5, composition at delta/2 (mode="paper").
    a = PrivateLazyHedge(10, t, epsilon=eps, delta=1e-5, mode="paper", tuning="paper")
    assert a.p == pytest.approx((6 * t) ** (-1 / 3))
    assert a.beta == pytest.approx(beta, rel=1e-3)
    assert round(a.budget) == budget and round(a.regret_bound) == bound
    assert a.epsilon_spent <= eps and a.parameters.composition_delta == 5e-6
    assert a.inverse_temperature == a.beta and a.max_resamples == math.ceil(a.budget)
    strict = PrivateLazyHedge(10, t, epsilon=eps, delta=1e-5, tuning="paper")  # full delta
    assert strict.beta > a.beta and strict.regret_bound < a.regret_bound
    calibrated = PrivateLazyHedge(10, t, epsilon=eps, delta=1e-5, tuning="calibrated")
    assert calibrated.regret_bound <= strict.regret_bound
    claim = strict.privacy
    assert claim.certified and claim.holds_against == "adaptive" and claim.delta == 1e-5
    assert "exact per-step accountant" in claim.accountant


def test_beta_is_capped_at_hedges_rate_and_pure_dp_uses_basic_composition():
    a = PrivateLazyHedge(4, 500, epsilon=500.0)
    assert a.beta == pytest.approx(math.sqrt(8 * math.log(4) / 500))
    pure = PrivateLazyHedge(10, 10_000, epsilon=1.0, delta=0.0)
    want = pure.beta / pure.p + 2 * pure.beta * math.ceil(pure.budget)
    assert pure.epsilon_spent == pytest.approx(want) and pure.epsilon_spent <= 1.0
    assert pure.privacy.delta == 0 and "basic" in pure.privacy.accountant


# --------------------------------------------------------------------------- exact marginal
def test_marginal_equals_hedge_without_budget_cap():
    b, n, t_max = 20_000, 3, 8
    seq = np.random.default_rng(21).random((t_max, n))
    a = PrivateLazyHedge(
        n, t_max, epsilon=20.0, delta=0.0, beta=0.6, p=0.2, budget=t_max, num_envs=b, seed=2
    )
    assert a.max_resamples == t_max - 1  # never binds
    hedge = agents.make("hedge", n_experts=n, horizon=t_max, eta=a.beta)
    acts = rollout(a, np.broadcast_to(seq[:, None, :], (t_max, b, n))).actions
    obs = np.zeros((1, n))
    for t in range(t_max):
        hedge.act(obs)
        law = hedge.action_distribution()[0]
        emp = np.bincount(acts[t], minlength=n) / b
        assert binomial_ok(emp, law, b), (t, emp, law)
        obs = seq[t][None]


# --------------------------------------------------------------------------- coins and budget
@pytest.mark.parametrize("loss", [0.0, 1.0])
def test_switch_probability_uses_the_parameters_in_use(loss):
    b, n = 20_000, 2
    a = PrivateLazyHedge(
        n, 10, epsilon=20.0, delta=0.0, beta=0.7, p=0.15, budget=10, num_envs=b, seed=3
    )
    a.act(np.zeros((b, n)))
    a.act(np.full((b, n), loss))
    want = a.p + (1 - a.p) * (1 - math.exp(-a.beta * loss))
    assert binomial_ok(np.mean(a.resamples == 1), want, b)


def test_switches_never_exceed_ceil_budget_and_freeze_after():
    b, n, t_max = 2000, 4, 50
    a = PrivateLazyHedge(
        n, t_max, epsilon=20.0, delta=0.0, beta=0.5, p=0.4, budget=2.5, num_envs=b, seed=4
    )
    run = rollout(
        a, np.random.default_rng(5).random((t_max, b, n)), record=lambda g: g.resamples.copy()
    )
    acts, used = run.actions, run.records
    assert a.max_resamples == 3 and used.max() == 3
    changes = np.count_nonzero(acts[1:] != acts[:-1], axis=0)
    assert np.all(changes <= used[-1])
    first = np.argmax(used == 3, axis=0)
    for run in range(0, b, 89):
        if used[-1, run] == 3:
            assert np.all(acts[first[run] :, run] == acts[first[run], run])


# --------------------------------------------------------------------------- batch = single
@pytest.mark.parametrize("params", [{}, {"tuning": "calibrated", "delta": 0.0}, {"epsilon": 8.0}])
def test_batch_equals_single_runs(params):
    b, n, t_max = 3, 5, 80
    losses = np.random.default_rng(6).random((t_max, b, n))
    batch = rollout(PrivateLazyHedge(n, t_max, num_envs=b, seed=20, **params), losses).actions
    for i in range(b):
        single = PrivateLazyHedge(n, t_max, seed=20 + i, **params)
        assert np.array_equal(rollout(single, losses[:, i : i + 1]).actions, batch[:, i : i + 1])


# --------------------------------------------------------------------------- privacy audits
T_AUDIT = 6
X = np.zeros((T_AUDIT, 2))
X[0] = [0.0, 1.0]
X_NEIGHBOUR = X.copy()
X_NEIGHBOUR[0] = [1.0, 0.0]


# The default learner's audit and mutants are in test_audit_zoo.py; the pure-DP variant here.
@pytest.mark.parametrize("params", [{"delta": 0.0, "tuning": "calibrated"}])
def test_audit_passes(params):
    result = audit_agent(NAME, X, X_NEIGHBOUR, n_runs=8000, seed=1, epsilon=1.0, **params)
    assert result.passed, result.summary()


def test_exact_privacy_loss_is_within_the_accountant():
    # Exact enumeration of the action-sequence law (shared with the dartboard tests: same lazy
    # sampler, weights exp(-beta L)); the accountant beta/p + 2 beta ceil(B) must bound it, and
    # charging one resample fewer must not.
    from test_private_dartboard import exact_privacy_loss

    agent = PrivateLazyHedge(2, 5, epsilon=50.0, delta=0.0, beta=1.0, p=0.9, budget=1)
    loss = exact_privacy_loss(agent)
    assert agent.max_resamples == 1
    assert loss <= agent.epsilon_spent + 1e-12
    assert loss > agent.epsilon_spent - 2.0 * agent.beta


# --------------------------------------------------------------------------- utility
def test_static_regret_on_an_oblivious_sequence_is_below_the_bound():
    b, n, t_max = 100, 4, 2000
    rng = np.random.default_rng(12)
    seq = (rng.random((t_max, n)) < np.array([0.6, 0.4, 0.6, 0.6])).astype(float)
    seq[t_max // 2 :, [1, 3]] = seq[t_max // 2 :, [3, 1]]
    losses = np.broadcast_to(seq[:, None, :], (t_max, b, n))
    a = PrivateLazyHedge(n, t_max, epsilon=8.0, tuning="calibrated", num_envs=b, seed=2)
    acts = rollout(a, losses).actions
    paid = np.take_along_axis(losses, acts[:, :, None], axis=2)[:, :, 0].sum(0)
    reg = paid - seq.sum(0).min()
    assert a.regret_bound < 0.5 * t_max
    assert reg.mean() + 3 * reg.std() / math.sqrt(b) < a.regret_bound


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"beta": 0.0}, ValueError, "beta"),
        ({"p": 0.0}, ValueError, "p"),
        ({"p": 1.5}, ValueError, "p"),
        ({"budget": -1.0}, ValueError, "budget"),
        ({"beta": 0.5, "p": 0.1}, ValueError, "spend epsilon"),
        ({"beta": "big"}, TypeError, "beta"),
        ({"tuning": "auto"}, ValueError, "tuning"),
        ({"delta": -0.1}, ValueError, "delta"),
    ],
)
def test_bad_parameters_raise(params, error, match):
    with pytest.raises(error, match=match):
        PrivateLazyHedge(10, 1000, **params)
