"""private-shrinking-dartboard and its batched variant (AFKT Alg. 1, Thm 5 / Cor. 6)."""

import itertools
import math

import numpy as np
import pytest
from conftest import rollout

import agents
from agents.private_dartboard import (
    BatchedPrivateShrinkingDartboard,
    PrivateShrinkingDartboard,
    balanced_batch_size,
    paper_batch_size,
)
from dp_experts_env.evaluation.audit import audit_agent

PSD = "private-shrinking-dartboard"
BPSD = "batched-private-shrinking-dartboard"


def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=-1, keepdims=True)


def binomial_ok(emp, p, n, sigmas=5.0):
    return np.all(np.abs(emp - p) <= sigmas * np.sqrt(p * (1 - p) / n) + 1e-12)


# --------------------------------------------------------------------------- parameters
def test_paper_tuning_reproduces_corollaries_3_and_4():
    a = PrivateShrinkingDartboard(100, 10_000, epsilon=1.0, delta=1e-6, tuning="paper")
    assert (round(a.p, 4), round(a.eta, 5), a.budget) == (0.0193, 0.00048, 773)
    assert a.max_resamples == 772  # k starts at 1 (erratum E-AFKT-1)
    assert round(a.epsilon_paper, 2) == 0.63 and round(a.epsilon_spent, 2) == 0.17
    assert a.inverse_temperature == pytest.approx(-math.log1p(-a.eta))
    pure = PrivateShrinkingDartboard(100, 10_000, epsilon=1.0, delta=0.0, tuning="paper")
    assert (pure.p, pure.eta, pure.budget) == (0.01, 0.0005, 400)
    assert pure.epsilon_paper == pytest.approx(0.85) and pure.privacy.delta == 0
    claim = a.privacy
    # The claim is what the exact accountant certifies (0.17), not the requested 1.0.
    assert claim.certified and claim.holds_against == "adaptive"
    assert claim.epsilon == a.epsilon_spent and claim.requested_epsilon == 1.0
    assert "exact per-step accountant" in claim.accountant
    # Corollaries assume eps <= 1 (erratum E-AFKT-5): a larger target runs at 1.
    assert PrivateShrinkingDartboard(100, 10_000, epsilon=5.0, tuning="paper").eta == a.eta


def test_calibrated_tuning_spends_the_budget_and_beats_the_reference_bounds():
    a = PrivateShrinkingDartboard(100, 10_000, epsilon=1.0, delta=1e-6, tuning="calibrated")
    assert a.epsilon_spent == pytest.approx(1.0, rel=1e-6) and a.epsilon_spent <= 1.0
    assert a.regret_bound <= 1.42e3  # reference: 1.4e3 with p = (8 T ln(1/delta))^{-1/3}
    assert a.eta <= a.p < 0.5
    pure = PrivateShrinkingDartboard(100, 10_000, epsilon=1.0, delta=0.0, tuning="calibrated")
    assert pure.regret_bound <= 2.36e3  # reference: 2.4e3 at p = 1/sqrt(8T)
    paper_mode = PrivateShrinkingDartboard(
        100, 10_000, epsilon=1.0, mode="paper", tuning="calibrated"
    )
    assert paper_mode.epsilon_paper == pytest.approx(1.0, rel=1e-6)
    assert paper_mode.epsilon_spent < 0.5  # the exact accountant is much tighter


def test_batched_batch_sizes_and_corollary6():
    args = (100, 1_000_000, 0.1, 1e-6)
    assert (paper_batch_size(*args), balanced_batch_size(*args)) == (2, 260)
    a = BatchedPrivateShrinkingDartboard(100, 1_000_000, epsilon=0.1, tuning="paper")
    b = BatchedPrivateShrinkingDartboard(
        100, 1_000_000, epsilon=0.1, batch_size="paper", tuning="paper"
    )
    assert (a.batch, b.batch) == (260, 2)
    assert round(a.regret_bound, -3) == 87_000 and round(b.regret_bound, -4) == 350_000
    # Erratum E-AFKT-8: Theorem 5's closed form exceeds epsilon at Cor. 6's parameters; the exact
    # accountant certifies them.
    assert a.epsilon_paper > 0.1 and a.epsilon_spent < 0.1 and a.privacy.certified
    assert "Theorem 5" in a.privacy.notes
    pure = BatchedPrivateShrinkingDartboard(
        100, 100_000, epsilon=0.5, delta=0.0, batch_size=10, tuning="calibrated"
    )
    assert pure.batch == 10 and pure.epsilon_spent <= 0.5 and pure.privacy.delta == 0
    one = BatchedPrivateShrinkingDartboard(10, 1000, epsilon=1.0, batch_size=1, eta=0.002, p=0.05)
    two = PrivateShrinkingDartboard(10, 1000, epsilon=1.0, eta=0.002, p=0.05)
    assert one.epsilon_spent == two.epsilon_spent


