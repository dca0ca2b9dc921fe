"""The part-level witness of a split claim (dp_experts_env.privacy.part_power)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp_experts_env.privacy.audit import AuditResult, epsilon_lower_bound
from dp_experts_env.privacy.declaration import (
    Parallel,
    ReportNoisyMin,
    Sequential,
    SparseVector,
)
from dp_experts_env.privacy.part_power import PartTest, part_test, sparse_vector_part_test

# svt-restart's detector at epsilon 1 (query sensitivity 2, Lap(8) threshold, Lap(16) queries)
SV = SparseVector("shift queries", sensitivity=2.0, threshold_scale=8.0, query_scale=16.0)
SPLIT = Parallel(
    Sequential((ReportNoisyMin("window loss sums", 4, 1.0, 4.0), SV)), "disjoint epochs"
)


def test_a_learner_spending_its_claim_has_no_event_above_the_part():
    # Known answer: AboveThreshold is exactly sensitivity/threshold + 2 sensitivity/query DP,
    # so no event of the declared mechanism itself shows more than the part's epsilon.
    found = sparse_vector_part_test(SV, factor=1.0)
    assert found.part_epsilon == pytest.approx(0.5)
    assert math.isinf(found.runs)
    assert "no event" in found.describe()


def test_twice_the_spending_gives_a_finite_run_count_that_is_the_first_to_suffice():
    found = sparse_vector_part_test(SV, factor=2.0)
    # Between the part's epsilon and what 2x spending can show at most.
    assert 0.5 < found.event_epsilon <= 1.0 + 1e-9
    assert 1e3 < found.runs < 1e5
    lo = found.probability * math.exp(-found.event_epsilon)

    def bound(n: float) -> float:
        return float(epsilon_lower_bound(found.probability * n, lo * n, n, alpha=1e-3))

    assert bound(found.runs) > 0.5 >= bound(found.runs / 1.2)


def test_event_probabilities_agree_with_sampling():
    """The integrated probabilities of the chosen event, against 400,000 sampled segments."""
    found = sparse_vector_part_test(SV, factor=2.0)
    m, q_bottom, q_top = found.bottoms, found.bottom_query, found.top_query
    rng = np.random.default_rng(7)
    n, scale_t, scale_q = 400_000, SV.threshold_scale / 2.0, SV.query_scale / 2.0
    probs = []
    for shift in (0.0, SV.sensitivity):  # input, then neighbour (BOTTOMs up, TOP down)
        rho = rng.laplace(0.0, scale_t, n)
        bottoms = (q_bottom + shift + rng.laplace(0.0, scale_q, (n, m)) <= rho[:, None]).all(1)
        top = q_top - shift + rng.laplace(0.0, scale_q, n) > rho
        probs.append(np.mean(bottoms & top))
    assert probs[0] == pytest.approx(found.probability, rel=0.03)
    assert math.log(probs[0] / probs[1]) == pytest.approx(found.event_epsilon, abs=0.06)


def test_part_test_reads_only_split_declarations():
    assert part_test(SV) is None  # one part: nothing to split
    assert part_test(ReportNoisyMin("x", 4, 1.0, 2.0)) is None
    found = part_test(SPLIT)
    assert found is not None and found.kind == "sparse-vector" and math.isfinite(found.runs)
    multi = Sequential((ReportNoisyMin("x", 4, 1.0, 4.0), SparseVector("q", 2.0, 8.0, 16.0, 3)))
    assert part_test(multi) is None  # one segment of a 3-TOP part is not the part


def test_split_verdict_names_the_part_runs():
    part = PartTest("sparse-vector", 0.5, 2.0, 0.8, 0.055, 13777.0, "an event")
    result = AuditResult(
        epsilon_lower_bound=0.0,
        claimed_epsilon=1.0,
        claimed_delta=0.0,
        passed=True,
        event="e",
        counts=(10, 10),
        n_heldout=1000,
        n_runs=1000,
        alpha=1e-3,
        share=0.5,
        part=part,
    )
    assert result.inconclusive
    assert "sparse-vector part against its own epsilon 0.5" in result.verdict
    assert "about 1.4e+04 runs per side" in result.verdict
    bare = AuditResult(0.0, 1.0, 0.0, True, "e", (10, 10), 1000, 1000, 1e-3, share=0.5)
    assert "not implemented" in bare.verdict and "would need about" not in bare.verdict


# --------------------------------------------------------------------------- running the test
def _instance(runs, multiplier, seed=0):
    from dp_experts_env.batch_rng import BatchRNG
    from dp_experts_env.privacy.mechanisms import AboveThreshold, recording_sparse_vectors
    from dp_experts_env.privacy.noise import ScaledBackend

    with recording_sparse_vectors() as found:
        inst = AboveThreshold(
            epsilon=2.0,  # sensitivity 2: Lap(2) threshold, Lap(4) queries (SV2, 2-DP)
            sensitivity=2.0,
            rng=BatchRNG(range(seed, seed + runs)),
            threshold=0.5,
            noise=ScaledBackend("fast", multiplier),
        )
    assert found == [inst]  # the recording hook saw the instance
    return inst


SV2 = SparseVector("shift queries", sensitivity=2.0, threshold_scale=2.0, query_scale=4.0)


@pytest.mark.slow
def test_part_check_on_an_instance_has_known_answers_on_both_sides():
    from dp_experts_env.privacy.part_power import part_runs, run_sparse_vector_part

    plan = sparse_vector_part_test(SV2)
    n = part_runs(plan)
    assert n == 20_000  # 4 x the runs needed (4.1e3) is below the floor
    half = run_sparse_vector_part(_instance(2 * n, 0.5), plan)
    good = run_sparse_vector_part(_instance(2 * n, 1.0, seed=2 * n), plan)
    # The x0.5 instance is the mechanism the plan was computed for: its input-side frequency
    # is the integrated probability (4 standard errors), and its bound clears the part's epsilon.
    sd = math.sqrt(plan.probability * (1 - plan.probability) / n)
    assert abs(half.counts[0] / n - plan.probability) < 4 * sd
    assert plan.part_epsilon == pytest.approx(2.0)
    assert half.violation and half.epsilon_lower_bound > 2.0, half.describe()
    # The correct instance is exactly 2-DP on every event: no bound above 2 (alpha = 1e-3).
    assert not good.violation and good.epsilon_lower_bound <= 2.0, good.describe()
    assert "<= its own epsilon 2" in good.describe() and "> its own epsilon 2" in half.describe()


def test_part_check_refuses_an_odd_instance():
    from dp_experts_env.privacy.part_power import run_sparse_vector_part

    with pytest.raises(ValueError, match="even number of runs"):
        run_sparse_vector_part(_instance(3, 1.0), sparse_vector_part_test(SV2))


def test_recording_stops_outside_its_context():
    from dp_experts_env.batch_rng import BatchRNG
    from dp_experts_env.privacy.mechanisms import AboveThreshold, recording_sparse_vectors

    with recording_sparse_vectors() as found:
        pass
    AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=BatchRNG([0, 1]))
    assert found == []


def test_the_witness_is_computed_once_per_part_numbers_and_equals_a_fresh_computation():
    """Cached per (part numbers, factor, alpha): a hit equals the uncached computation; another
    sensitivity, scale, factor or alpha is another key (the mutant a too-narrow key would be),
    another label with the same numbers the same one (the harmless change)."""
    from dp_experts_env.privacy import part_power

    found = sparse_vector_part_test(SV, factor=2.0)
    fresh = part_power._sparse_vector_part_test.__wrapped__(
        "sparse-vector", 0.5, 8.0, 16.0, 2.0, 2.0, 1e-3
    )
    assert found == fresh
    renamed = SparseVector("other queries", sensitivity=2.0, threshold_scale=8.0, query_scale=16.0)
    assert sparse_vector_part_test(renamed, factor=2.0) is found
    # Every number of the key counts (a hit returns the cached object itself); at factor 1 no
    # event exists, so these cost no run-count search.
    base = sparse_vector_part_test(SV, factor=1.0)
    assert base is sparse_vector_part_test(renamed, factor=1.0) and base is not found
    others = [
        sparse_vector_part_test(SparseVector("q", 1.0, 8.0, 16.0), factor=1.0),
        sparse_vector_part_test(SparseVector("q", 2.0, 4.0, 16.0), factor=1.0),
        sparse_vector_part_test(SparseVector("q", 2.0, 8.0, 8.0), factor=1.0),
        sparse_vector_part_test(SV, factor=1.0, alpha=1e-2),
    ]
    assert all(other is not base for other in others)
    # numpy scalars are computed uncached (their division differs from Python's at zero)
    assert sparse_vector_part_test(SV, factor=np.float64(1.0)) == base
