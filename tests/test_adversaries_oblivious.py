"""Oblivious loss sequences: hand-made hard families, sampled models and replay of user data."""

from __future__ import annotations

import inspect
import tracemalloc

import numpy as np
import pytest

from dp_experts_env import batch_rng as batch_rng_module
from dp_experts_env.adversaries import Neighbor, families, family_factory, make_adversary
from dp_experts_env.adversaries.changepoints import dyadic_capacity, segment_at
from dp_experts_env.adversaries.oblivious import FtlTrap, Replay, load_losses

# Every registered oblivious family (read from the registry: a new family is tested here too).
OBLIVIOUS = families("oblivious")
MATRIX = np.random.default_rng(0).integers(0, 9, size=(40, 5)) / 8.0
# Families that generate losses at any size (not replays of a matrix, user's or shipped).
GENERATED = [
    f
    for f in OBLIVIOUS
    if f != "replay" and not getattr(family_factory("oblivious", f), "TASK", "")
]
DEFAULT_BUFFER = batch_rng_module._BUFFER_DOUBLES


@pytest.fixture(autouse=True)
def _small_rng_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Buffer size never changes a number drawn (tests/test_batch_rng.py); small is faster here.
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", 1 << 14)


def build(family: str, n_experts: int = 5, horizon: int = 40, **knobs):
    if family == "replay":
        return make_adversary("oblivious", "replay", losses=MATRIX, **knobs)
    sizes = {"n_experts": n_experts, "horizon": horizon}
    # The real-data tasks fix N (their classifiers); horizon cuts a prefix of their stream.
    for fixed in getattr(family_factory("oblivious", family), "FIXED_SIZES", ()):
        sizes.pop(fixed)
    return make_adversary("oblivious", family, **sizes, **knobs)


def play(adv, seeds, rounds=None, neighbor=None, actions_rng=None) -> dict[str, np.ndarray]:
    adv.reset(seeds, neighbor)
    out: dict[str, list] = {"losses": [], "means": [], "segment": [], "shift": []}
    for _ in range(adv.horizon if rounds is None else rounds):
        rnd = adv.next_round()
        for key in out:
            value = getattr(rnd, key)
            out[key].append(None if value is None else np.array(value))
        if actions_rng is not None:
            adv.record(actions_rng.integers(0, adv.n_experts, size=len(seeds)))
    return {k: (None if v[0] is None else np.stack(v)) for k, v in out.items()}


# ----------------------------------------------------------------------------- every family
@pytest.mark.parametrize("family", OBLIVIOUS)
def test_shapes_ranges_flags(family: str) -> None:
    adv = build(family)
    assert adv.oblivious and adv.feedback == "full"
    data = play(adv, [0, 1, 2])
    assert data["losses"].shape == (40, 3, adv.n_experts) and data["losses"].dtype == np.float64
    assert data["losses"].min() >= 0.0 and data["losses"].max() <= 1.0
    assert (data["means"] is not None) == adv.knows_means
    if adv.has_segments:
        assert data["segment"].shape == (40, 3) and not data["shift"][0].any()
        np.testing.assert_array_equal(np.diff(data["segment"], axis=0), data["shift"][1:])


@pytest.mark.parametrize("family", OBLIVIOUS)
def test_independent_of_actions_seeds_and_batches(family: str) -> None:
    seeds = [21, 22, 23]
    ref = play(build(family), seeds)
    acted = play(build(family), seeds, actions_rng=np.random.default_rng(1))
    again = play(build(family), seeds)
    for key in ("losses", "means", "segment", "shift"):
        if ref[key] is not None:
            np.testing.assert_array_equal(acted[key], ref[key])
            np.testing.assert_array_equal(again[key], ref[key])
    for b, seed in enumerate(seeds):
        single = play(build(family), [seed])
        np.testing.assert_array_equal(single["losses"], ref["losses"][:, b : b + 1])