# --------------------------------------------------------------------------- exact marginals
def test_marginal_equals_hedge_without_budget_cap():
    # Lemma 14: with K = T + 1 the law of x_t is exactly P^t ∝ (1 - eta)^{L_{t-1}}.
    b, n, t_max = 20_000, 3, 8
    seq = np.random.default_rng(5).random((t_max, n))
    a = PrivateShrinkingDartboard(
        n, t_max, epsilon=10.0, delta=0.0, eta=0.25, p=0.3, budget=t_max + 1, num_envs=b, seed=3
    )
    hedge = agents.make("hedge", n_experts=n, horizon=t_max, eta=a.inverse_temperature, num_envs=1)
    acts = rollout(a, np.broadcast_to(seq[:, None, :], (t_max, b, n))).actions
    obs = np.zeros((1, n))
    for t in range(t_max):
        hedge.act(obs)
        law = hedge.action_distribution()[0]
        np.testing.assert_allclose(law, softmax(-a.inverse_temperature * seq[:t].sum(0)))
        emp = np.bincount(acts[t], minlength=n) / b
        assert binomial_ok(emp, law, b), (t, emp, law)
        obs = seq[t][None]
    assert a.resamples.max() <= a.max_resamples == t_max - 1


def test_batched_marginal_uses_block_averages():
    b, n, t_max, batch = 20_000, 3, 9, 2
    seq = np.random.default_rng(6).random((t_max, n))
    a = BatchedPrivateShrinkingDartboard(
        n,
        t_max,
        epsilon=10.0,
        delta=0.0,
        batch_size=batch,
        eta=0.3,
        p=0.3,
        budget=20,
        num_envs=b,
        seed=4,
    )
    acts = rollout(a, np.broadcast_to(seq[:, None, :], (t_max, b, n))).actions
    lam = a.inverse_temperature
    for start in range(0, t_max, batch):  # 0-based first round of each block
        blocks = start // batch
        avg = seq[: blocks * batch].reshape(blocks, batch, n).mean(axis=1).sum(0) if blocks else 0
        law = softmax(-lam * (np.zeros(n) + avg))
        emp = np.bincount(acts[start], minlength=n) / b
        assert binomial_ok(emp, law, b), (start, emp, law)
        end = min(start + batch, t_max)
        assert np.all(acts[start:end] == acts[start])  # one expert per block


# --------------------------------------------------------------------------- coins and budget
@pytest.mark.parametrize(("loss", "name"), [(0.0, "forced only"), (1.0, "forced + data")])
def test_switch_probability_uses_the_parameters_in_use(loss, name):
    b, n = 20_000, 2
    a = PrivateShrinkingDartboard(
        n, 10, epsilon=20.0, delta=0.0, eta=0.2, p=0.25, budget=11, num_envs=b, seed=7
    )
    a.act(np.zeros((b, n)))
    a.act(np.full((b, n), loss))  # round 2's decision reads round 1's loss of the held expert
    want = a.p + (1 - a.p) * (1 - (1 - a.eta) ** loss)
    assert binomial_ok(np.mean(a.resamples == 1), want, b), name


def test_switches_never_exceed_the_budget_and_freeze_after():
    b, n, t_max = 2000, 4, 60
    a = PrivateShrinkingDartboard(
        n, t_max, epsilon=20.0, delta=0.0, eta=0.3, p=0.4, budget=4, num_envs=b, seed=1
    )
    run = rollout(
        a, np.random.default_rng(2).random((t_max, b, n)), record=lambda ag: ag.resamples.copy()
    )
    acts, used = run.actions, run.records
    assert a.max_resamples == 3
    assert used.max() == 3 and np.all(used <= 3)
    changes = np.count_nonzero(acts[1:] != acts[:-1], axis=0)
    assert np.all(changes <= used[-1]) and np.array_equal(a.switches, changes)
    frozen = used == 3
    first = np.argmax(frozen, axis=0)
    for run in range(0, b, 97):
        assert np.all(acts[first[run] :, run] == acts[first[run], run])
    tuned = PrivateShrinkingDartboard(10, 3000, num_envs=50, seed=0, tuning="calibrated")
    rollout(tuned, np.random.default_rng(3).random((3000, 50, 10)))
    assert tuned.resamples.max() <= tuned.max_resamples


