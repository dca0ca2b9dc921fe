"""The batched random streams' two forms: numpy Generators and the compiled PCG64 array.

:mod:`dp_experts_env._pcg64` must give every stream's doubles and states bit for bit as
``Generator(PCG64)`` does, whatever the seeds (one to three 32-bit words, 2^64 and wider), the
key, the refill widths and the start columns; BatchRNG and the selection streams must read the
same uniforms on both paths. Every test here plays both forms within the compiled pass (the form
is chosen without a path decision: ``jit_active``), so the numpy-path pass need not replay the
learners' tests for it.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import use_jit_path

from agents.selection_streams import SelectionStreams
from dp_experts_env import _jit, batch_rng
from dp_experts_env.batch_rng import (
    ARRAY_FROM_RUNS,
    BatchRNG,
    fill_rows,
    seeded_generators,
    seeded_streams,
    stream_states,
)

pytestmark = pytest.mark.skipif(not _jit.numba_available(), reason="numba is not installed")

SEED_SETS = {
    "small": list(range(40)),
    "two-word": [2**32 + 5, 2**40 + 1, 2**63 - 1, 7],  # mixed word counts, input order kept
    "wide": [2**64 + 3, 2**70, 5],  # 2^64 and wider: one by one
    "numpy-ints": np.arange(1000, 1010, dtype=np.uint64),
}
KEYS = [(), (0,), (3,), (3, 1), (2**33,)]


def _compiled(seeds, key):  # noqa: ANN001, ANN202
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("DP_EXPERTS_NO_JIT", raising=False)
        mp.delenv("DP_EXPERTS_NUMBA", raising=False)
        mp.setattr(batch_rng, "ARRAY_FROM_RUNS", 1)  # the array form for any run count
        streams = seeded_streams(seeds, *key)
    assert isinstance(streams, np.ndarray) and streams.dtype == np.uint64
    return streams


@pytest.mark.parametrize("key", KEYS, ids=str)
@pytest.mark.parametrize("name", list(SEED_SETS))
def test_seeded_streams_hold_numpy_s_states(name: str, key: tuple[int, ...]) -> None:
    seeds = SEED_SETS[name]
    generators = seeded_generators(seeds, *key)
    assert stream_states(_compiled(seeds, key)).tobytes() == stream_states(generators).tobytes()
    # numpy's own construction, not only ours (the seed-sequence hash is ours in both forms)
    for s, g in zip(list(seeds)[:3], generators, strict=False):
        own = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(s), *key])))
        assert own.bit_generator.state == g.bit_generator.state


def test_refills_give_numpy_s_doubles_and_states() -> None:
    """Random widths and start columns, whole arrays and one-row slices, in any order."""
    plan_rng = np.random.default_rng(11)
    seeds = list(range(100, 164))
    streams, generators = _compiled(seeds, (2,)), seeded_generators(seeds, 2)
    for _ in range(40):
        width = int(plan_rng.integers(1, 300))
        start = int(plan_rng.integers(0, width))
        if plan_rng.random() < 0.3:  # one run's stream only
            r = int(plan_rng.integers(len(seeds)))
            got = np.full((1, width), -1.0)
            want = got.copy()
            fill_rows(streams[r : r + 1], got, start)
            fill_rows(generators[r : r + 1], want, start)
        else:
            got = np.full((len(seeds), width), -1.0)
            want = got.copy()
            fill_rows(streams, got, start)
            fill_rows(generators, want, start)
        assert got.tobytes() == want.tobytes()
        assert (got[:, :start] == -1.0).all()  # columns before start untouched
        assert stream_states(streams).tobytes() == stream_states(generators).tobytes()
    # and numpy's own reads, after all that
    tail = np.array([g.random(17) for g in seeded_generators(seeds, 2)])
    fresh = _compiled(seeds, (2,))
    out = np.empty((len(seeds), 17))
    fill_rows(fresh, out, 0)
    assert out.tobytes() == tail.tobytes()


def test_known_first_doubles() -> None:
    """Seed 0, key (0,): numpy's ``default_rng(0).random(4)``, recorded (trailing zero words of
    a seed sequence's entropy do not change its state)."""
    want = [0.6369616873214543, 0.2697867137638703, 0.04097352393619469, 0.016527635528529094]
    out = np.empty((1, 4))
    fill_rows(_compiled([0], (0,)), out, 0)
    assert out[0].tolist() == want
    assert seeded_generators([0], 0)[0].random(4).tolist() == want


