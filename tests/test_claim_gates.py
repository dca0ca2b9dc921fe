"""The gates of a claim's verdict (issue 36): privacy, specificity, testability, the twins.

Known answers on synthetic rows for each gate, a planted case that must be caught and a harmless
change that must pass; the papers' own learners pass the privacy gate at every gated point of
the quick and the full run. The cheats brought as plug-ins are tests/test_cheats_zoo.py.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import agents
from dp_experts_env.evaluation.claim_gates import (
    apply_gates,
    audit_once,
    certificate_check,
    privacy_gate,
)
from dp_experts_env.evaluation.claims import (
    UNTESTABLE,
    Claim,
    Control,
    Judgement,
    Point,
    Sweep,
    gated_points,
)
from dp_experts_env.evaluation.paper_claims import CLAIMS, get_claims
from dp_experts_env.evaluation.reproduce import verdict_counts


def _eps_claim(agent="noisy-clipped-hedge", **kw) -> Claim:
    env = {"n_experts": 3, "horizon": 60}
    pts = (Point(0.5, env, 0.5), Point(2.0, env, 2.0))
    inf = (Point(math.inf, env, math.inf),)
    sweeps = (
        Sweep("l", agent, "DPExperts-Stochastic-v0", pts),
        Sweep("l-inf", agent, "DPExperts-Stochastic-v0", inf),
        Sweep("ref", "uniform", "DPExperts-Stochastic-v0", (Point(0.0, env),)),
    )
    return Claim(
        "gate", "p", "s", "st", "q", -1.0, 0.2, "two_sided", sweeps, lambda rows: None,
        control=Control("uniform"), learner_sweeps=("l", "l-inf"), **kw,
    )  # fmt: skip


def _cert_rows(values: dict[float, tuple[float, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"x": x, "seed": s, "epsilon_certified": e, "certified": c}
            for x, (e, c) in values.items()
            for s in range(3)
        ]
    )


# ----------------------------------------------------------------------------- which claims
def test_gated_points_are_the_learner_sweeps_finite_epsilons():
    claim = _eps_claim()
    assert claim.privacy_gated
    assert [(s.key, p.x) for s, p in gated_points(claim, quick=False)] == [("l", 0.5), ("l", 2.0)]
    exempt = _eps_claim(no_privacy_gate="about laziness")
    assert not exempt.privacy_gated


def test_every_claim_at_a_finite_epsilon_is_gated_unless_it_says_why_not():
    """The rule is derived, not a hand list: a new claim whose learner runs at a finite epsilon
    is gated by default. Only the lazy-sampler claim is exempt (its statement is about lazy
    sampling); the claims of learners run without epsilon are not gated."""
    exempt = {c.name for c in CLAIMS if c.no_privacy_gate}
    assert exempt == {"ars-lazy-linear-on-adaptive"}
    for claim in CLAIMS:
        finite = bool(gated_points(claim, quick=False))
        assert claim.privacy_gated == (finite and claim.name not in exempt), claim.name
    ungated = {c.name for c in CLAIMS if not c.privacy_gated}
    assert ungated == {
        "ars-lazy-linear-on-adaptive",
        "ars-hedge-sublinear-on-adaptive",
        "akst-lazy-switches",
        "akst-lazy-regret-vs-T",
    }


# ----------------------------------------------------------------------------- certificate
def test_certificate_check_known_answers():
    """Certified at or below every point's epsilon passes (a bisection's last bit included);
    planted: one point's certificate above its epsilon, a non-private claim (inf), an
    uncertified claim, a sweep without certificate columns: each is named."""
    claim = _eps_claim()
    ok = certificate_check(claim, {"l": _cert_rows({0.5: (0.5, True), 2.0: (1.7, True)})},
                           quick=False)  # fmt: skip
    assert ok.passed
    harmless = _cert_rows({0.5: (0.5 * (1 + 1e-12), True), 2.0: (2.0, True)})
    assert certificate_check(claim, {"l": harmless}, quick=False).passed
    over = certificate_check(claim, {"l": _cert_rows({0.5: (0.5, True), 2.0: (2.5, True)})},
                             quick=False)  # fmt: skip
    assert not over.passed and "x = 2: certified epsilon 2.5 > 2" in over.reason
    none = certificate_check(
        claim, {"l": _cert_rows({0.5: (math.inf, True), 2.0: (math.inf, True)})}, quick=False
    )
    assert not none.passed and "inf (no privacy claim)" in none.reason
    paper = certificate_check(
        claim, {"l": _cert_rows({0.5: (0.5, False), 2.0: (2.0, True)})}, quick=False
    )
    assert not paper.passed and "not certified" in paper.reason
    bare = certificate_check(claim, {"l": pd.DataFrame({"x": [0.5, 2.0]})}, quick=False)
    assert not bare.passed and "no certificate" in bare.reason


def test_audit_once_refuses_a_non_private_learner_and_passes_a_private_one():
    ok, line = audit_once("hedge", {}, 1.0, game=(100, 4))
    assert not ok and "non-private" in line
    ok, line = audit_once("noisy-clipped-hedge", {}, 1.0, game=(100, 4))
    assert ok, line
    assert "audit of noisy-clipped-hedge at epsilon 1" in line


def test_privacy_gate_reads_the_rows_then_audits():
    """The certificate comes first (a learner above the point's epsilon is never audited);
    then the audit at the smallest gated epsilon."""
    claim = _eps_claim()
    rows = {"l": _cert_rows({0.5: (0.5, True), 2.0: (2.0, True)})}
    gate = privacy_gate(claim, rows, quick=False)
    assert gate is not None and gate.passed and "epsilon 0.5" in gate.reason
    bad = {"l": _cert_rows({0.5: (1.0, True), 2.0: (2.0, True)})}
    gate = privacy_gate(claim, bad, quick=False)
    assert not gate.passed and "audit" not in gate.reason
    hedge = claim.with_learner("hedge")
    gate = privacy_gate(hedge, rows, quick=False)  # rows say certified, the registry does not
    assert not gate.passed and "non-private" in gate.reason
    assert privacy_gate(_eps_claim(no_privacy_gate="why"), rows, quick=False) is None


# ----------------------------------------------------------------------------- the order
def test_apply_gates_order_and_what_each_replaces():
    claim = _eps_claim(untestable="needs T = 10^6", specific=lambda rows: "twin linear too")
    good = {"l": _cert_rows({0.5: (0.5, True), 2.0: (2.0, True)})}
    bad = {"l": _cert_rows({0.5: (math.inf, True), 2.0: (math.inf, True)})}
    holds = Judgement("holds", "inside the band", "holds")
    # not private first, whatever the measurement says
    j, privacy = apply_gates(claim, holds, bad, quick=False)
    assert j.verdict == "not private" and "the measurement alone: holds" in j.reason
    assert privacy.startswith("failed: ")
    # a holds that its twin contradicts is not specific
    j, privacy = apply_gates(claim, holds, good, quick=False)
    assert j.verdict == "not specific" and "twin linear too" in j.reason
    assert privacy.startswith("passed: ")
    # untestable replaces the unsettled verdicts only
    for v in ("vacuous", "burn-in", "not in regime", "inconclusive"):
        j, _ = apply_gates(claim, Judgement(v, "r", "holds"), good, quick=False)
        assert j.verdict == UNTESTABLE and "needs T = 10^6" in j.reason
    j, _ = apply_gates(claim, Judgement("fails", "r", "fails"), good, quick=False)
    assert j.verdict == "fails"
    # the harmless case: a specific, private learner keeps its holds
    plain = _eps_claim(specific=lambda rows: "")
    j, _ = apply_gates(plain, holds, good, quick=False)
    assert j.verdict == "holds"


def test_verdict_counts_list_the_untestable_apart():
    line = verdict_counts([("a", "holds"), ("b", UNTESTABLE), ("c", "not private")])
    assert line.startswith("Verdicts of 2 claims: 1 holds, ")
    assert "1 not private" in line
    assert f"apart from the count, 1 {UNTESTABLE} (b)" in line


def test_the_untestable_claims_name_the_size_they_need():
    untestable = {c.name for c in CLAIMS if c.untestable}
    assert untestable == {
        "ars-shift-dr-vs-S",
        "ars-hedge-sublinear-on-adaptive",
        "akst-lazy-regret-vs-T",
        "ars-adaptive-lower-bound-linear",
    }
    for c in CLAIMS:
        if c.untestable:
            assert "T" in c.untestable or "size" in c.untestable, c.name


# ----------------------------------------------------------------------------- twins (item 7)
@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.name)
def test_with_learner_swaps_every_sweep_of_the_claims_learner(claim):
    """Under --agent, no sweep keeps the paper's learner (its noiseless twin included); the
    references (uniform, fixed-share, a reference learner) stay."""
    roles = set(claim.roles())
    own = next(s.agent for s in claim.sweeps if s.key == claim.roles()[0])
    if any(s.custom is not None for s in claim.sweeps if s.key in roles):
        pytest.skip("reads the learner's internals: no other learner can take its role")
    swapped = claim.with_learner("hedge")
    for before, after in zip(claim.sweeps, swapped.sweeps, strict=True):
        if before.agent == own:
            assert after.agent == "hedge" and after.agent_params == {}, before.key
        else:
            assert after == before
        if any(p.epsilon is not None and math.isinf(p.epsilon) for p in before.points):
            assert after.agent == "hedge", f"{before.key}: the noiseless twin was not swapped"


# ----------------------------------------------------------------------------- specificity
def _regret_rows(fn, xs, metric, seeds=8, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [
            {"x": float(x), "seed": s, metric: fn(x) * math.exp(0.05 * rng.standard_normal())}
            for x in xs
            for s in range(seeds)
        ]
    )


def test_lower_bound_is_specific_only_when_its_noiseless_twin_is_sublinear():
    from dp_experts_env.evaluation.papers.ars import _lower_bound_specific

    xs = (500, 1000, 2000, 4000)
    root = _regret_rows(lambda t: 2 * t**0.5, xs, "dynamic_regret")
    linear = _regret_rows(lambda t: 0.8 * t, xs, "dynamic_regret")
    assert _lower_bound_specific({"noisy-clipped-hedge-eps-inf": root}) == ""
    why = _lower_bound_specific({"noisy-clipped-hedge-eps-inf": linear})
    assert "epsilon = inf twin" in why and "not privacy's doing" in why


def test_lazy_lower_bound_is_specific_only_when_sublinear_on_both_oblivious_twins():
    from dp_experts_env.evaluation.papers.ars import LAZY_TWINS, _lazy_specific

    xs = (1000, 2000, 4000)
    small = _regret_rows(lambda t: 3 * t**0.5, xs, "static_regret")  # <= 0.1 per round
    half = _regret_rows(lambda t: 0.5 * t, xs, "static_regret")
    assert _lazy_specific(dict.fromkeys(LAZY_TWINS, small)) == ""
    for failing in LAZY_TWINS:
        rows = {k: (half if k == failing else small) for k in LAZY_TWINS}
        why = _lazy_specific(rows)
        assert failing in why and all(k not in why for k in LAZY_TWINS if k != failing)


# ----------------------------------------------------------------------------- own learners
def _claimed(sweep: Sweep, point: Point) -> tuple[float, bool]:
    env = gym.make_vec(
        sweep.env_id, num_envs=1, vectorization_mode="vector_entry_point", **point.env_params
    )
    try:
        claim = agents.make(sweep.agent, env=env, epsilon=point.epsilon, **sweep.agent_params)
        return float(claim.privacy.epsilon), bool(claim.privacy.certified)
    finally:
        env.close()


def _gated_cases():
    return [
        pytest.param(quick, c.name, id=f"{'quick' if quick else 'full'}-{c.name}")
        for quick in (True, False)
        for c in get_claims(quick=quick)
        if c.privacy_gated
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("quick", "name"), _gated_cases())
def test_the_papers_learners_pass_the_privacy_gate_at_every_gated_point(quick, name):
    """Every gated claim's own learner: certified at or below each point's epsilon (built at the
    point, as the grid builds it) and no violation in the gate's audit."""
    (claim,) = get_claims([name], quick=quick)
    rows: dict[str, list[dict]] = {}
    for sweep, point in gated_points(claim, quick=quick):
        eps, certified = _claimed(sweep, point)
        rows.setdefault(sweep.key, []).append(
            {"x": point.x, "epsilon_certified": eps, "certified": certified}
        )
    frames = {k: pd.DataFrame(v) for k, v in rows.items()}
    gate = privacy_gate(claim, frames, quick=quick)
    assert gate is not None and gate.passed, (claim.name, gate)


# ----------------------------------------------------------------------------- worst case
def test_worst_case_slope_reads_the_worst_sequence_at_every_x():
    """Known answer: a learner at sqrt(T) on two sequences and linear on a third measures the
    linear one (slope 1, named in the detail); the mutant that reads the first sequence only
    would measure 0.5. Sequences at different x are refused."""
    from dp_experts_env.evaluation.claims import worst_case_loglog_slope

    xs = (1000, 4000, 16000)
    root = _regret_rows(lambda t: 3 * t**0.5, xs, "static_regret", seed=1)
    linear = _regret_rows(lambda t: 0.4 * t, xs, "static_regret", seed=2)
    m = worst_case_loglog_slope({"anti_lazy": root, "ftl_trap": linear, "x": root}, "static_regret")
    assert m.value == pytest.approx(1.0, abs=0.03) and m.ci_low <= 1.0 <= m.ci_high
    assert "16000: " in m.detail and "(ftl_trap)" in m.detail
    only = worst_case_loglog_slope({"anti_lazy": root}, "static_regret")
    assert only.value == pytest.approx(0.5, abs=0.03)
    with pytest.raises(ValueError, match="same x"):
        worst_case_loglog_slope({"a": root, "b": root[root["x"] < 16000]}, "static_regret")


def test_the_worst_case_rates_are_judged_on_every_oblivious_family():
    from dp_experts_env.evaluation.papers.afkt import WORST_FAMILIES

    for name in ("afkt-dartboard-regret-vs-T", "afkt-batched-dartboard-regret-vs-T"):
        (claim,) = get_claims([name])
        families = {p.env_params["family"] for s in claim.sweeps for p in s.points}
        assert families == set(WORST_FAMILIES)
        assert set(claim.roles()) == {s.key for s in claim.sweeps}  # every family is the learner's
        assert "worst mean static regret" in claim.quantity


# ----------------------------------------------------------------------------- the audit's bounds
def test_bounds_once_per_distinct_count_are_the_elementwise_bounds_bit_for_bit(monkeypatch):
    """The gate's audits bound each distinct event count once (an event family's counts take at
    most n + 1 values): the same floats as the quantile of every element, for integer counts,
    projected real counts (the selection's ``p * n_test``), edge counts 0 and n, and array ``n``
    (bounded element by element); the quantiles are asked for the distinct counts only."""
    from scipy import stats

    from dp_experts_env.audit import bounds

    rng = np.random.default_rng(7)
    n = 400
    ints = rng.integers(0, n + 1, size=5_000).astype(np.float64)
    ints[:3] = (0.0, float(n), -0.0)
    real = stats.beta.ppf(0.05, ints + 1, n - ints + 1) * 1_000  # projected counts, repeated
    with np.errstate(invalid="ignore"):
        for k, m in ((ints, n), (real, 1_000), (ints.reshape(50, 100), n)):
            for alpha in (0.05, 5e-4):
                lower = np.where(k > 0, stats.beta.ppf(alpha, k, m - k + 1), 0.0)
                upper = np.where(k < m, stats.beta.ppf(1 - alpha, k + 1, m - k), 1.0)
                got_lo = bounds.clopper_pearson_lower(k, m, alpha)
                got_up = bounds.clopper_pearson_upper(k, m, alpha)
                assert got_lo.shape == k.shape and got_up.shape == k.shape
                assert np.array_equal(got_lo, lower) and np.array_equal(got_up, upper)
        ns = rng.integers(n, 2 * n, size=ints.size)  # array n: no sharing across elements
        assert np.array_equal(
            bounds.clopper_pearson_upper(ints, ns, 0.05),
            np.where(ints < ns, stats.beta.ppf(0.95, ints + 1, ns - ints), 1.0),
        )
    asked: list[int] = []
    ppf = stats.beta.ppf
    monkeypatch.setattr(stats.beta, "ppf", lambda q, a, b: asked.append(np.size(a)) or ppf(q, a, b))
    bounds.clopper_pearson_lower(ints, n, 0.05)
    assert asked == [np.unique(ints).size]