@pytest.mark.parametrize("family", OBLIVIOUS)
def test_round_data_independent_of_chunking(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seeds = [5, 6]
    ref = play(build(family), seeds)
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", 3)
    monkeypatch.setattr(batch_rng_module, "_MIN_CHUNK", 1)
    np.testing.assert_array_equal(play(build(family), seeds)["losses"], ref["losses"])


@pytest.mark.parametrize("family", OBLIVIOUS)
def test_neighbor_replaces_exactly_one_round(family: str) -> None:
    adv = build(family)
    base = play(adv, [8, 9])
    vector = np.resize([0.5, 1.0, 0.0, 0.125, 1.0], adv.n_experts)  # N = 5 unless fixed by data
    for t in (1, 2, 33, 40):
        nb = play(adv, [8, 9], neighbor={"round": t, "loss": vector})
        np.testing.assert_array_equal(nb["losses"][t - 1], np.stack([vector, vector]))
        keep = np.arange(40) != t - 1
        np.testing.assert_array_equal(nb["losses"][keep], base["losses"][keep])
    with pytest.raises(ValueError):
        adv.reset([0], neighbor=Neighbor(3, np.ones(4)))


@pytest.mark.parametrize("family", GENERATED)
@pytest.mark.parametrize("n_experts", [2, 10])
def test_defaults_fit_the_env_defaults(family: str, n_experts: int) -> None:
    for horizon in (1, 2, 3, 1000):
        adv = build(family, n_experts=n_experts, horizon=horizon)
        data = play(adv, [0], rounds=min(horizon, 60))
        assert data["losses"].shape == (min(horizon, 60), 1, n_experts)


# ----------------------------------------------------------------------------- known sequences
def _zero_expert(losses: np.ndarray) -> np.ndarray:
    """(T, B) index of the unique zero-loss expert of every round (asserts uniqueness)."""
    assert np.all((losses == 0.0).sum(axis=2) == 1)
    return losses.argmin(axis=2)


def test_anti_lazy_switches_just_after_powers_of_two() -> None:
    adv = build("anti_lazy", n_experts=6, horizon=1000)
    assert adv.default_switches == dyadic_capacity(1000) == 9
    data = play(adv, list(range(10)))
    assert set(np.unique(data["losses"])) == {0.0, 1.0}
    best = _zero_expert(data["losses"])
    changes = np.flatnonzero(np.any(best[1:] != best[:-1], axis=1)) + 2  # 1-based rounds
    assert changes.tolist() == [2**m + 1 for m in range(1, 10)]
    assert np.all(best[1:] != best[:-1], axis=1)[changes - 2].all()  # every run switches there
    shifts = np.flatnonzero(data["shift"][:, 0]) + 1
    assert shifts.tolist() == changes.tolist()
    few = build("anti_lazy", n_experts=3, horizon=1000, n_shifts=3)
    few.reset([0])
    assert few.change_points.tolist() == [[129, 257, 513]] and few.default_switches == 3
    with pytest.raises(ValueError):
        build("anti_lazy", horizon=1000, n_shifts=10)


def test_switching_deterministic_follows_its_schedule() -> None:
    adv = build("switching_deterministic", n_experts=4, horizon=100, n_shifts=3)
    assert adv.default_switches == 3 and not adv.knows_means
    data = play(adv, [0, 1, 2, 3])
    best = _zero_expert(data["losses"])
    for b in range(4):
        changes = np.flatnonzero(best[1:, b] != best[:-1, b]) + 2
        assert changes.tolist() == [26, 51, 76]
    custom = build(
        "switching_deterministic",
        n_experts=3,
        horizon=30,
        change_points=[5, 6],
        best_loss=0.25,
        other_loss=0.75,
    )
    losses = play(custom, [0])["losses"]
    assert set(np.unique(losses)) == {0.25, 0.75}
    best = losses.argmin(axis=2)[:, 0]
    assert (np.flatnonzero(best[1:] != best[:-1]) + 2).tolist() == [5, 6]
    with pytest.raises(ValueError, match="best_loss"):
        build("switching_deterministic", best_loss=0.5, other_loss=0.5)


def test_dyadic_alternating_blocks() -> None:
    adv = build("dyadic_alternating", n_experts=3, horizon=300)
    assert adv.default_switches == 8  # switches at t = 2, 4, ..., 256
    losses = play(adv, [0, 1])["losses"]
    t = np.arange(1, 301)
    want = np.ones((300, 3))
    want[np.arange(300), (np.floor(np.log2(t)).astype(int)) % 2] = 0.0
    np.testing.assert_array_equal(losses[:, 0], want)
    np.testing.assert_array_equal(losses[:, 1], want)
    assert adv.change_points[0].tolist() == [2, 4, 8, 16, 32, 64, 128, 256]


def test_ftl_trap_known_sequence_and_ftl_loses() -> None:
    adv = FtlTrap(2, 9)
    assert adv.default_switches == 0 and not adv.knows_means and not adv.has_segments
    losses = play(adv, [0, 1])["losses"]
    want = [[0.5, 0.0]] + [[0.0, 1.0], [1.0, 0.0]] * 4
    np.testing.assert_array_equal(losses[:, 0], want)
    np.testing.assert_array_equal(losses[:, 1], want)
    # Follow-the-Leader (ties to the lowest index) loses every round after the first.
    horizon = 101
    losses = play(FtlTrap(3, horizon), [0])["losses"][:, 0]
    assert np.all(losses[:, 2] == 1.0)
    cum = np.zeros(3)
    ftl = 0.0
    for row in losses:
        ftl += row[int(np.argmin(cum))]
        cum += row
    assert ftl == horizon - 1 + 0.5
    assert cum.tolist() == [0.5 + (horizon - 1) / 2, (horizon - 1) / 2, horizon]


def test_sampled_stochastic_is_the_shift_model() -> None:
    knobs = {"n_shifts": 2, "gap": 0.2, "change_points": "uniform"}
    adv = build("sampled_stochastic", n_experts=6, horizon=200, **knobs)
    shift = make_adversary("shift", "bernoulli_gap", n_experts=6, horizon=200, **knobs)
    assert adv.knows_means and adv.has_segments and adv.default_switches == 2
    got, want = play(adv, [3, 4]), play(shift, [3, 4])
    for key in ("losses", "means", "segment", "shift"):
        np.testing.assert_array_equal(got[key], want[key])
    np.testing.assert_array_equal(adv.change_points, shift.change_points)
    np.testing.assert_array_equal(adv.segment_means(), shift.segment_means())
    for t in (1, 100, 200):
        np.testing.assert_array_equal(got["segment"][t - 1], segment_at(adv.change_points, t))
    pools = build("sampled_stochastic", n_experts=6, horizon=50, model="disjoint_pools")
    assert play(pools, [0])["losses"].shape == (50, 1, 6)
    with pytest.raises(ValueError, match="model must be one of"):
        build("sampled_stochastic", model="nope")
    with pytest.raises(TypeError):
        build("sampled_stochastic", bogus_knob=1)


# ----------------------------------------------------------------------------- replay
def test_replay_from_array_npy_and_csv(tmp_path) -> None:
    np.save(tmp_path / "m.npy", MATRIX)
    np.savetxt(tmp_path / "m.csv", MATRIX, delimiter=",")
    with open(tmp_path / "h.csv", "w") as f:
        f.write("a,b,c,d,e\n")
        np.savetxt(f, MATRIX, delimiter=",")
    sources = [MATRIX, MATRIX.tolist(), tmp_path / "m.npy", str(tmp_path / "m.csv")]
    sources.append(tmp_path / "h.csv")
    for source in sources:
        adv = make_adversary("oblivious", "replay", losses=source)
        assert (adv.horizon, adv.n_experts) == MATRIX.shape
        assert adv.default_switches == 0 and not adv.knows_means
        data = play(adv, [0, 1])
        np.testing.assert_array_equal(data["losses"][:, 0], MATRIX)
        np.testing.assert_array_equal(data["losses"][:, 1], MATRIX)
    # Sizes may be given when they agree with the matrix.
    assert Replay(5, 40, losses=MATRIX).horizon == 40


def test_replay_sizes_default_to_the_matrix() -> None:
    for adv in (Replay(losses=MATRIX), Replay(None, None, losses=MATRIX)):
        assert (adv.horizon, adv.n_experts) == (40, 5)
    # Environments fill sizes whose default is None (or missing) with their own defaults, so
    # replay's defaults must be neither: its sizes come from the matrix.
    params = inspect.signature(Replay).parameters
    for name in ("n_experts", "horizon"):
        assert params[name].default not in (None, inspect.Parameter.empty)


def test_replay_copies_the_user_array() -> None:
    user = MATRIX.copy()
    adv = Replay(losses=user)
    user[:] = 1.0
    np.testing.assert_array_equal(play(adv, [0])["losses"][:, 0], MATRIX)
    assert not adv.losses.flags.writeable


def test_replay_single_row_and_column_csv(tmp_path) -> None:
    (tmp_path / "row.csv").write_text("0.1,0.2,0.3\n")
    (tmp_path / "col.csv").write_text("0.1\n0.2\n0.3\n")
    assert load_losses(tmp_path / "row.csv").shape == (1, 3)
    assert load_losses(tmp_path / "col.csv").shape == (3, 1)


def test_replay_rescale_is_explicit() -> None:
    raw = np.array([[2.0, 4.0], [6.0, 10.0]])
    with pytest.raises(ValueError, match="never clipped"):
        Replay(losses=raw)
    np.testing.assert_array_equal(Replay(losses=raw, rescale=True).losses, (raw - 2.0) / 8.0)
    np.testing.assert_array_equal(Replay(losses=np.full((2, 2), 7.0), rescale=True).losses, 0.0)
    with pytest.raises(ValueError, match="finite"):
        Replay(losses=np.array([[np.nan, 1.0]]), rescale=True)


@pytest.mark.parametrize(
    ("losses", "kwargs", "error", "match"),
    [
        (np.array([[0.1, np.nan]]), {}, ValueError, "finite"),
        (np.array([[0.1, np.inf]]), {}, ValueError, "finite"),
        (np.array([[0.1, 1.5]]), {}, ValueError, "never clipped"),
        (np.array([[-0.01, 0.5]]), {}, ValueError, "never clipped"),
        (np.array([0.1, 0.2]), {}, ValueError, "2 dimension"),
        (np.zeros((2, 2, 2)), {}, ValueError, "2 dimension"),
        (np.zeros((0, 3)), {}, ValueError, "empty"),
        (np.zeros((3, 0)), {}, ValueError, "empty"),
        (np.array([["a", "b"]]), {}, TypeError, "numeric"),
        (None, {}, ValueError, "needs losses"),
        (MATRIX, {"n_experts": 4}, ValueError, "n_experts=4 disagrees"),
        (MATRIX, {"horizon": 41}, ValueError, "horizon=41 disagrees"),
        (MATRIX, {"horizon": 0}, ValueError, "horizon"),
        (MATRIX, {"rescale": "yes"}, TypeError, "rescale"),
    ],
)
def test_replay_bad_arrays(losses, kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make_adversary("oblivious", "replay", losses=losses, **kwargs)


def test_replay_bad_files(tmp_path) -> None:
    cases = {
        "missing.npy": None,
        "m.txt": "0.1,0.2\n",
        "nan.csv": "0.1,nan\n0.2,0.3\n",
        "big.csv": "0.1,2\n",
        "words.csv": "a,b\nc,d\n",
        "ragged.csv": "0.1,0.2\n0.3\n",
        "blank.csv": "0.1,\n0.2,0.3\n",
        "empty.csv": "",
        "bad.npy": "not numpy",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(ValueError, match="losses"):
            Replay(losses=path)
    np.save(tmp_path / "vec.npy", np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="2 dimension"):
        Replay(losses=tmp_path / "vec.npy")


# ----------------------------------------------------------------------------- memory
@pytest.mark.parametrize(
    "family", ["anti_lazy", "switching_deterministic", "dyadic_alternating", "sampled_stochastic"]
)
def test_memory_is_bounded_for_huge_horizons(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", DEFAULT_BUFFER)
    tracemalloc.start()
    try:
        adv = build(family, n_experts=100, horizon=10**6)
        adv.reset([0])
        for _ in range(2000):
            rnd = adv.next_round()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rnd.losses.shape == (1, 100) and adv.t == 2000
    assert adv.state_nbytes() < 64 * 1024
    assert peak < 200 * 2**20  # a (T, N) matrix would take 800 MB
