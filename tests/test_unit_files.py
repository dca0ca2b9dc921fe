"""One results file per unit, results shipped as arrays (issue 25, items 4 and 6).

A finished unit's runs are written as one unit file (``cells/unit-*.pack``: temp + rename, no
fsync); workers ship each run as columns of arrays. What earlier versions wrote (one run file
per cell and seed) is still read and checked; a damaged unit file is refused by name and its
runs are played again; a crash loses at most the unit in flight.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _store_files import SHIFT, as_run_files, grid, run, spy_on_played

from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, load_results
from dp_experts_env.evaluation import backends as backends_mod
from dp_experts_env.evaluation import store as store_mod
from dp_experts_env.evaluation.columns import by_seed, payload, run_columns
from dp_experts_env.evaluation.episode import run_cells
from dp_experts_env.evaluation.grid import _json_default
from dp_experts_env.evaluation.store import CellStore, UnsafeResultsFolder


@pytest.fixture
def played(monkeypatch):
    """The (agent, seed indices) of every cell actually played."""
    return spy_on_played(monkeypatch)


def packs(out: Path) -> list[Path]:
    return sorted((out / "cells").glob("unit-*.pack"))


def _old_payload(rows: list[dict]) -> bytes:
    """How the store serialised a run before columns travelled as arrays (reference)."""
    order = list(rows[0])
    const, cols = {}, {}
    for name in order:
        values = [row.get(name) for row in rows]
        first = values[0]
        if all(type(v) is type(first) and v == first for v in values):
            const[name] = first
        else:
            cols[name] = values
    data = {"order": order, "const": const, "cols": cols}
    return json.dumps(data, separators=(",", ":"), allow_nan=True, default=_json_default).encode()


# ----------------------------------------------------------------------------- arrays
def test_columns_are_arrays_and_serialise_to_the_bytes_rows_gave():
    cells = grid(agents=["hedge", "private-lazy-hedge"], epsilons=[1.0]).cells()
    for cell, rows in run_cells(cells):
        runs = by_seed(rows)
        assert sorted(runs) == list(cell.seed_indices)
        for seed, columns in runs.items():
            mine = [r for r in rows if r["seed"] == seed]
            assert payload(columns) == _old_payload(mine)
            assert columns["n"] == len(mine)
            assert columns["cols"]["round"].dtype == np.int64
            assert columns["cols"]["dynamic_regret"].dtype == np.float64


def test_odd_columns_round_trip_exactly():
    rows = [
        {"a": 1.5, "b": 2**70, "c": True, "d": None, "e": "x", "f": math.nan, "g": 1},
        {"a": math.inf, "b": 1, "c": False, "d": 1.0, "e": "y", "f": math.nan, "g": 2.0},
        {"a": -0.0, "b": 3, "c": True, "d": None, "e": "x", "f": 1.0, "g": 3},
    ]
    run = run_columns(rows)
    assert isinstance(run["cols"]["a"], np.ndarray)  # floats: float64
    assert isinstance(run["cols"]["c"], np.ndarray)  # bools
    for name in ("b", "d", "e", "g"):  # beyond int64, None, strings, mixed int/float: lists
        assert isinstance(run["cols"][name], list), name
    assert payload(run) == _old_payload(rows)


# ----------------------------------------------------------------------------- round trip
def test_one_file_per_unit_round_trips_and_writes_no_fsync_per_run(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(store_mod.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    small = run(grid(n_seeds=2), tmp_path / "small")
    fsyncs_small = len(synced)
    synced.clear()
    g = grid(n_seeds=6, seeds_per_cell=2, agents=["uniform", "hedge", "follow-the-leader"])
    frame = run(g, tmp_path / "big")
    assert len(synced) == fsyncs_small  # grid.json, the manifest twice, results.csv: per sweep
    assert len(packs(tmp_path / "big")) == 3  # one unit per seed block, one file per unit
    assert not list((tmp_path / "big" / "cells").glob("*.json"))
    pd.testing.assert_frame_equal(load_results(tmp_path / "big"), frame)
    pd.testing.assert_frame_equal(load_results(tmp_path / "small"), small)
    csv = pd.read_csv(tmp_path / "big" / "results.csv")
    assert len(csv) == len(frame) and list(csv.columns) == list(frame.columns)


def test_a_unit_file_is_what_a_unit_returned(tmp_path):
    out = tmp_path / "out"
    run(grid(), out)
    (pack,) = packs(out)
    head, _, body = pack.read_bytes().partition(b"\n")
    header = json.loads(head)
    assert header["pack"] == store_mod.PACK_VERSION
    assert header["bytes"] == len(body)
    assert header["checksum"] == hashlib.sha256(body).hexdigest()
    store = CellStore(out)
    assert header["runs"] == [r for cell in grid().cells() for _, _, r in store.runs(cell)]
    for cell, rows in run_cells(grid().cells()):
        for seed, key, run_id in store.runs(cell):
            record, data = store.read_record(run_id)
            assert record["key"] == json.loads(json.dumps(key))
            assert data == _old_payload([r for r in rows if r["seed"] == seed])


def test_keys_hashed_once_give_the_run_ids_and_checks_of_the_serialised_key(tmp_path):
    """``runs`` hashes each key once (run id and check share it): the same as serialising it.

    A plain-dict copy of each key takes the path that serialises the key again; both must
    give the same run id and the same verdict on the stored record, and a copy with one value
    changed must be refused (the check still compares the whole key).
    """
    losses = np.full((6, 3), 0.5)
    g = grid(
        agents=["hedge", AgentEntry("noisy-clipped-hedge", {"eta": 0.1})],
        envs=[SHIFT, EnvEntry("DPExperts-Oblivious-v0", {"losses": losses})],
        epsilons=[0.5, float("inf")],
        n_seeds=2,
    )
    out = tmp_path / "out"
    run(g, out)
    store = CellStore(out)
    checked = 0
    for cell in g.cells():
        for _, key, run_id in store.runs(cell):
            plain = json.loads(json.dumps(key))  # the stored JSON form, a plain dict
            assert type(plain) is dict and plain == key
            assert CellStore.run_id(cell, plain) == run_id
            assert store.check(run_id, key) == store.check(run_id, plain)
            assert store.check(run_id, key)[1] == ""
            other = {**plain, "agent_seed": plain["agent_seed"] + 1}
            assert store.check(run_id, other)[1].startswith("belongs to another cell")
            checked += 1
    assert checked == len(g.cells()) * 2


def test_a_hashed_key_cannot_be_edited_into_a_stale_check(tmp_path):
    """``check`` trusts the digest ``runs`` stored on its key, so that key is read-only.

    The mutant: a caller edits a returned key in place (its code fingerprint, a nested
    parameter) and ``check`` compares the stored rows with the digest of the key before the
    edit, serving old rows for another code. Every in-place edit is refused; a copy (``dict``,
    ``copy.deepcopy``, ``pickle``) is a plain dict whose edit ``check`` hashes and refuses.
    """
    import copy
    import pickle

    g = grid(agents=["hedge"], envs=[SHIFT], epsilons=[float("inf")], n_seeds=1)
    out = tmp_path / "out"
    run(g, out)
    store = CellStore(out)
    ((_, key, run_id),) = store.runs(g.cells()[0])
    nested = next(k for k, v in key.items() if isinstance(v, dict) and v)
    edits = [
        lambda k: k.__setitem__("code", "edited"),
        lambda k: k.update(seed=9),
        lambda k: k.pop("code"),
        lambda k: k.setdefault("new", 1),
        lambda k: k.clear(),
        lambda k: k[nested].__setitem__("edited", 1),
        lambda k: k[nested].clear(),
    ]
    for edit in edits:
        with pytest.raises(TypeError, match="read-only"):
            edit(key)
    assert store.check(run_id, key)[1] == ""
    for copied in (dict(key), copy.deepcopy(key), pickle.loads(pickle.dumps(key))):
        assert copied == key and store.check(run_id, copied)[1] == ""
        copied["code"] = "edited"
        assert store.check(run_id, copied)[1].startswith("belongs to another cell")
    deep = copy.deepcopy(key)
    deep[nested]["edited"] = 1
    assert store.check(run_id, deep)[1].startswith("belongs to another cell")


# ----------------------------------------------------------------------------- old folders
def test_run_files_of_earlier_versions_are_read_and_completed(tmp_path, played):
    out = tmp_path / "out"
    before = run(grid(n_seeds=2), out)
    as_run_files(out)  # the folder as an earlier version left it
    played.clear()
    again = run(grid(n_seeds=2), out)
    assert played == []  # every run is read, none played again
    pd.testing.assert_frame_equal(again, before)
    more = run(grid(n_seeds=3), out)  # seed 2 is new: played, into a unit file
    assert sorted({s for _, seeds in played for s in seeds}) == [2]
    assert len(packs(out)) == 1 and len(list((out / "cells").glob("*.json"))) == 4
    pd.testing.assert_frame_equal(more[more["seed"] < 2].reset_index(drop=True), before)
    pd.testing.assert_frame_equal(load_results(out), more)


def test_a_run_file_whose_key_differs_is_never_reused(tmp_path, played):
    out = tmp_path / "out"
    run(grid(), out)
    victim = as_run_files(out)[0]
    head, _, data = victim.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["key"]["agent_seed"] += 1  # a file under the right name for another run
    victim.write_bytes(json.dumps(header).encode() + b"\n" + data)
    played.clear()
    log = io.StringIO()
    run(grid(), out, log=log)
    assert len(played) == 1
    assert "belongs to another cell or code version" in log.getvalue()
    assert victim.name in log.getvalue()


def test_a_unit_file_whose_key_differs_is_never_reused(tmp_path, played):
    out = tmp_path / "out"
    run(grid(), out)
    (pack,) = packs(out)
    head, _, body = pack.read_bytes().partition(b"\n")
    lines = body.split(b"\n")
    record = json.loads(lines[0])
    record["key"]["env_seed"] += 1  # a consistent file (its checksums redone), another key
    lines[0] = json.dumps(record, separators=(",", ":")).encode()
    body = b"\n".join(lines)
    header = json.loads(head)
    header.update(bytes=len(body), checksum=hashlib.sha256(body).hexdigest())
    pack.write_bytes(json.dumps(header).encode() + b"\n" + body)
    played.clear()
    log = io.StringIO()
    run(grid(), out, log=log)
    assert played == [("uniform", (0,))]  # that run alone
    assert "belongs to another cell or code version" in log.getvalue()


# ----------------------------------------------------------------------------- damage
def _resized(raw: bytes) -> bytes:
    """A cut unit file whose header's size was made to match (its checksum was not)."""
    head, _, body = raw.partition(b"\n")
    header = json.loads(head)
    header["bytes"] = len(body)
    return json.dumps(header).encode() + b"\n" + body


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: raw[:-40], "truncated or extended"),
        (lambda raw: _resized(raw[:-40]), "checksum mismatch"),
        (lambda raw: raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:], "checksum mismatch"),
        (lambda raw: raw.partition(b"\n")[0], "truncated after its header"),
        (lambda raw: b"{" + raw, "header does not parse"),
    ],
    ids=["partial", "edited-size", "flipped-byte", "header-only", "not-a-pack"],
)
def test_a_damaged_unit_file_is_refused_by_name_and_played_again(tmp_path, played, damage, message):
    out = tmp_path / "out"
    frame = run(grid(), out)
    (pack,) = packs(out)
    pack.write_bytes(damage(pack.read_bytes()))
    with pytest.raises(ValueError, match=rf"4 of 4 runs.*{pack.name} is damaged"):
        load_results(out)
    with pytest.raises(ValueError, match=message):
        load_results(out)
    played.clear()
    log = io.StringIO()
    again = run(grid(), out, log=log)
    assert sorted(played) == [("hedge", (0, 1)), ("uniform", (0, 1))]
    assert pack.name in log.getvalue() and message in log.getvalue()
    pd.testing.assert_frame_equal(again, frame)
    pd.testing.assert_frame_equal(load_results(out), frame)