# --------------------------------------------------------------------------- batch = single
@pytest.mark.parametrize(
    ("name", "params"),
    [
        (PSD, {}),
        (PSD, {"tuning": "calibrated", "delta": 0.0}),
        (BPSD, {"batch_size": 3, "tuning": "calibrated"}),
        (BPSD, {"epsilon": 0.05}),
    ],
)
def test_batch_equals_single_runs(name, params):
    b, n, t_max = 3, 4, 80
    losses = np.random.default_rng(9).random((t_max, b, n))
    batch = rollout(
        agents.make(name, n_experts=n, horizon=t_max, num_envs=b, seed=11, **params), losses
    ).actions
    for i in range(b):
        single = agents.make(name, n_experts=n, horizon=t_max, seed=11 + i, **params)
        assert np.array_equal(rollout(single, losses[:, i : i + 1]).actions, batch[:, i : i + 1])


# --------------------------------------------------------------------------- privacy audits
# The default learners' audits and mutants are in test_audit_zoo.py; the variants here.
def neighbours(t_max):
    x = np.zeros((t_max, 2))
    x[0] = [0.0, 1.0]
    xp = x.copy()
    xp[0] = [1.0, 0.0]
    return x, xp


@pytest.mark.parametrize(
    ("name", "t_max", "params"),
    [
        (PSD, 6, {"delta": 0.0, "tuning": "calibrated"}),
        (BPSD, 12, {"batch_size": 2, "delta": 0.0, "tuning": "calibrated"}),
    ],
)
def test_audit_passes(name, t_max, params):
    x, xp = neighbours(t_max)
    result = audit_agent(name, x, xp, n_runs=8000, seed=1, epsilon=1.0, **params)
    assert result.passed, result.summary()


def exact_action_law(losses, c, p, cap):
    """Exact law of the whole action sequence of the lazy sampler (AFKT Alg. 1 with
    weights exp(-c L), forced-switch probability p, at most ``cap`` resamples), by enumeration.

    Returns a dict {action tuple: probability}. Built from the paper's pseudo-code, not the code.
    """
    t_max, n = losses.shape
    states = {((i,), 0): 1.0 / n for i in range(n)}
    for t in range(1, t_max):
        cum = losses[:t].sum(axis=0)
        fresh = np.exp(-c * (cum - cum.min()))
        fresh /= fresh.sum()
        nxt = {}
        for (seq, k), pr in states.items():
            x = seq[-1]
            move = p + (1 - p) * -math.expm1(-c * losses[t - 1, x]) if k < cap else 0.0
            nxt[(seq + (x,), k)] = nxt.get((seq + (x,), k), 0.0) + pr * (1 - move)
            if move:
                for j in range(n):
                    key = (seq + (j,), k + 1)
                    nxt[key] = nxt.get(key, 0.0) + pr * move * fresh[j]
        states = nxt
    law = {}
    for (seq, _), pr in states.items():
        law[seq] = law.get(seq, 0.0) + pr
    return law


def exact_privacy_loss(agent, t_max=5):
    """Largest |log P(seq) / P'(seq)| over 2-expert loss sequences with 0/1 entries and every
    neighbour replacing one round by its complement (the last round's loss is never read)."""
    c, p, cap = agent.inverse_temperature, agent.p, agent.max_resamples
    worst = 0.0
    for rows in itertools.product([(0.0, 1.0), (1.0, 0.0), (0.0, 0.0), (1.0, 1.0)], repeat=t_max):
        a = np.array(rows)
        law_a = exact_action_law(a, c, p, cap)
        for r in range(t_max - 1):
            b = a.copy()
            b[r] = 1.0 - a[r]
            law_b = exact_action_law(b, c, p, cap)
            worst = max(worst, max(abs(math.log(law_a[s] / law_b[s])) for s in law_a))
    return worst