def _draws(rng: BatchRNG, sizes: list[int]) -> bytes:
    views = []
    out = []
    for i, k in enumerate(sizes):
        u = rng.random((k,))
        out.append(u.tobytes())
        if i % 3 == 0:
            views.append(u)  # a live view: the next refill must not write in place
    return b"".join(out)


@pytest.mark.parametrize("runs", [1, 7, ARRAY_FROM_RUNS, 1100])
def test_batch_rng_reads_the_same_uniforms_on_both_paths(runs: int, monkeypatch) -> None:
    sizes = [int(k) for k in np.random.default_rng(runs).integers(1, 5000, 25)]
    seeds = list(range(runs))
    use_jit_path("compiled", monkeypatch)
    compiled = BatchRNG(seeds, stream=4)
    assert isinstance(compiled._run_streams, np.ndarray) == (runs >= ARRAY_FROM_RUNS)
    got = _draws(compiled, sizes)
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    reference = BatchRNG(seeds, stream=4)
    assert isinstance(reference._run_streams, list)
    assert got == _draws(reference, sizes)
    assert (
        stream_states(compiled._run_streams).tobytes()
        == stream_states(reference._run_streams).tobytes()
    )


def test_selection_streams_read_the_same_uniforms_on_both_paths(monkeypatch) -> None:
    plan_rng = np.random.default_rng(5)
    seeds = list(range(ARRAY_FROM_RUNS + 8))
    use_jit_path("compiled", monkeypatch)
    compiled = SelectionStreams(seeds)
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    reference = SelectionStreams(seeds)
    assert isinstance(compiled._run_streams, np.ndarray)
    assert isinstance(reference._run_streams, list)
    for _ in range(200):
        runs = np.sort(plan_rng.choice(len(seeds), int(plan_rng.integers(1, 10)), replace=False))
        count = int(plan_rng.choice([1, 3, 40, 300]))  # 300 widens the buffer
        assert compiled.take(runs, count).tobytes() == reference.take(runs, count).tobytes()


def test_choosing_the_form_is_not_a_path_decision(monkeypatch) -> None:
    """BatchRNG asks jit_active, which the numpy-path pass's watch does not count."""
    use_jit_path("compiled", monkeypatch)
    before = _jit.consultations()
    BatchRNG(list(range(ARRAY_FROM_RUNS)), stream=1).random((3,))
    assert _jit.consultations() == before
    _jit.jit_enabled()
    assert _jit.consultations() == before + 1


def test_numpy_path_block_keeps_the_generators(monkeypatch) -> None:
    use_jit_path("compiled", monkeypatch)
    with _jit.numpy_path():
        assert isinstance(BatchRNG(range(ARRAY_FROM_RUNS), stream=0)._run_streams, list)
    assert isinstance(BatchRNG(range(ARRAY_FROM_RUNS), stream=0)._run_streams, np.ndarray)
    assert isinstance(BatchRNG(range(ARRAY_FROM_RUNS - 1), stream=0)._run_streams, list)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"out": np.empty((3, 5), np.int64)}, TypeError),
        ({"out": np.empty((3, 5), np.float32)}, TypeError),
        ({"out": np.empty((4, 5))}, ValueError),  # more rows than streams
        ({"out": np.empty((2, 5))}, ValueError),  # fewer
        ({"out": np.empty((5, 3)).T}, ValueError),  # not C-contiguous
        ({"out": np.empty(15)}, ValueError),
        ({"start": -2}, ValueError),
        ({"start": 6}, ValueError),
        ({"start": True}, TypeError),
        ({"start": 1.5}, TypeError),
        ({"start": "1"}, TypeError),
        ({"start": None}, TypeError),
    ],
)
@pytest.mark.parametrize("form", ["array", "generators"])
def test_fill_rows_refuses_what_it_cannot_fill(form: str, kwargs: dict, error: type) -> None:
    seeds = [1, 2, 3]
    streams = _compiled(seeds, ()) if form == "array" else seeded_generators(seeds)
    before = stream_states(streams).tobytes()
    args = {"out": np.empty((3, 5)), "start": 0, **kwargs}
    with pytest.raises(error, match="out|start"):
        fill_rows(streams, args["out"], args["start"])
    assert stream_states(streams).tobytes() == before  # nothing advanced


