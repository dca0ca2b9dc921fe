"""Noise backends: laws (KS / chi-square at fixed seeds), lattice outputs, batch = single runs,
and the floating-point attack that separates ``fast`` from ``grid``."""

import numpy as np
import pytest
from scipy import stats

from dp_experts_env.batch_rng import BatchRNG, run_seeds
from dp_experts_env.privacy import (
    FastBackend,
    GridBackend,
    audit_mechanism,
    get_backend,
    laplace_mechanism,
)

# Statistical tests below use fixed seeds; a correct sampler fails one with probability ~1e-3.
P_MIN = 1e-3


@pytest.mark.parametrize("source", ["batch", "generator"])
@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_fast_laplace_matches_the_laplace_law(source, scale):
    backend = FastBackend()
    if source == "batch":
        x = backend.laplace(BatchRNG(run_seeds(1, 400)), scale, (50,)).ravel()
    else:
        x = backend.laplace(np.random.default_rng(1), scale, (20_000,))
    assert x.shape == (20_000,)
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > P_MIN


def test_gumbel_matches_the_gumbel_law():
    for backend in (FastBackend(), GridBackend()):
        x = backend.gumbel(BatchRNG(run_seeds(2, 200)), (100,)).ravel()
        assert stats.kstest(x, stats.gumbel_r.cdf).pvalue > P_MIN


def test_grid_laplace_on_fine_lattice_matches_continuous_laplace():
    x = GridBackend(bits=20).laplace(np.random.default_rng(3), 1.5, (20_000,))
    assert stats.kstest(x, stats.laplace(scale=1.5).cdf).pvalue > P_MIN


@pytest.mark.parametrize("scale", [0.1, 0.5, 1.0, 3.0])
def test_grid_laplace_is_the_two_sided_geometric_on_a_coarse_lattice(scale):
    # P(X = k step) = (1 - q) / (1 + q) q^|k| with q = exp(-step / scale): chi-square on the
    # cells with expected count >= 20, the rest pooled into one cell.
    g = GridBackend(bits=2)
    k = g.laplace(np.random.default_rng(4), scale, (100_000,)) / g.step
    assert np.array_equal(k, np.round(k))
    q = np.exp(-g.step / scale)
    support = np.arange(-80, 81)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    expected = pmf * k.size
    keep = expected >= 20
    observed = np.array([(k == v).sum() for v in support[keep]])
    obs = np.append(observed, k.size - observed.sum())
    exp = np.append(expected[keep], k.size - expected[keep].sum())
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(chi2, len(obs) - 1) > P_MIN


def test_grid_far_tail_keeps_the_geometric_ratio():
    # A coarse lattice with a large scale exercises the block split (k = ceil(t) > 1): the
    # pooled tail beyond 3 scales must have the Laplace mass exp(-3).
    g = GridBackend(bits=3)
    x = g.laplace(np.random.default_rng(5), 7.0, (200_000,))
    tail = np.mean(np.abs(x) > 21.0)
    want = np.exp(-21.0 / 7.0)
    assert abs(tail - want) < 5 * np.sqrt(want / x.size)


def test_grid_outputs_are_lattice_points_whatever_the_input():
    g = GridBackend(bits=10)
    values = np.array([[0.1234567, -3.3, 1e-9]])
    out = g.add_laplace(BatchRNG(run_seeds(0, 4)), np.repeat(values, 4, axis=0), 0.7)
    scaled = out * 2**10
    assert np.array_equal(scaled, np.round(scaled))


def test_zero_scale_means_no_noise_and_negative_scale_is_refused():
    g = GridBackend(bits=4)
    assert np.array_equal(g.laplace(np.random.default_rng(0), 0.0, (5,)), np.zeros(5))
    with pytest.raises(ValueError, match="scale"):
        g.laplace(np.random.default_rng(0), -1.0, (5,))


def test_effective_sensitivity_adds_the_rounding_slack():
    assert FastBackend().effective_sensitivity(2.0, dim=7) == 2.0
    g = GridBackend(bits=5)
    assert g.effective_sensitivity(2.0, dim=7) == 2.0 + 7 * 2.0**-5


@pytest.mark.parametrize("name", ["fast", "grid"])
def test_batches_reproduce_single_runs(name):
    backend = get_backend(name)
    batch = backend.add_laplace(BatchRNG([5, 6, 7]), np.zeros((3, 4)), 1.0)
    again = backend.add_laplace(BatchRNG([5, 6, 7]), np.zeros((3, 4)), 1.0)
    single = backend.add_laplace(BatchRNG([6]), np.zeros((1, 4)), 1.0)
    assert np.array_equal(batch, again)
    assert np.array_equal(batch[1], single[0])


def test_get_backend_errors_and_passthrough():
    g = GridBackend(bits=8)
    assert get_backend(g) is g
    assert get_backend("fast").name == "fast"
    with pytest.raises(ValueError, match="noise must be one of"):
        get_backend("exact")
    with pytest.raises(TypeError, match="noise must be one of"):
        get_backend(3)
    with pytest.raises(ValueError, match="bits must be >= 1"):
        GridBackend(bits=0)
    with pytest.raises(TypeError, match="rng must be"):
        FastBackend().laplace(np.random.RandomState(0), 1.0, (3,))


