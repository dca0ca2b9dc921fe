"""Issue 39, bad input: deep JSON, broken plug-ins, a full disk, an edited manifest.

Each planted case is caught by name and nothing stale is served: a results folder with a JSON
line nested 200,000 deep (in a unit file's header, in a run's header inside a unit file whose
checksum was recomputed, in its rows, in the manifest) is reported as damaged by verify and
plot, and compare plays those runs again to the rows a fresh folder gets; a plug-in module that
fails to import is one line naming it and the exception; ENOSPC names the file; a manifest
edited with its checksum recomputed (a run dropped, swapped for another grid's, duplicated) is
named by plot and verify. The controls: an untouched folder and a permuted run list pass.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from _store_files import grid, run, spy_on_played

import agents.registry as agent_registry
from dp_experts_env import cli, plugins
from dp_experts_env.evaluation import manifest as manifest_mod
from dp_experts_env.evaluation import store as store_mod
from dp_experts_env.evaluation import sweep as sweep_mod
from dp_experts_env.evaluation.store import load_results
from dp_experts_env.evaluation.sweep import SweepWriteError
from dp_experts_env.evaluation.verify import verify_folder

DEEP = b"[" * 200_000 + b"]" * 200_000


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["agent", "seed", "round"]).reset_index(drop=True)


def _pack(out: Path) -> Path:
    return sorted((out / "cells").glob("unit-*.pack"))[0]


def _plant_pack_header(out: Path) -> None:
    path = _pack(out)
    path.write_bytes(DEEP + b"\n" + path.read_bytes().partition(b"\n")[2])


def _plant_record(out: Path, which: int) -> None:
    """Line ``which`` of the body (0: a run's header, 1: its rows) made deep; checksum fixed."""
    path = _pack(out)
    head, _, body = path.read_bytes().partition(b"\n")
    lines = body.split(b"\n")
    lines[which] = DEEP
    body = b"\n".join(lines)
    header = json.loads(head)
    header.update(bytes=len(body), checksum=hashlib.sha256(body).hexdigest())
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)


def _plant_manifest(out: Path) -> None:
    (out / "manifest.json").write_bytes(DEEP)


@pytest.mark.parametrize(
    "plant, replayed",
    [
        (_plant_pack_header, True),
        (lambda out: _plant_record(out, 0), True),
        (lambda out: _plant_record(out, 1), True),
        (_plant_manifest, False),  # the runs are intact: reused, the manifest rewritten
    ],
    ids=["pack-header", "run-header", "run-rows", "manifest"],
)
def test_deep_json_is_named_and_the_unit_replayed(tmp_path, monkeypatch, plant, replayed):
    played = spy_on_played(monkeypatch)
    g = grid()
    out = tmp_path / "out"
    fresh = canonical(run(g, tmp_path / "fresh"))
    run(g, out)
    plant(out)
    report = verify_folder(out)  # no RecursionError
    assert not report.ok
    with pytest.raises(ValueError, match="damaged|nested too deeply|missing"):
        load_results(out)
    assert cli.main(["plot", str(out)]) == 2  # one line, no traceback
    played.clear()
    pd.testing.assert_frame_equal(canonical(run(g, out)), fresh)
    assert bool(played) == replayed  # the damaged unit was played again ...
    assert verify_folder(out).ok  # ... and the folder is current
    pd.testing.assert_frame_equal(canonical(load_results(out)), fresh)


def test_loads_turns_recursion_into_a_named_value_error():
    with pytest.raises(store_mod.TooDeep, match="nested too deeply"):
        store_mod.loads(DEEP)
    assert store_mod.loads(b"[[1]]") == [[1]]  # control


