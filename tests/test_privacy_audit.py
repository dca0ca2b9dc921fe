"""Audit machinery: Clopper–Pearson known answers, event families, agent-level audits."""

import math

import numpy as np
import pytest

import agents.registry as registry
from agents.base import Agent, PrivacyClaim
from dp_experts_env.evaluation.audit import audit_agent
from dp_experts_env.privacy import (
    audit_samples,
    clopper_pearson,
    epsilon_lower_bound,
    laplace_mechanism,
    report_noisy_min,
)


# --------------------------------------------------------------------------- statistics
def test_clopper_pearson_known_answers():
    lo, up = clopper_pearson(0, 10, 0.05)
    assert lo == 0.0 and up == pytest.approx(1 - 0.05 ** (1 / 10))
    lo, up = clopper_pearson(10, 10, 0.05)
    assert up == 1.0 and lo == pytest.approx(0.05 ** (1 / 10))
    lo, up = clopper_pearson(np.array([30, 50]), 100, 0.025)
    assert np.all(lo < [0.3, 0.5]) and np.all(up > [0.3, 0.5])


def test_epsilon_lower_bound_formula_and_delta():
    n, alpha = 1000, 1e-3
    lb = float(epsilon_lower_bound(500, 50, n, alpha=alpha))
    lo, _ = clopper_pearson(500, n, alpha / 2)
    _, up = clopper_pearson(50, n, alpha / 2)
    assert lb == pytest.approx(math.log(lo / up))
    assert 1.5 < lb < math.log(10)
    assert float(epsilon_lower_bound(500, 50, n, alpha=alpha, delta=0.1)) < lb
    assert float(epsilon_lower_bound(50, 500, n, alpha=alpha)) == 0.0  # wrong direction
    assert float(epsilon_lower_bound(10, 5, n, alpha=alpha, delta=0.5)) == 0.0


# --------------------------------------------------------------------------- event families
def test_identical_laws_give_no_evidence():
    rng = np.random.default_rng(0)
    for kind, draw in [
        ("real", lambda: rng.normal(size=4000)),
        ("discrete", lambda: rng.integers(0, 5, 4000)),
        ("sequence", lambda: rng.integers(0, 3, (4000, 6))),
    ]:
        res = audit_samples(draw(), draw(), claimed_epsilon=0.1, output=kind)
        assert res.epsilon_lower_bound < 0.1 and res.passed, (kind, res.summary())


def test_block_event_found_when_marginals_barely_differ():
    rng = np.random.default_rng(1)
    n, t = 8000, 8

    def draw(p_block):
        seq = rng.integers(0, 2, (n, t))
        seq[rng.random(n) < p_block] = 0
        return seq

    res = audit_samples(draw(0.3), draw(0.03), claimed_epsilon=1.0)
    assert "for all rounds" in res.event
    assert res.epsilon_lower_bound > 1.5 and not res.passed


def test_switch_event_found_when_blocks_and_marginals_are_blind():
    rng = np.random.default_rng(2)
    n, t = 6000, 8
    alternating = (np.arange(t)[None, :] + rng.integers(0, 2, (n, 1))) % 2
    iid = rng.integers(0, 2, (n, t))
    res = audit_samples(alternating, iid, claimed_epsilon=1.0)
    # Switch counts or joint windows (J_s..J_{s+L-1}) see it; no single round or block can.
    assert "switches" in res.event or "digits" in res.event, res.summary()
    assert res.epsilon_lower_bound > 3.0


def test_real_outputs_use_threshold_events_and_delta_weakens_the_bound():
    rng = np.random.default_rng(3)
    a, b = rng.laplace(0, 0.5, 10_000), rng.laplace(1, 0.5, 10_000)  # true epsilon 2
    res = audit_samples(a, b, claimed_epsilon=1.0)
    assert ">" in res.event and 1.2 < res.epsilon_lower_bound <= 2.0
    loose = audit_samples(a, b, claimed_epsilon=1.0, claimed_delta=0.2)
    assert loose.epsilon_lower_bound < res.epsilon_lower_bound
    assert res.n_heldout == 5000 and res.n_runs == 10_000 and sum(res.counts) > 0