def _low_bits_event(noise):
    """Laplace(1) on input 0 or 1, post-processed to 'output is off the 2^-53 lattice'.

    From input 1 every output below 2 in magnitude is ``fl(1 + x)``, a multiple of 2^-53; from
    input 0 the raw sample ``x`` usually has finer bits (Mironov 2012). Post-processing cannot
    raise the true epsilon, so an audit lower bound far above 1 exposes the leak.
    """

    def fn(x, rng):
        y = laplace_mechanism(
            np.full((1, 1), float(x)), l1_sensitivity=1.0, epsilon=1.0, rng=rng, noise=noise
        ).value[:, 0]
        z = y * 2.0**53
        return np.floor(z) != z

    return fn


def test_fast_backend_leaks_through_low_bits_and_grid_does_not():
    fast = audit_mechanism(_low_bits_event("fast"), 0, 1, n_runs=4000, claimed_epsilon=1.0)
    assert fast.epsilon_lower_bound > 3.0  # far above the claim
    assert not fast.passed
    grid = audit_mechanism(_low_bits_event("grid"), 0, 1, n_runs=4000, claimed_epsilon=1.0)
    assert grid.epsilon_lower_bound == 0.0  # every grid output is a lattice point
    assert grid.passed


# --------------------------------------------------------------------------- audit wrappers
@pytest.mark.parametrize("base", ["fast", "grid"])
@pytest.mark.parametrize("multiplier", [0.0, 0.5, 3.0])
def test_scaled_backend_is_the_base_noise_times_the_multiplier(base, multiplier):
    from dp_experts_env.privacy import ScaledBackend

    scaled = ScaledBackend(base, multiplier)
    plain = get_backend(base)
    # The same uniforms, so the draws are comparable one by one.
    lap = scaled.laplace(BatchRNG(run_seeds(5, 30)), 2.0, (4,))
    ref = plain.laplace(BatchRNG(run_seeds(5, 30)), 2.0 * multiplier, (4,))
    assert np.array_equal(lap, ref)
    gum = scaled.gumbel(BatchRNG(run_seeds(6, 30)), (4,))
    assert np.allclose(gum, multiplier * plain.gumbel(BatchRNG(run_seeds(6, 30)), (4,)))
    values = np.linspace(0.0, 1.0, 30)[:, None] * np.ones((1, 4))
    out = scaled.add_laplace(BatchRNG(run_seeds(7, 30)), values, 1.0)
    ref = plain.add_laplace(BatchRNG(run_seeds(7, 30)), values, multiplier)
    assert np.array_equal(out, ref)
    # Calibration (hence the claim) is the base's; only the noise changes.
    assert scaled.effective_sensitivity(2.0, 3) == plain.effective_sensitivity(2.0, 3)
    assert scaled.name.startswith(base) and "audit mutant" in scaled.name


def test_scaled_backend_removes_noise_and_composes():
    from dp_experts_env.privacy import ScaledBackend
    from dp_experts_env.privacy.noise import noise_multiplier, root_backend

    off = ScaledBackend("fast", 0.0)
    assert np.all(off.laplace(np.random.default_rng(0), 5.0, (100,)) == 0.0)
    twice = ScaledBackend(ScaledBackend("grid", 0.5), 0.5)
    assert twice.multiplier == 0.25 and noise_multiplier(twice) == 0.25
    assert root_backend(twice).name == "grid" and noise_multiplier(get_backend("fast")) == 1.0
    with pytest.raises(ValueError, match="multiplier must be a finite number >= 0"):
        ScaledBackend("fast", -1.0)
    with pytest.raises(TypeError, match="multiplier must be a number"):
        ScaledBackend("fast", "half")


def test_recording_backend_keeps_releases_without_changing_them():
    from dp_experts_env.privacy import RecordingBackend, ScaledBackend

    rec = RecordingBackend(ScaledBackend("fast", 0.5), max_calls=2)
    values = np.arange(12.0).reshape(3, 4)
    outs = [rec.add_laplace(BatchRNG(run_seeds(s, 3)), values, 1.0) for s in range(3)]
    ref = FastBackend().add_laplace(BatchRNG(run_seeds(0, 3)), values, 0.5)
    assert np.array_equal(outs[0], ref) and rec.multiplier == 0.5 and rec.name.startswith("fast")
    assert len(rec.releases) == 2  # max_calls
    exact, noisy = rec.releases[1]
    assert np.array_equal(exact, values) and np.array_equal(noisy, outs[1])
    rec.enabled = False
    rec.releases.clear()
    rec.add_laplace(BatchRNG(run_seeds(9, 3)), values, 1.0)
    assert rec.releases == []
    # laplace() is raw noise, not a release.
    rec.enabled = True
    rec.laplace(BatchRNG(run_seeds(9, 3)), 1.0, (2,))
    assert rec.releases == []
