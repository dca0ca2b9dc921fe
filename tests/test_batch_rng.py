"""BatchRNG: batch == single runs, chunking invariance, distributions (KS / chi-square)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dp_experts_env.batch_rng import BatchRNG, run_seeds, seeded_generators

# Statistical tests use fixed seeds, so each is deterministic; the threshold only guards against
# a wrong law (a correct one passes with probability 1 - 1e-3 over seeds).
P_MIN = 1e-3
N_DRAWS = 20_000


def _pattern(rng: BatchRNG, probs: np.ndarray) -> list[np.ndarray]:
    """A mixed sequence of calls touching every method."""
    return [
        rng.random((3,)),
        rng.open_uniform((2, 2)),
        rng.laplace(1.5, (4,)),
        rng.normal((3,)),
        rng.gumbel((2,)),
        rng.exponential(()),
        rng.bernoulli(0.3, (5,)),
        rng.integers(7, (2,)),
        rng.categorical(probs),
        rng.random((70,)),  # crosses small chunk boundaries
        rng.normal((1,)),
    ]


def test_run_b_equals_single_run() -> None:
    seeds = [5, 9, 11, 0]
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0], [1.0, 1.0, 2.0], [0.0, 0.0, 1.0]])
    batch = _pattern(BatchRNG(seeds, stream=3), probs)
    for b, seed in enumerate(seeds):
        single = _pattern(BatchRNG([seed], stream=3), probs[b : b + 1])
        for got, want in zip(batch, single, strict=True):
            np.testing.assert_array_equal(got[b : b + 1], want)


def test_shapes_are_batch_first() -> None:
    rng = BatchRNG([1, 2, 3])
    assert rng.random().shape == (3,)
    assert rng.random((4, 5)).shape == (3, 4, 5)
    assert rng.normal((2,)).shape == (3, 2)
    assert rng.categorical(np.ones((3, 6))).shape == (3,)
    assert rng.integers(4, (2, 2)).dtype == np.int64


def test_streams_are_independent_and_seeded() -> None:
    a = BatchRNG([7], stream=0).random((50,))
    b = BatchRNG([7], stream=1).random((50,))
    c = BatchRNG([7], stream=0).random((50,))
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)


def _with_chunk(seeds: list[int], chunk: int) -> BatchRNG:
    rng = BatchRNG(seeds)
    # The buffer length is an implementation detail that must not change any number drawn.
    rng._chunk = chunk
    return rng


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1000])
def test_chunk_size_does_not_change_draws(chunk: int) -> None:
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    reference = _pattern(BatchRNG([4, 8]), probs)
    chunked = _pattern(_with_chunk([4, 8], chunk), probs)
    for got, want in zip(chunked, reference, strict=True):
        np.testing.assert_array_equal(got, want)


def test_split_calls_give_the_same_uniforms() -> None:
    whole = BatchRNG([3, 4]).random((100,))
    rng = _with_chunk([3, 4], 9)
    parts = [rng.random((n,)) for n in (1, 13, 40, 0, 46)]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)
    # Elementwise laws consume one uniform per variate, so they split the same way.
    whole_lap = BatchRNG([3, 4]).laplace(2.0, (30,))
    rng = _with_chunk([3, 4], 5)
    split_lap = np.concatenate([rng.laplace(2.0, (n,)) for n in (10, 20)], axis=1)
    np.testing.assert_allclose(split_lap, whole_lap, rtol=0, atol=0)


def test_returned_arrays_survive_later_draws() -> None:
    rng = _with_chunk([1], 4)
    first = rng.random((3,))
    kept = first.copy()
    rng.random((50,))
    np.testing.assert_array_equal(first, kept)


# ----------------------------------------------------------------------------- distributions
def _draws(method: str, *args: object) -> np.ndarray:
    rng = BatchRNG([123, 456])
    return getattr(rng, method)(*args).ravel()


@pytest.mark.parametrize(
    ("method", "args", "law"),
    [
        ("random", ((N_DRAWS,),), stats.uniform()),
        ("open_uniform", ((N_DRAWS,),), stats.uniform()),
        ("laplace", (1.5, (N_DRAWS,)), stats.laplace(scale=1.5)),
        ("laplace", (0.2, (N_DRAWS,)), stats.laplace(scale=0.2)),
        ("gumbel", ((N_DRAWS,),), stats.gumbel_r()),
        ("normal", ((N_DRAWS,),), stats.norm()),
        ("exponential", ((N_DRAWS,),), stats.expon()),
    ],
)
def test_continuous_laws_ks(method: str, args: tuple, law: object) -> None:
    x = _draws(method, *args)
    assert x.size == 2 * N_DRAWS
    assert stats.kstest(x, law.cdf).pvalue > P_MIN


def test_laplace_per_run_scale() -> None:
    rng = BatchRNG([10, 20])
    x = rng.laplace(np.array([[0.5], [3.0]]), (N_DRAWS,))
    assert stats.kstest(x[0], stats.laplace(scale=0.5).cdf).pvalue > P_MIN
    assert stats.kstest(x[1], stats.laplace(scale=3.0).cdf).pvalue > P_MIN


def test_open_uniform_never_hits_the_ends() -> None:
    x = _draws("open_uniform", (N_DRAWS,))
    assert np.all((x > 0.0) & (x < 1.0))


def test_categorical_chi_square() -> None:
    probs = np.array([0.1, 0.0, 0.25, 0.4, 0.25])
    rng = BatchRNG(list(range(N_DRAWS // 4)))
    draws = np.concatenate([rng.categorical(np.tile(probs, (rng.num_runs, 1))) for _ in range(4)])
    counts = np.bincount(draws, minlength=probs.size)
    assert counts[1] == 0  # zero-probability category never drawn
    keep = probs > 0
    expected = probs[keep] * draws.size
    assert stats.chisquare(counts[keep], expected).pvalue > P_MIN


def test_categorical_unnormalised_rows() -> None:
    rng = BatchRNG([2, 3])
    weights = np.array([[2.0, 6.0], [5.0, 5.0]])
    draws = np.stack([rng.categorical(weights) for _ in range(4000)])
    assert stats.binomtest(int(draws[:, 0].sum()), 4000, 0.75).pvalue > P_MIN
    assert stats.binomtest(int(draws[:, 1].sum()), 4000, 0.5).pvalue > P_MIN


def test_bernoulli_and_integers() -> None:
    x = _draws("bernoulli", 0.3, (N_DRAWS,))
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert stats.binomtest(int(x.sum()), x.size, 0.3).pvalue > P_MIN
    k = _draws("integers", 6, (N_DRAWS,))
    counts = np.bincount(k, minlength=6)
    assert counts.size == 6
    assert stats.chisquare(counts).pvalue > P_MIN


# ----------------------------------------------------------------------------- run_seeds
def test_run_seeds() -> None:
    assert run_seeds(5, 3) == [5, 6, 7]
    assert run_seeds(np.int64(2), 2) == [2, 3]
    assert run_seeds([9, 1], 2) == [9, 1]
    fresh = run_seeds(None, 4)
    assert len(fresh) == 4 and fresh == list(range(fresh[0], fresh[0] + 4))


@pytest.mark.parametrize(
    ("seed", "error"),
    [(-1, ValueError), ([1, 2, 3], ValueError), ([1, -2], ValueError), (2.5, TypeError)],
)
def test_run_seeds_errors(seed: object, error: type) -> None:
    with pytest.raises(error):
        run_seeds(seed, 2)


def test_empty_seeds_rejected() -> None:
    with pytest.raises(ValueError):
        BatchRNG([])


def test_refills_reuse_the_buffer_but_never_under_a_live_view():
    rng = BatchRNG([1, 2, 3])
    rng._chunk = 64
    held = rng.random((50,))
    kept = held.copy()
    later = [rng.random((7,)).copy() for _ in range(40)]
    assert np.array_equal(held, kept)  # the view taken before the refills is intact
    reference = [
        np.random.Generator(np.random.PCG64(np.random.SeedSequence([s, 0]))).random(330)
        for s in (1, 2, 3)
    ]
    assert np.array_equal(np.concatenate([kept, *later], axis=1), np.array(reference))
    del held
    buffers = set()
    for _ in range(60):
        rng.random((5,))  # nothing kept: every refill may reuse the buffer
        buffers.add(id(rng._buffer))
    assert len(buffers) == 1


def test_refills_start_small_and_grow_to_the_chunk():
    """A learner that draws a few uniforms per run reads a small first refill (an audit builds
    thousands of learners), later refills grow four-fold up to the chunk; the draws are each
    run's own generator's, whatever the refill sizes."""
    seeds = list(range(10, 210))  # 200 runs: a chunk of 4096 per run
    rng = BatchRNG(seeds, stream=2)
    widths, parts = [], []
    for count in (1, 200, 300, 1000, 3000, 5000):
        parts.append(rng.random((count,)).copy())
        widths.append(rng._buffer.shape[1])
    assert widths == [256, 256, 1024, 4096, 4096, 5000]  # a take wider than the fill: its own
    reference = [
        np.random.Generator(np.random.PCG64(np.random.SeedSequence([s, 2]))).random(9501)
        for s in seeds
    ]
    assert np.array_equal(np.concatenate(parts, axis=1), np.array(reference))
    # Many runs: the chunk (4 M doubles across the batch) is below the first fill.
    assert BatchRNG(list(range(20_000))).random((1,)).base.shape[1] == 209


def _numpy_generator(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *key])))


@pytest.mark.parametrize("key", [(0,), (2,), (2, 1), (3, 2**33)])
def test_seeded_generators_are_numpys_bit_for_bit(key):
    """Seeds of one, two and three 32-bit words (entropy up to 5 words: the mixing past the
    pool's 4), mixed in one call, give numpy's own generators: state and first draws."""
    rng = np.random.default_rng(7)
    seeds = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**64 + 5, *rng.integers(0, 2**63, 300).tolist()]
    seeds += list(range(300))
    made = seeded_generators(seeds, *key)
    for seed, g in zip(seeds, made, strict=True):
        ref = _numpy_generator(seed, *key)
        assert g.bit_generator.state == ref.bit_generator.state, seed
        assert np.array_equal(g.random(3), ref.random(3)), seed


def test_seeded_generators_planted_constant_is_caught(monkeypatch):
    """A one-bit change of the hashed state (the mutant) gives other generators; reversed input
    order and a single seed (the harmless changes) do not."""
    import dp_experts_env.batch_rng as batch_rng

    seeds = [5, 2**40 + 3, 11]
    good = [g.bit_generator.state for g in seeded_generators(seeds, 2)]
    assert [g.bit_generator.state for g in seeded_generators(seeds[::-1], 2)] == good[::-1]
    assert seeded_generators([11], 2)[0].bit_generator.state == good[2]
    real = batch_rng._pcg_states

    def mutant(entropy):
        out = real(entropy)
        out[:, 0] ^= np.uint64(1)
        return out

    monkeypatch.setattr(batch_rng, "_pcg_states", mutant)
    bad = [g.bit_generator.state for g in seeded_generators(seeds, 2)]
    monkeypatch.undo()
    assert all(b != g for b, g in zip(bad, good, strict=True))
    numpys = [_numpy_generator(s, 2).bit_generator.state for s in seeds]
    assert good == numpys


def test_seeded_generators_refuse_negative_seeds():
    with pytest.raises(ValueError, match="non-negative"):
        seeded_generators([3, -1], 2)


@pytest.mark.parametrize("key", [(), (7,), (2**64 + 1, 3)])
def test_seeded_generators_wide_seeds_and_numpy_integers(key):
    """Seeds at the word edges (2**63 and past, four and five words: entropy wider than the
    pool with no key), numpy integer scalars and one seed alone: numpy's generators."""
    seeds = [2**63, 2**63 + 1, 2**64 - 1, 2**96, 2**128 + 7, np.uint64(2**63), np.int64(5)]
    for seed, g in zip(seeds, seeded_generators(seeds, *key), strict=True):
        assert g.bit_generator.state == _numpy_generator(seed, *key).bit_generator.state, seed
    (one,) = seeded_generators(np.array([2**62]), *key)
    assert one.bit_generator.state == _numpy_generator(2**62, *key).bit_generator.state


@pytest.mark.parametrize("bad", [2.5, 3.0, "3", None])
def test_seeded_generators_refuse_non_integers(bad):
    """numpy's SeedSequence refuses a float seed; int() would truncate 2.5 to seed 2."""
    with pytest.raises(TypeError, match="seeds and key must be integers"):
        seeded_generators([3, bad], 2)
    with pytest.raises(TypeError, match="seeds and key must be integers"):
        seeded_generators([3], bad)


@pytest.mark.parametrize("key", [(), (2,), (3, 2**33)])
def test_seeded_generators_array_path_is_numpys(key):
    """Seeds below 2^64 split into words as arrays (one word, two words, both mixed, a numpy
    array, a list numpy would hold as floats): numpy's generators, the same as when one seed
    of 2^64 sends the call through the one-by-one words."""
    rng = np.random.default_rng(3)
    one = [0, 2**32 - 1, *rng.integers(0, 2**32, 100).tolist()]
    two = [2**32, 2**64 - 1, 500_000_000_000, *rng.integers(2**32, 2**63, 100).tolist()]
    mixed = [x for pair in zip(one, two, strict=False) for x in pair]
    for seeds in (one, two, mixed, np.array(two, dtype=np.uint64), [1, 2**63]):
        fast = seeded_generators(seeds, *key)
        slow = seeded_generators([*list(seeds), 2**64], *key)[:-1]
        for seed, f, s in zip(seeds, fast, slow, strict=True):
            ref = _numpy_generator(int(seed), *key).bit_generator.state
            assert f.bit_generator.state == ref == s.bit_generator.state, seed
    with pytest.raises(ValueError, match="non-negative"):
        seeded_generators(np.array([3, -1]), *key)


def test_seeded_generators_leave_the_garbage_collector_as_found():
    """The collector is paused while the generators are made, then left as it was (on or off),
    also when the seeds are refused."""
    import gc

    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            seeded_generators([1, 2], 3)
            assert gc.isenabled() is state
            with pytest.raises(TypeError):
                seeded_generators([1, 2.5], 3)
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize(
    "seeds",
    [
        [np.bool_(True), 5],
        [np.array(3), 4],
        np.ma.array([1, 2], mask=[0, 1]),
        [1.0, 2],
    ],
    ids=["numpy-bool", "0-d-array", "masked", "float"],
)
def test_seeded_generators_refuse_what_seed_sequence_refuses(seeds):
    """Non-integers are refused as numpy's SeedSequence refuses them, not turned into seeds by
    an array conversion (a masked value would otherwise become a seed)."""
    with pytest.raises(TypeError, match="integers"):
        seeded_generators(seeds, 7)