def test_audit_samples_validation():
    with pytest.raises(ValueError, match="same shape"):
        audit_samples(np.zeros(10), np.zeros(12), claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="claimed_epsilon must be > 0"):
        audit_samples(np.zeros(10), np.zeros(10), claimed_epsilon=0.0)
    with pytest.raises(ValueError, match="output must be one of"):
        audit_samples(np.zeros(10), np.zeros(10), claimed_epsilon=1.0, output="vector")
    with pytest.raises(ValueError, match="alpha must be"):
        audit_samples(np.zeros(10), np.zeros(10), claimed_epsilon=1.0, alpha=0.0)


# --------------------------------------------------------------------------- test agents
class OneShotNoisyMin(Agent):
    """Plays expert 0 until the last round, then report-noisy-min on the cumulative losses.

    The cumulative losses move by at most 1 per coordinate when one round is replaced, and they
    are used once: epsilon-DP with Lap(2 / epsilon). ``noise=False`` is the broken mutant.
    """

    def __init__(self, n_experts, horizon, *, epsilon=1.0, noise=True, num_envs=1, seed=None):
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed)
        self.epsilon, self.noise = epsilon, noise
        self.reset(seed)

    @property
    def privacy(self):
        return PrivacyClaim(epsilon=self.epsilon, accountant="report-noisy-min once")

    def _init_state(self):
        self.cum = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, obs):
        self.cum += obs

    def _choose(self, obs):
        if self.t < self.horizon - 1:
            return np.zeros(self.num_envs, dtype=np.int64)
        if not self.noise:
            return np.argmin(self.cum, axis=1)
        return report_noisy_min(self.cum, sensitivity=1.0, epsilon=self.epsilon, rng=self.rng)[0]


class OneShotBandit(Agent):
    """Bandit: plays arm 0, then arm 1 iff the noisy loss seen (sensitivity 1) exceeds 1/2."""

    feedback = "bandit"

    def __init__(
        self, n_experts, horizon, *, n_arms, epsilon=1.0, noise=True, num_envs=1, seed=None
    ):
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.epsilon, self.noise = epsilon, noise
        self.reset(seed)

    @property
    def privacy(self):
        return PrivacyClaim(epsilon=self.epsilon, feedback="bandit", accountant="Laplace once")

    def _init_state(self):
        self.choice = np.zeros(self.num_envs, dtype=np.int64)

    def _learn(self, obs):
        assert obs.advice.shape == (self.num_envs, self.n_experts, self.n_arms)
        if self.t == 1:
            assert np.all(obs.last_action == 0)
            seen = obs.last_loss[:, None]
            if self.noise:
                seen = laplace_mechanism(
                    seen, l1_sensitivity=1, epsilon=self.epsilon, rng=self.rng
                )[0]
            self.choice = (seen[:, 0] > 0.5).astype(np.int64)

    def _choose(self, obs):
        return self.choice


def rnm_factory(n, t, **kw):
    return lambda num_envs, seed: OneShotNoisyMin(n, t, num_envs=num_envs, seed=seed, **kw)


def neighbours(t=4, n=6, row=1):
    """Flat losses except one row: expert 0 best there on x, worst there on x'."""
    x = np.full((t, n), 0.5)
    x[row] = 1.0
    x[row, 0] = 0.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


# --------------------------------------------------------------------------- agent audits
def test_private_agent_passes_and_no_noise_mutant_is_caught():
    x, xp = neighbours()
    ok = audit_agent(rnm_factory(6, 4), x, xp, n_runs=10_000)
    assert ok.passed and ok.claimed_epsilon == 1.0, ok.summary()
    assert "J_3" in ok.event or "switches" in ok.event or "all rounds" in ok.event
    bad = audit_agent(rnm_factory(6, 4, noise=False), x, xp, n_runs=2000)
    assert not bad.passed and bad.epsilon_lower_bound > 3.0, bad.summary()