@pytest.mark.parametrize(
    "params", [dict(eta=0.3, p=0.35, budget=2), dict(eta=0.2, p=0.2, budget=3)]
)
def test_exact_action_law_matches_and_its_privacy_loss_is_within_the_accountant(params):
    # The exact accountant (coin + K-1 redraws) must bound the true worst-case privacy loss of
    # the action sequence; dropping the coin term (epsilon - e_sw) must not (it would be wrong).
    agent = PrivateShrinkingDartboard(2, 5, epsilon=50.0, delta=0.0, **params)
    loss = exact_privacy_loss(agent)
    e_rs = 2.0 * agent.inverse_temperature
    assert loss <= agent.epsilon_spent + 1e-12
    assert loss > agent.max_resamples * e_rs  # the coin's share is really spent
    # The agent samples exactly this law (20k runs, 5-sigma binomial tolerance).
    losses = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    b = 20_000
    runs = PrivateShrinkingDartboard(2, 5, epsilon=50.0, delta=0.0, num_envs=b, seed=3, **params)
    acts = rollout(runs, np.broadcast_to(losses[:, None, :], (5, b, 2)).copy()).actions
    law = exact_action_law(losses, agent.inverse_temperature, agent.p, agent.max_resamples)
    seqs = list(law)
    codes = (acts.T * (2 ** np.arange(5)[::-1])).sum(axis=1)
    emp = np.bincount(codes, minlength=32) / b
    probs = np.zeros(32)
    for s in seqs:
        probs[int("".join(map(str, s)), 2)] = law[s]
    assert binomial_ok(emp, probs, b)


# --------------------------------------------------------------------------- utility
def static_regret(acts, losses):
    t_max, b, n = losses.shape
    paid = np.take_along_axis(losses, acts[:, :, None], axis=2)[:, :, 0].sum(0)
    return paid - losses.sum(0).min(axis=1)


@pytest.mark.parametrize(("name", "params"), [(PSD, {}), (BPSD, {"batch_size": 4})])
def test_static_regret_on_an_oblivious_sequence_is_below_the_bound(name, params):
    b, n, t_max = 100, 4, 2000
    rng = np.random.default_rng(12)
    means = np.array([0.6, 0.4, 0.6, 0.6])
    seq = (rng.random((t_max, n)) < means).astype(float)
    seq[t_max // 2 :, [1, 3]] = seq[t_max // 2 :, [3, 1]]  # the sequence changes its leader
    losses = np.broadcast_to(seq[:, None, :], (t_max, b, n))
    a = agents.make(
        name,
        n_experts=n,
        horizon=t_max,
        epsilon=8.0,
        tuning="calibrated",
        num_envs=b,
        seed=2,
        **params,
    )
    reg = static_regret(rollout(a, losses).actions, losses)
    assert a.regret_bound < 0.5 * t_max  # a non-vacuous bound
    assert reg.mean() + 3 * reg.std() / math.sqrt(b) < a.regret_bound


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("cls", "params", "error", "match"),
    [
        (PrivateShrinkingDartboard, {"eta": 0.3, "p": 0.2}, ValueError, "eta must be <= p"),
        (PrivateShrinkingDartboard, {"p": 0.5}, ValueError, "p must be"),
        (PrivateShrinkingDartboard, {"eta": 0.0}, ValueError, "eta"),
        (PrivateShrinkingDartboard, {"budget": 0}, ValueError, "budget"),
        (PrivateShrinkingDartboard, {"eta": 0.2, "p": 0.3}, ValueError, "spend epsilon"),
        (PrivateShrinkingDartboard, {"tuning": "auto"}, ValueError, "tuning"),
        (PrivateShrinkingDartboard, {"mode": "loose"}, ValueError, "mode"),
        (PrivateShrinkingDartboard, {"delta": 1.0}, ValueError, "delta"),
        (BatchedPrivateShrinkingDartboard, {"batch_size": 0}, ValueError, "batch_size"),
        (BatchedPrivateShrinkingDartboard, {"batch_size": "big"}, ValueError, "batch_size"),
        (BatchedPrivateShrinkingDartboard, {"batch_size": 2.5}, TypeError, "batch_size"),
        (BatchedPrivateShrinkingDartboard, {"delta": 0.0}, ValueError, "delta > 0"),
        (
            BatchedPrivateShrinkingDartboard,
            {"delta": 0.0, "batch_size": 5, "tuning": "paper"},
            ValueError,
            "approximate",
        ),
    ],
)
def test_bad_parameters_raise(cls, params, error, match):
    with pytest.raises(error, match=match):
        cls(10, 1000, **params)
