"""Composition rules: known answers, inversion, errors, and the optional dp-accounting wrapper."""

import math

import pytest

from dp_experts_env.privacy import (
    Guarantee,
    advanced_composition,
    advanced_composition_heterogeneous,
    basic_composition,
    compose,
    has_dp_accounting,
    parallel_composition,
    per_step_epsilon,
    pld_laplace_composition,
)


def test_basic_composition_adds_epsilons_and_deltas():
    g = basic_composition([0.1] * 10, 1e-6)
    assert g.epsilon == pytest.approx(1.0) and g.delta == pytest.approx(1e-5)
    g = basic_composition([0.5, 0.25], [0.0, 1e-3])
    assert (g.epsilon, g.delta) == (0.75, 1e-3)
    assert basic_composition(2.0).epsilon == 2.0 and basic_composition(2.0).delta == 0.0


def test_advanced_composition_known_answer():
    # sqrt(2 * 100 * ln 1e6) * 0.1 + 100 * 0.1 * (e^0.1 - 1) = 5.2565... + 1.0517...
    g = advanced_composition(0.1, 100, 1e-6)
    assert g.epsilon == pytest.approx(6.308230950513, rel=1e-10)
    assert g.delta == 1e-6
    assert advanced_composition(0.1, 100, 1e-6, delta=1e-8).delta == pytest.approx(1e-6 + 1e-6)
    het = advanced_composition_heterogeneous([0.1] * 100, 1e-6)
    assert het.epsilon == pytest.approx(g.epsilon, rel=1e-12)


def test_compose_takes_the_better_rule():
    assert compose(1.0, 10, delta_prime=1e-6).epsilon == 10.0  # advanced is worse here
    small = compose(0.01, 10_000, delta_prime=1e-6)
    assert small.epsilon < 100 * 0.5 and "advanced" in small.accountant
    assert compose(0.01, 10_000).epsilon == pytest.approx(100.0)  # no delta': pure, basic


def test_parallel_composition_is_the_worst_part():
    g = parallel_composition([Guarantee(0.5), Guarantee(1.5, 1e-6), Guarantee(1.0)])
    assert (g.epsilon, g.delta) == (1.5, 1e-6)
    with pytest.raises(TypeError, match="Guarantee"):
        parallel_composition([])
    with pytest.raises(TypeError, match="Guarantee"):
        parallel_composition([1.0])


def test_per_step_epsilon_inverts_composition():
    assert per_step_epsilon(1.0, 50, method="basic") == pytest.approx(0.02)
    e = per_step_epsilon(1.0, 1000, delta_prime=1e-6, method="advanced")
    assert advanced_composition(e, 1000, 1e-6).epsilon == pytest.approx(1.0, rel=1e-9)
    assert advanced_composition(e, 1000, 1e-6).epsilon <= 1.0  # feasible side of the bisection
    assert e > 1.0 / 1000  # advanced beats basic for many small steps
    best = per_step_epsilon(1.0, 1000, delta_prime=1e-6)
    assert best == e
    # Few large steps: basic wins and "best" returns it.
    assert per_step_epsilon(2.0, 2, delta_prime=1e-6) == pytest.approx(1.0)
    assert (
        compose(per_step_epsilon(3.0, 5000, delta_prime=1e-5), 5000, delta_prime=1e-5).epsilon <= 3
    )


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: basic_composition([0.1, 0.0]), ValueError, "epsilons must be > 0"),
        (lambda: basic_composition([0.1], [1.0]), ValueError, "deltas must be < 1"),
        (lambda: basic_composition([0.1, 0.1], [0.1] * 3), ValueError, "sequence of 2"),
        (lambda: basic_composition([0.1] * 3, 0.4), ValueError, "composed delta"),
        (lambda: advanced_composition(-1.0, 3, 1e-6), ValueError, "epsilon must be > 0"),
        (lambda: advanced_composition(1.0, 0, 1e-6), ValueError, "k must be >= 1"),
        (lambda: advanced_composition(1.0, 3, 0.0), ValueError, "delta_prime must be > 0"),
        (lambda: advanced_composition(1.0, 3, -0.1), ValueError, "delta_prime must be >= 0"),
        (lambda: compose(1.0, 3, delta=1.5), ValueError, "delta must be < 1"),
        (lambda: per_step_epsilon(0.0, 3), ValueError, "total_epsilon must be > 0"),
        (lambda: per_step_epsilon(1.0, 3, method="advanced"), ValueError, "delta_prime must be"),
        (lambda: per_step_epsilon(1.0, 3, method="rdp"), ValueError, "method must be one of"),
        (lambda: pld_laplace_composition(1.0, 3, 0.0), ValueError, "delta must be > 0"),
    ],
)
def test_bad_parameters_raise_clear_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.skipif(has_dp_accounting(), reason="dp-accounting is installed")
def test_pld_wrapper_explains_the_missing_extra():
    with pytest.raises(ImportError, match=r"dp-experts-env\[accounting\]"):
        pld_laplace_composition(0.1, 10, 1e-6)


@pytest.mark.skipif(not has_dp_accounting(), reason="optional dp-accounting not installed")
def test_advanced_composition_agrees_in_direction_with_dp_accounting():
    previous = 0.0
    for eps in (0.005, 0.01, 0.02, 0.05):
        k, delta = 1000, 1e-6
        tight = pld_laplace_composition(eps, k, delta)
        adv = compose(eps, k, delta_prime=delta)
        assert tight.epsilon <= adv.epsilon + 1e-9  # PLD is tight; DRV is an upper bound
        assert tight.epsilon > previous  # both grow with the per-step epsilon
        assert tight.epsilon > math.sqrt(k) * eps  # and stay of the advanced order
        previous = tight.epsilon
    # A single step is exactly the Laplace mechanism: epsilon-DP at any delta.
    assert pld_laplace_composition(0.7, 1, 1e-9).epsilon == pytest.approx(0.7, rel=1e-2)