def test_seeded_audits_are_reproducible_and_seeds_differ():
    x, xp = neighbours()
    a = audit_agent(rnm_factory(6, 4), x, xp, n_runs=2000, seed=3)
    b = audit_agent(rnm_factory(6, 4), x, xp, n_runs=2000, seed=3)
    c = audit_agent(rnm_factory(6, 4), x, xp, n_runs=2000, seed=4)
    assert a == b
    assert a.counts != c.counts


def test_registered_name_path_passes_params(monkeypatch):
    spec = registry.AgentSpec("test-one-shot-rnm", OneShotNoisyMin, "full", True, "test")
    monkeypatch.setitem(registry._REGISTRY, "test-one-shot-rnm", spec)
    x, xp = neighbours()
    res = audit_agent("test-one-shot-rnm", x, xp, n_runs=2000, epsilon=0.5)
    assert res.claimed_epsilon == 0.5 and res.passed
    bad = audit_agent("test-one-shot-rnm", x, xp, n_runs=2000, noise=False)
    assert not bad.passed


def test_bandit_agent_reads_the_played_arm_loss_and_advice():
    x = np.zeros((3, 2))
    xp = x.copy()
    xp[0, 0] = 1.0  # only arm 0's loss in round 0 changes: the arm the agent played

    def factory(noise, n_experts=2):
        return lambda num_envs, seed: OneShotBandit(
            n_experts, 3, n_arms=2, noise=noise, num_envs=num_envs, seed=seed
        )

    assert audit_agent(factory(True), x, xp, n_runs=4000).passed
    bad = audit_agent(factory(False), x, xp, n_runs=2000)
    assert not bad.passed and bad.counts in ((0, 1000), (1000, 0))
    advice = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    with_advice = audit_agent(factory(False, n_experts=3), x, xp, n_runs=2000, advice=advice)
    assert not with_advice.passed
    # A change in an arm never played is invisible.
    xq = x.copy()
    xq[0, 1] = 1.0
    assert audit_agent(factory(False), x, xq, n_runs=2000).epsilon_lower_bound == 0.0


def test_change_in_last_round_cannot_be_seen():
    x, xp = neighbours(row=3)
    res = audit_agent(rnm_factory(6, 4, noise=False), x, xp, n_runs=400)
    assert res.epsilon_lower_bound == 0.0 and res.passed and res.event.startswith("none")


@pytest.mark.parametrize(
    ("change", "err", "match"),
    [
        (lambda x, xp: (x, x.copy()), ValueError, "differ in exactly one row"),
        (lambda x, xp: (x, np.zeros_like(x)), ValueError, "differ in exactly one row"),
        (lambda x, xp: (x, xp[:, :3]), ValueError, "neighbor_losses must have shape"),
        (lambda x, xp: (x * 2, xp), ValueError, r"losses values must lie in \[0.0, 1.0\]"),
        (lambda x, xp: (x[0], xp[0]), ValueError, "must have 2 dimension"),
    ],
)
def test_audit_agent_rejects_bad_inputs(change, err, match):
    x, xp = neighbours()
    a, b = change(x, xp)
    with pytest.raises(err, match=match):
        audit_agent(rnm_factory(6, 4), a, b, n_runs=400)


def test_audit_agent_rejects_bad_parameters():
    x, xp = neighbours()
    with pytest.raises(ValueError, match="n_runs must be >= 200"):
        audit_agent(rnm_factory(6, 4), x, xp, n_runs=10)
    with pytest.raises(ValueError, match="alpha must be"):
        audit_agent(rnm_factory(6, 4), x, xp, n_runs=400, alpha=0.7)
    with pytest.raises(TypeError, match="only accepted with a registered agent name"):
        audit_agent(rnm_factory(6, 4), x, xp, n_runs=400, epsilon=2.0)
    with pytest.raises(TypeError, match="registered name or a factory"):
        audit_agent(42, x, xp, n_runs=400)
    with pytest.raises(ValueError, match="advice is only for bandit agents"):
        audit_agent(rnm_factory(6, 4), x, xp, n_runs=400, advice=np.eye(6))
    with pytest.raises(ValueError, match="experts but losses have"):
        audit_agent(rnm_factory(5, 4), x, xp, n_runs=400)