def test_the_array_form_met_with_the_jit_off_draws_the_same(monkeypatch) -> None:
    """Switched off after it was made (or unpickled where numba is missing): generators stand in."""
    seeds = list(range(40))
    streams = _compiled(seeds, (5,))
    generators = seeded_generators(seeds, 5)
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    got, want = np.empty((40, 9)), np.empty((40, 9))
    for start in (0, 4):
        fill_rows(streams, got, start)
        fill_rows(generators, want, start)
        assert got.tobytes() == want.tobytes()
        assert stream_states(streams).tobytes() == stream_states(generators).tobytes()


def test_ftpl_pages_and_copies_read_the_same_uniforms_on_both_forms(monkeypatch) -> None:
    """ftpl-gr's resampling pages past the threshold, and a deepcopy turned ahead of its original:
    a copy that advanced a throw-away stream would reuse noise (the planted ``.copy()`` mutant)."""
    import copy

    from agents._ftpl_gr import ResamplePages

    runs = ARRAY_FROM_RUNS + 8
    use_jit_path("compiled", monkeypatch)
    compiled = ResamplePages(BatchRNG(range(runs), stream=2), width=3)
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
    reference = ResamplePages(BatchRNG(range(runs), stream=2), width=3)
    assert isinstance(compiled._streams, np.ndarray) and isinstance(reference._streams, list)
    plan = np.random.default_rng(3)
    for i in range(12):
        turned = sorted(set(plan.integers(0, runs, 5).tolist()))
        compiled.turn(turned)
        reference.turn(turned)
        assert compiled.page.tobytes() == reference.page.tobytes()
        if i == 5:  # a copy turned ahead first must not change what the original reads next
            twin = copy.deepcopy(compiled)
            twin.turn(range(runs))
            before = twin.page.copy()
            compiled.turn(range(runs))
            reference.turn(range(runs))
            assert compiled.page.tobytes() == before.tobytes() == reference.page.tobytes()
    pages = [compiled.page.copy()]
    compiled.turn([0])
    pages.append(compiled.page.copy())
    assert not np.array_equal(pages[0][0], pages[1][0])  # a turn reads new uniforms


def test_every_learner_lock_holds_on_the_array_form(monkeypatch) -> None:
    """The learner locks play 3 runs (below the threshold): here at threshold 1, so every
    learner's and env's streams, the selection streams and ftpl-gr's pages are arrays."""
    from _learner_lock import actions, entries, load_reference
    from _lock_arrays import compare

    use_jit_path("compiled", monkeypatch)
    monkeypatch.setattr(batch_rng, "ARRAY_FROM_RUNS", 1)
    reference, _ = load_reference()
    played = {e: actions(e) for e in entries() if e in reference}
    assert len(played) > 50
    assert compare(played, {e: reference[e] for e in played}) == []


def test_kernel_keys_follow_an_intrinsic_into_its_module(tmp_path, monkeypatch) -> None:
    """An edit to an intrinsic defined in another module re-keys the kernel that calls it."""
    import importlib
    import sys

    package = tmp_path / "plantedintr"
    package.mkdir()
    (package / "__init__.py").write_text("")
    helper = (
        "from numba.core import types\n"
        "from numba.extending import intrinsic\n\n"
        "@intrinsic\n"
        "def twice(typingctx, x):\n"
        "    def codegen(context, builder, sig, args):\n"
        "        return builder.add(args[0], args[0])\n"
        "    return types.uint64(types.uint64), codegen\n"
    )
    (package / "intr.py").write_text(helper)
    (package / "kern.py").write_text(
        "from plantedintr.intr import twice\n\ndef k(x):\n    return twice(x)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    kern = importlib.import_module("plantedintr.kern")
    files, _ = _jit.reached_files(kern.k)
    assert str(package / "intr.py") in files
    key = _jit.kernel_key(kern.k)
    (package / "intr.py").write_text(helper.replace("builder.add", "builder.mul"))
    assert _jit.kernel_key(kern.k) != key
    for name in [m for m in sys.modules if m.startswith("plantedintr")]:
        monkeypatch.delitem(sys.modules, name)
