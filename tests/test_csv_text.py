"""results.csv's writer (dp_experts_env/evaluation/csv_text.py) against pandas' ``to_csv`` bytes.

Known answers: pandas' own output on fuzzed frames of every dtype the writer handles and their
edge values (NaN, infinities, -0.0 next to 0.0, subnormals, the repr switch at 1e16, strings with
commas, quotes, newlines and carriage returns, missing strings), on random float bit patterns,
and on the results tables of real sweeps (full information, bandit and OCO learners, private ones
at two epsilons; full information and bandit rows in one table). The frames pandas must write
(other dtypes, one column, no rows) are handed back. Mutant: a writer that merges stretches of
equal floats by value (so -0.0 after 0.0 is written "0.0") is caught; harmless: one that formats
every field on its own passes.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from conftest import use_jit_path

from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
from dp_experts_env.evaluation import csv_text as csv_mod
from dp_experts_env.evaluation.csv_text import csv_text, write_frame

EDGE_FLOATS = [
    0.0, -0.0, 0.0, np.nan, np.nan, np.inf, -np.inf, 1e-300, 5e-324, -5e-324,
    2.2250738585072014e-308, 1e16, 9999999999999998.0, 1e-4, 1e-5, 0.1, 0.1 + 0.2, 1 / 3, 1e22,
    1.7976931348623157e308,
    123456789.0, -2.5, 1.0, 1.0, 1.0,
]  # fmt: skip
EDGE_STRINGS = [
    "plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "crlf\r\n", "", " lead", "trail ",
    "ünï", "tab\there", "a,b", "a,b", None, np.nan, "'single'", '"', ",", "x",
]  # fmt: skip


def _edge_frame(n: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    floats = np.asarray(EDGE_FLOATS)[g.integers(0, len(EDGE_FLOATS), n)]
    strings = [EDGE_STRINGS[i] for i in g.integers(0, len(EDGE_STRINGS), n)]
    return pd.DataFrame(
        {
            "f": floats,
            "stretches": np.repeat(floats[: -(-n // 4)], 4)[:n],  # equal neighbours, -0.0 too
            "i": g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),
            "small int": np.repeat(g.integers(-3, 3, -(-n // 3)), 3)[:n],
            "b": g.random(n) < 0.5,
            "s": pd.array(strings, dtype="str"),
            "obj": np.array(strings, dtype=object),
            "random bits": g.integers(0, 2**64, n, dtype=np.uint64).view(np.float64),
            'odd, "label"': g.standard_normal(n) * 10.0 ** g.integers(-20, 20, n),
        }
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("header", [True, False])
def test_fuzzed_frames_are_pandas_bytes(seed, header):
    frame = _edge_frame(400 + 37 * seed, seed)
    text = csv_text(frame, header=header)
    assert text is not None, "every column here has a dtype the writer handles"
    assert text == frame.to_csv(index=False, header=header)


def test_every_float_bit_pattern_sampled_is_written_as_pandas_writes_it():
    """100,000 random 64-bit patterns (every exponent, subnormals, NaN payloads)."""
    bits = np.random.default_rng(7).integers(0, 2**64, 100_000, dtype=np.uint64)
    frame = pd.DataFrame({"x": bits.view(np.float64), "y": np.arange(len(bits))})
    assert csv_text(frame) == frame.to_csv(index=False)


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"a": np.arange(3, dtype=np.int32), "b": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"a": np.arange(3, dtype=np.float32), "b": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"a": pd.Categorical(["x", "y", "x"]), "b": [1, 2, 3]}),
        pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [1, 2, 3]}),
        pd.DataFrame({"a": [1.5, "x", 2], "b": [1, 2, 3]}),  # mixed objects
        pd.DataFrame({0: [1.0, 2.0], "b": [1, 2]}),  # a label that is not a string
        pd.DataFrame({"only": ["", "a"]}),  # one column: an empty field is quoted
        pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=float)}),
    ],
    ids=["int32", "float32", "category", "Int64", "mixed", "int label", "one column", "no rows"],
)
def test_frames_pandas_must_write_are_handed_back_and_written_by_pandas(frame):
    assert csv_text(frame) is None
    fh = io.StringIO()
    write_frame(frame, fh)
    assert fh.getvalue() == frame.to_csv(index=False)


#: Full information (a private learner at two epsilons), bandit, OCO; and uniform play on full
#: information and bandit in one table (each kind's own columns, empty in the others' rows).
SWEEPS = {
    "full": (["hedge", "noisy-clipped-hedge"], [("DPExperts-Shift-v0", {"n_experts": 3})]),
    "bandit": (["exp3", "ldp-exp4"], [("DPExperts-Bandit-v0", {"n_arms": 3})]),
    "oco": (["ogd", "dp-ftrl-oco"], [("DPExperts-OCO-v0", {"dim": 2})]),
    "mixed": (
        ["uniform"],
        [
            ("DPExperts-Shift-v0", {"n_experts": 3}),
            ("DPExperts-Bandit-v0", {"n_arms": 3}),
        ],
    ),
}


def _real_sweep(out, name: str, rows: str) -> pd.DataFrame:
    agents, envs = SWEEPS[name]
    entries = [EnvEntry(env_id, {**params, "horizon": 60}) for env_id, params in envs]
    grid = Grid(agents, entries, epsilons=[1.0, float("inf")], n_seeds=2, n_record=7)
    return run_grid(grid, out, backend="serial", progress=False, rows=rows)


@pytest.mark.parametrize("name", SWEEPS)
def test_a_real_sweeps_results_csv_is_pandas_bytes(tmp_path, name, monkeypatch):
    # The writer takes no path decision: played once, on the compiled path (rows are the same
    # floats on both), so CI's numpy-path pass leaves this test out.
    use_jit_path("compiled", monkeypatch)
    frame = _real_sweep(tmp_path / "all", name, "all")
    text = csv_text(frame)
    assert text is not None, frame.dtypes
    assert text == frame.to_csv(index=False)
    assert (tmp_path / "all" / "results.csv").read_text() == text
    if name == "mixed":
        assert frame.isna().any().any()  # columns missing in some rows
    _real_sweep(tmp_path / "final", name, "final")  # written in batches of runs, streamed
    assert (tmp_path / "final" / "results.csv").read_text() == text


def test_a_writer_merging_equal_floats_by_value_is_caught_and_one_field_at_a_time_passes(
    monkeypatch,
):
    frame = _edge_frame(300, 0)
    expected = frame.to_csv(index=False)

    def by_value(values: np.ndarray) -> list[str]:  # the mutant: -0.0 == 0.0 share a text
        starts = csv_mod._starts(np.where(np.isnan(values), np.inf, values))
        texts = ["" if v != v else repr(v) for v in values[starts].tolist()]
        return csv_mod._spread(texts, starts, len(values))

    monkeypatch.setattr(csv_mod, "_float_fields", by_value)
    assert csv_text(frame) != expected
    one_by_one = lambda values: ["" if v != v else repr(v) for v in values.tolist()]  # noqa: E731
    monkeypatch.setattr(csv_mod, "_float_fields", one_by_one)
    assert csv_text(frame) == expected


def test_a_frame_is_written_in_chunks_with_pandas_writing_the_chunks_it_must(monkeypatch):
    """Chunks of 7 rows; an object column holds a number in one chunk only (pandas writes it)."""
    monkeypatch.setattr(csv_mod, "CHUNK_CELLS", 7 * 9)
    frame = _edge_frame(100, 3)
    frame["obj"] = frame["obj"].astype(object)
    frame.loc[50, "obj"] = 1.5
    pandas_chunks = []
    real = pd.DataFrame.to_csv
    monkeypatch.setattr(
        pd.DataFrame,
        "to_csv",
        lambda self, *a, **kw: pandas_chunks.append(len(self)) or real(self, *a, **kw),
    )
    fh = io.StringIO()
    write_frame(frame, fh)
    assert pandas_chunks == [7]  # the chunk of row 50 only
    assert fh.getvalue() == real(frame, index=False)
    fh = io.StringIO()
    write_frame(frame, fh, header=False)
    assert fh.getvalue() == real(frame, index=False, header=False)


def test_a_column_of_strings_only_is_quoted_per_stretch_and_other_objects_go_to_pandas():
    """The strings-only branch of ``_string_fields`` (one text per stretch) against the csv
    module's field per value; a string subclass or a number among them is left to pandas."""
    words = ["a", "a,b", 'q"', "a", "a", "two\nlines", "", "", "a,b", "x"] * 30
    values = np.array(words, dtype=object)
    reference = [csv_mod._quoted(w) for w in words]
    assert csv_mod._string_fields(values) == reference
    assert csv_mod._string_fields(np.array(["only"] * 5, dtype=object)) == ["only"] * 5
    assert csv_mod._string_fields(np.array([np.str_("a"), "a"], dtype=object)) is None
    assert csv_mod._string_fields(np.array(["a", 1.5], dtype=object)) is None
    assert csv_mod._string_fields(np.array(["a", None, np.nan], dtype=object)) == ["a", "", ""]
    frame = pd.DataFrame({"s": values, "t": np.arange(len(words), dtype=np.int64)})
    assert csv_text(frame) == frame.to_csv(index=False)
    for seed in range(4):  # stretches of the edge strings, every one present
        g = np.random.default_rng(seed)
        edge = [t for t in EDGE_STRINGS if isinstance(t, str)]
        picked = np.repeat(np.array(edge, dtype=object)[g.integers(0, len(edge), 120)], 3)
        frame = pd.DataFrame({"s": picked, "u": pd.array(picked.tolist(), dtype="str")})
        assert csv_text(frame) == frame.to_csv(index=False), seed