# --------------------------------------------------------------------------- power
def test_detectable_epsilon_is_the_boundary_of_the_test():
    from dp_experts_env.privacy import detectable_epsilon

    n, alpha, claim = 10_000, 1e-3, 1.0
    x = detectable_epsilon(5000, n, alpha=alpha, claimed_epsilon=claim)
    assert claim < x < 1.3
    # A mechanism exactly x-DP on this event (other side's count n p e^-x) sits on the boundary.
    above = epsilon_lower_bound(5000, 5000 * math.exp(-x * 1.01), n, alpha=alpha)
    below = epsilon_lower_bound(5000, 5000 * math.exp(-x * 0.99), n, alpha=alpha)
    assert float(above) > claim >= float(below)
    # Rarer events need larger violations; too rare an event can show none at all.
    assert detectable_epsilon(50, n, alpha=alpha, claimed_epsilon=claim) > x
    assert math.isinf(detectable_epsilon(3, n, alpha=alpha, claimed_epsilon=claim))
    assert math.isinf(detectable_epsilon(5000, n, alpha=alpha, claimed_epsilon=math.inf))
    # delta weakens the test.
    assert detectable_epsilon(5000, n, alpha=alpha, claimed_epsilon=claim, delta=0.05) > x


def test_result_says_what_a_pass_means():
    rng = np.random.default_rng(5)
    res = audit_samples(rng.integers(0, 3, 4000), rng.integers(0, 3, 4000), claimed_epsilon=1.0)
    assert res.passed and res.verdict.startswith("no violation found (could detect eps > ")
    assert "PASSED" not in res.summary()
    bad = audit_samples(np.zeros(4000, int), np.ones(4000, int), claimed_epsilon=1.0)
    assert bad.verdict.startswith("VIOLATION: epsilon >= ")