def test_a_symlinked_unit_file_is_not_read_and_is_replaced(tmp_path, played):
    out = tmp_path / "out"
    run(grid(), out)
    (pack,) = packs(out)
    outside = tmp_path / "outside.pack"
    outside.write_bytes(pack.read_bytes())  # valid content, kept outside and linked in
    pack.unlink()
    pack.symlink_to(outside)
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        load_results(out)
    played.clear()
    run(grid(), out)
    assert len(played) == 2  # not trusted: played again
    assert not pack.is_symlink() and pack.is_file()  # the rename replaced the link
    assert outside.read_bytes() == pack.read_bytes()  # untouched (and the same rows)


def test_an_interrupted_local_grid_keeps_its_finished_units(tmp_path, monkeypatch):
    g = grid(n_seeds=3, seeds_per_cell=1)
    real = backends_mod.run_cells
    seen = []

    def dies_on_third(cells):
        seen.append(cells[0].seed_indices)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return real(cells)

    monkeypatch.setattr(backends_mod, "run_cells", dies_on_third)
    with pytest.raises(KeyboardInterrupt):
        run(g, tmp_path)
    assert len(packs(tmp_path)) == 2  # the two finished units; the one in flight is lost
    seen.clear()
    monkeypatch.setattr(backends_mod, "run_cells", lambda cells: seen.append(1) or real(cells))
    frame = run(g, tmp_path)
    assert len(seen) == 1 and len(packs(tmp_path)) == 3
    pd.testing.assert_frame_equal(frame, run(g, tmp_path / "fresh"))


def test_the_streamed_table_reads_many_unit_files_like_the_whole_one(tmp_path):
    g = grid(n_seeds=5, seeds_per_cell=1, agents=["uniform", "hedge", "follow-the-leader"])
    whole = run(g, tmp_path / "all")
    final = run(g, tmp_path / "final", rows="final")
    assert len(packs(tmp_path / "final")) == 5
    assert (tmp_path / "all" / "results.csv").read_bytes() == (
        tmp_path / "final" / "results.csv"
    ).read_bytes()
    assert len(final) == 15 and set(final["round"]) == {whole["round"].max()}


@pytest.mark.slow
def test_a_unit_file_whose_header_spans_many_reads_is_indexed(tmp_path, played):
    g = Grid(
        ["uniform"],
        [EnvEntry("DPExperts-Shift-v0", {"n_experts": 2, "horizon": 4})],
        n_seeds=2000,
        seeds_per_cell=2000,
        n_record=2,
    )
    frame = run(g, tmp_path, report=False)
    (pack,) = packs(tmp_path)
    assert len(pack.read_bytes().partition(b"\n")[0]) > 1 << 16  # beyond one 64 kB read
    played.clear()
    pd.testing.assert_frame_equal(run(g, tmp_path, report=False), frame)
    assert played == []