# ----------------------------------------------------------------------------- plug-ins
@pytest.mark.parametrize(
    "source, named",
    [
        ("def broken(:\n", "SyntaxError"),
        ("raise RuntimeError('no licence server')\n", "RuntimeError: no licence server"),
        ("import no_such_dependency_xyz\n", "ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_it(tmp_path, monkeypatch, capsys, source, named):
    module = f"broken39_{abs(hash(source)) % 10**8}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENV_VAR, module)
    monkeypatch.setattr(agent_registry, "_SCANNED", False)
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"dp-experts list: error: {plugins.ENV_VAR}=" in err
    assert module in err and named in err
    sys.modules.pop(module, None)


# ----------------------------------------------------------------------------- full disk
def test_a_full_disk_names_the_file(tmp_path, monkeypatch):
    run(grid(), tmp_path)
    next((tmp_path / "cells").glob("unit-*.pack")).unlink()  # something to do

    def full_disk(*args, **kw):
        raise OSError(28, "No space left on device")

    # Every csv writer a sweep may use fails: csv_text.write_frame (results.csv, streamed by
    # the store or whole by the sweep) and pandas' (the frames it hands back, summary.csv).
    monkeypatch.setattr(store_mod, "write_frame", full_disk)
    monkeypatch.setattr(sweep_mod, "write_frame", full_disk)
    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    with pytest.raises(SweepWriteError, match=r"cannot write \S*results.csv \(No space left"):
        run(grid(), tmp_path)


# ----------------------------------------------------------------------------- manifest
def _rewrite_manifest(out: Path, runs: list[str]) -> None:
    """What anyone can do: a manifest with a recomputed checksum listing ``runs``."""
    data = json.loads((out / "manifest.json").read_text())
    data["runs"] = runs
    data["checksum"] = manifest_mod.manifest_checksum(data["grid"], runs)
    (out / "manifest.json").write_text(json.dumps(data))


def test_an_edited_manifest_with_its_checksum_recomputed_is_named(tmp_path, capsys):
    out = tmp_path / "out"
    run(grid(n_record=5), out)
    other = json.loads((out / "manifest.json").read_text())["runs"]  # another grid's runs
    run(grid(), out)
    runs = json.loads((out / "manifest.json").read_text())["runs"]
    fresh = load_results(out)
    # Control: the same runs in another order are this grid's runs; nothing is named.
    _rewrite_manifest(out, runs[::-1])
    assert verify_folder(out).ok
    assert len(load_results(out)) == len(fresh)
    cases = {
        "dropped": (runs[:-1], "lists 3 runs for the 4 cells and seeds"),
        "swapped": ([other[0], *runs[1:]], "belongs to no cell and seed of its grid"),
        "duplicated": ([runs[0], runs[0], *runs[2:]], "two runs of one cell and seed"),
    }
    for listed, named in cases.values():
        _rewrite_manifest(out, listed)
        with pytest.raises(ValueError, match=named):
            load_results(out)
        assert cli.main(["plot", str(out)]) == 2
        assert named in capsys.readouterr().err
        report = verify_folder(out)
        assert any(named in p for p in report.problems), report.problems
    # compare rewrites it: the grid's own runs, reused.
    _rewrite_manifest(out, runs)
    assert verify_folder(out).ok


def test_the_attack_table_names_a_deep_or_foreign_report(tmp_path, capsys):
    from dp_experts_env.attack import table

    (tmp_path / "deep.json").write_bytes(DEEP)
    (tmp_path / "list.json").write_text("[1, 2]")
    for name, named in (("deep.json", "nested too deeply"), ("list.json", "not a JSON object")):
        assert table.main([str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert name in err and named in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the other readers
@pytest.mark.parametrize("command", ["run", "audit", "bench"])
def test_a_deep_set_value_is_one_named_line(tmp_path, capsys, command):
    """``--set k=<200,000-deep JSON>`` is refused before anything runs, naming the option."""
    out = [] if command == "audit" else ["--out", str(tmp_path / "o")]
    learner = "noisy-clipped-hedge" if command == "audit" else "hedge"
    rc = cli.main([command, learner, "--set", "eta=" + DEEP.decode(), *out])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "--set eta=...: the value is nested too deeply" in err
    assert not (tmp_path / "o").exists()


def test_shallow_set_values_still_parse():
    from dp_experts_env.assignments import parse_assignments

    assert parse_assignments(["a=[[1]]", "b=text", "c= 2"], "--set") == {
        "a": [[1]],
        "b": "text",
        "c": 2,
    }


def test_a_deep_reference_set_is_refused_by_name(tmp_path):
    from dp_experts_env.bench.leaderboard import load_reference_set

    path = tmp_path / "reference-set.json"
    path.write_bytes(DEEP)
    with pytest.raises(ValueError, match="cannot be read: nested too deeply"):
        load_reference_set(path)