def test_a_pass_without_power_is_inconclusive_with_the_runs_it_needs():
    """At epsilon 8, 4000 runs cannot show even a learner spending 16: inconclusive."""
    from dp_experts_env.privacy.audit import INCONCLUSIVE_FACTOR, detectable_epsilon, runs_needed

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 3, 4000), rng.integers(0, 3, 4000)
    res = audit_samples(a, b, claimed_epsilon=8.0)
    assert res.passed and res.inconclusive
    assert res.verdict.startswith("inconclusive at this run count")
    assert "no violation found" in res.verdict and math.isfinite(res.runs_needed)
    # The run count given is where the event's power first reaches 2x the claim.
    k = max(res.counts)
    need = int(res.runs_needed)
    p = k / res.n_heldout
    power = detectable_epsilon(round(p * need), need, alpha=res.alpha, claimed_epsilon=8.0)
    half = detectable_epsilon(round(p * need / 2), need // 2, alpha=res.alpha, claimed_epsilon=8.0)
    assert power < INCONCLUSIVE_FACTOR * 8.0 <= half
    assert runs_needed(0, 100, alpha=1e-3, claimed_epsilon=1.0) == math.inf
    # The same samples at epsilon 1 are an informative pass.
    one = audit_samples(a, b, claimed_epsilon=1.0)
    assert one.passed and not one.inconclusive and math.isnan(one.runs_needed)


def test_exact_differences_between_releases_expose_reused_noise():
    """Two releases sharing one noise draw differ by their exact inputs' difference."""
    from dp_experts_env.privacy.audit import release_families, select_event

    rng = np.random.default_rng(2)

    def side(first, n, reuse):
        z = rng.laplace(0.0, 1.0, (n, 2))
        if reuse:
            z[:, 1] = z[:, 0]
        exact = np.tile([0.0, first, 0.5], (n, 1))  # key, then the two released values
        noisy = exact + np.concatenate([np.zeros((n, 1)), z], axis=1)
        return np.stack([exact, noisy], axis=1)

    for reuse in (True, False):
        a, b = side(1.0, 2000, reuse), side(0.0, 2000, reuse)
        fams = release_families(a[:1000], b[:1000])
        diffs = [f for f in fams if "differ by exactly" in f.describe(0)]
        if not reuse:
            assert not diffs  # fresh noise: no pair to test
            continue
        sel = select_event(diffs, a[1000:], b[1000:], n_test=1000, alpha=1e-3)
        assert sel is not None and "differ by exactly" in sel.description
        assert sel.indicator(a[1000:]).mean() == 1.0 and sel.indicator(b[1000:]).sum() == 0


# --------------------------------------------------------------------------- new families
def test_switch_into_a_value_is_an_event():
    from dp_experts_env.privacy.audit import evaluate_event, select_event, sequence_families

    # Runs hold a uniform J_0; on x a switch into 0 at round 1 happens 4x as often as on x'.
    rng = np.random.default_rng(6)
    n, k = 20_000, 8

    def draw(p_switch):
        j0 = rng.integers(0, k, n)
        move = rng.random(n) < p_switch
        return np.stack([j0, np.where(move, 0, j0)], axis=1)

    a, b = draw(0.4), draw(0.1)
    half = n // 2
    fams = sequence_families(a[:half], b[:half], k=k, first=1)
    sel = select_event(fams, a[:half], b[:half], n_test=half, alpha=1e-3)
    res = evaluate_event(sel, a[half:], b[half:], alpha=1e-3, claimed_epsilon=1.0)
    assert "0" in res.event and res.epsilon_lower_bound > 1.0, res.summary()


def test_release_statistic_reaches_the_laplace_epsilon():
    from dp_experts_env.privacy.audit import evaluate_event, release_families, select_event

    # Two coordinates released with Lap(1) noise, inputs (0, 1) vs (1, 0): L1 distance 2, so
    # exactly 2-DP; the likelihood-ratio statistic reaches e^2 on a quarter of the runs.
    rng = np.random.default_rng(7)
    n = 40_000

    def release(centre):  # column 0: a key (here constant); then the two coordinates
        exact = np.broadcast_to(np.asarray([0.0, *centre]), (n, 3))
        noisy = exact + np.concatenate([np.zeros((n, 1)), rng.laplace(0.0, 1.0, (n, 2))], 1)
        return np.stack([exact, noisy], axis=1)

    a, b = release([0.0, 1.0]), release([1.0, 0.0])
    half = n // 2
    sel = select_event(
        release_families(a[:half], b[:half]), a[:half], b[:half], n_test=half, alpha=1e-3
    )
    res = evaluate_event(sel, a[half:], b[half:], alpha=1e-3, claimed_epsilon=2.0)
    assert "likelihood-ratio" in res.event and 1.7 < res.epsilon_lower_bound <= 2.0, res.summary()
    assert res.passed


def test_release_centres_per_key_undo_a_mixture():
    from dp_experts_env.privacy.audit import evaluate_event, release_families, select_event

    # Like a bandit release: on the neighbour the exact input moves by 2 only in runs whose key
    # is 0 (half of them); fitting centres per key recovers the full 2-DP ratio of those runs.
    rng = np.random.default_rng(8)
    n = 40_000

    def release(shift):
        key = rng.integers(0, 2, n).astype(float)
        exact = np.where(key == 0, shift, 0.0)
        noise = rng.laplace(0.0, 1.0, n)
        return np.stack([np.stack([key, exact], 1), np.stack([key, exact + noise], 1)], axis=1)

    a, b = release(0.0), release(2.0)
    half = n // 2
    fams = release_families(a[:half], b[:half])
    assert len(fams) == 2
    sel = select_event(fams, a[:half], b[:half], n_test=half, alpha=1e-3)
    res = evaluate_event(sel, a[half:], b[half:], alpha=1e-3, claimed_epsilon=2.0)
    assert 1.6 < res.epsilon_lower_bound <= 2.0 and res.passed, res.summary()
    grouped = fams[1]
    assert grouped.grouped and np.allclose(grouped.half[:2, 0], [1.0, 0.0], atol=0.05)
