"""A results folder is a trust boundary, its keys are complete, and `dp-experts verify` says so.

Each test plants what someone who can put files into a results folder could plant (a symlinked
``.lock``, figure, run file or sub-folder, a hard-linked lock, a traversing run id, an edited
manifest) and checks that nothing outside the folder is read or written. Then: a change of the
seed derivation (``evaluation/grid.py``) or of a claim's experiment code re-runs every affected
cell, claims.csv never mixes verdicts of different code, and ``verify`` reports stale, missing,
foreign and damaged runs without writing.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from _store_files import as_run_files, spy_on_played

from dp_experts_env import cli
from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
from dp_experts_env.evaluation import fingerprints as fp_mod
from dp_experts_env.evaluation import grid as grid_mod
from dp_experts_env.evaluation import manifest as manifest_mod
from dp_experts_env.evaluation import store as store_mod
from dp_experts_env.evaluation import sweep as sweep_mod
from dp_experts_env.evaluation.claims import Claim, Point, Sweep, mean_with_ci
from dp_experts_env.evaluation.reproduce import claim_code_version, run_claims
from dp_experts_env.evaluation.store import (
    UnsafeResultsFolder,
    check_run_id,
    folder_lock,
    load_results,
    read_manifest,
)
from dp_experts_env.evaluation.verify import verify_folder

SHIFT = EnvEntry("DPExperts-Shift-v0", {"n_experts": 3, "horizon": 30, "n_shifts": 1})
SECRET = "do not touch\n"


def grid(**kw) -> Grid:
    defaults = {"agents": ["uniform", "hedge"], "envs": [SHIFT], "n_seeds": 2, "n_record": 4}
    return Grid(**{**defaults, **kw})


def run(g: Grid, out: Path, **kw) -> pd.DataFrame:
    return run_grid(g, out, backend="serial", progress=False, **kw)


@pytest.fixture
def outside(tmp_path):
    """A file of the user's outside the results folder (their ~/.bashrc)."""
    path = tmp_path / "home" / ".bashrc"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.fixture
def played(monkeypatch):
    return spy_on_played(monkeypatch)


def edit_module(monkeypatch, module: str) -> None:
    """Pretend ``module``'s source was edited on disk (the code hashes see the new source)."""
    real = fp_mod._module_source

    @functools.cache
    def edited(name):
        origin, source = real(name)
        return origin, source + (b"\n# edited\n" if name == module else b"")

    monkeypatch.setattr(fp_mod, "_module_source", edited)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every entry below ``folder``, links not followed."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            info = os.lstat(Path(root) / name)
            out[str(Path(root, name).relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return out


# ----------------------------------------------------------------------------- the lock
def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, outside, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").symlink_to(outside)
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        run(grid(), out)
    assert outside.read_text() == SECRET
    args = ["run", "uniform", "--seeds", "1", "--out", str(out), "--no-progress"]
    assert cli.main(args) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert outside.read_text() == SECRET
    assert not (out / "cells").exists()  # refused before anything was written


def test_a_hard_linked_lock_is_refused(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    os.link(outside, out / ".lock")
    with pytest.raises(UnsafeResultsFolder, match="hard link"):
        run(grid(), out)
    assert outside.read_text() == SECRET


def test_the_lock_is_never_truncated_and_names_its_holder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").write_text("x" * 64)
    with folder_lock(out):
        text = (out / ".lock").read_text()
        assert text.startswith(str(os.getpid())) and len(text) == 64  # written over, not cut
    (out / ".lock").unlink()
    run(grid(), out)
    assert (out / ".lock").is_file()


# ----------------------------------------------------------------------------- figures
def test_a_symlinked_figure_is_replaced_not_followed(tmp_path, outside):
    out = tmp_path / "out"
    run(grid(), out, figures=True)
    figure = sorted((out / "figures").glob("*.png"))[0]
    figure.unlink()
    figure.symlink_to(outside)
    assert cli.main(["plot", str(out)]) == 0
    assert outside.read_text() == SECRET
    assert not figure.is_symlink() and figure.read_bytes().startswith(b"\x89PNG")


def test_a_symlinked_figures_folder_is_refused(tmp_path, outside, capsys):
    out = tmp_path / "out"
    run(grid(), out)
    (out / "figures").symlink_to(outside.parent, target_is_directory=True)
    assert cli.main(["plot", str(out)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]


# ----------------------------------------------------------------------------- run files
def _rewrite_manifest(out: Path, runs: list[str]) -> None:
    """What an attacker can do: a manifest with a valid checksum listing ``runs``."""
    data = json.loads((out / "manifest.json").read_text())
    data["runs"] = runs
    data["checksum"] = manifest_mod.manifest_checksum(data["grid"], runs)
    (out / "manifest.json").write_text(json.dumps(data))


@pytest.mark.parametrize(
    "run_id", ["../../home/evil", "/etc/passwd", "..", "a/b", ".hidden", "", "x\x00y", 7]
)
def test_run_ids_are_plain_names(run_id):
    with pytest.raises(UnsafeResultsFolder, match="not a plain file name"):
        check_run_id(run_id)


def test_a_traversing_run_id_is_refused_before_any_path_is_built(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    run(grid(), out)
    as_run_files(out)
    crafted = tmp_path / "OUTSIDE" / "evil.json"
    crafted.parent.mkdir()
    crafted.write_text((next((out / "cells").glob("*.json"))).read_text())
    _rewrite_manifest(out, ["../../OUTSIDE/evil"])
    opened: list[str] = []
    real_read = store_mod.read_plain
    monkeypatch.setattr(store_mod, "read_plain", lambda p: opened.append(str(p)) or real_read(p))
    with pytest.raises(UnsafeResultsFolder, match="not a plain file name"):
        load_results(out)
    assert cli.main(["plot", str(out)]) == 2
    assert "not a plain file name" in capsys.readouterr().err
    assert not any("OUTSIDE" in p for p in opened)
    assert not (out / "figures").exists()


def test_a_symlinked_run_file_is_not_read_and_is_replaced(tmp_path, outside, played):
    out = tmp_path / "out"
    run(grid(), out)
    as_run_files(out)  # one file per run, as earlier versions wrote them
    victim = sorted((out / "cells").glob("*.json"))[0]
    # a valid run file (it would pass every check) kept outside and linked in
    planted = victim.read_text()
    outside.write_text(planted)
    victim.unlink()
    victim.symlink_to(outside)
    played.clear()
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        load_results(out)
    run(grid(), out)
    assert len(played) == 1  # the linked run is not trusted: played again
    assert not os.path.lexists(victim)  # the link is gone; the run is in a unit file now
    assert load_results(out)["seed"].tolist().count(0) > 0
    assert outside.read_text() == planted  # the outside file is untouched


def test_a_symlinked_cells_folder_is_refused(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    (out / "cells").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        run(grid(), out)
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]


def test_an_edited_manifest_fails_its_checksum(tmp_path, capsys):
    out = tmp_path / "out"
    run(grid(), out)
    data = json.loads((out / "manifest.json").read_text())
    data["runs"] = data["runs"][:1]  # someone dropped runs from the table
    (out / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="checksum"):
        read_manifest(out)
    assert cli.main(["plot", str(out)]) == 2
    assert "checksum" in capsys.readouterr().err


# ----------------------------------------------------------------------------- read-only folders
def test_a_no_op_rerun_does_not_touch_the_lock_and_a_read_only_folder_replots(
    tmp_path, monkeypatch, played
):
    out = tmp_path / "out"
    first = run(grid(), out)
    (out / ".lock").unlink()
    played.clear()

    def no_lock(folder):
        raise AssertionError("a no-op rerun took the lock")

    monkeypatch.setattr(sweep_mod, "folder_lock", no_lock)
    before = snapshot(out)
    os.chmod(out, 0o555)
    try:
        again = run(grid(), out, report=False)  # (with a report: summary.csv if writable)
        assert cli.main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 0
    finally:
        os.chmod(out, 0o755)
    assert played == []
    assert not (out / ".lock").exists()
    assert snapshot(out) == before  # nothing written
    pd.testing.assert_frame_equal(first, again)
    assert len(list((tmp_path / "figs").glob("round_*.png"))) == 1


# ----------------------------------------------------------------------------- cache keys
def test_a_changed_seed_derivation_reruns_every_cell(tmp_path, played, monkeypatch):
    out = tmp_path / "out"
    run(grid(), out)
    played.clear()
    edit_module(monkeypatch, "dp_experts_env.evaluation.grid")
    run(grid(), out)
    assert sorted(played) == [("hedge", (0, 1)), ("uniform", (0, 1))]


def test_derived_seeds_are_part_of_the_key(tmp_path, played, monkeypatch):
    out = tmp_path / "out"
    run(grid(), out)
    fresh = run(grid(base_seed=1), tmp_path / "fresh")
    played.clear()
    real = grid_mod.derive_seed
    monkeypatch.setattr(grid_mod, "derive_seed", lambda base, *key: real(base + 1, *key))
    rerun = run(grid(), out)
    assert sorted(played) == [("hedge", (0, 1)), ("uniform", (0, 1))]
    # the rows are those of the new seeds (base seed + 1), not the stored ones
    pd.testing.assert_frame_equal(rerun, fresh)


def _custom_claim(calls: list[int], name: str = "custom-switches") -> Claim:
    def count(sweep, points, seeds):
        calls.append(len(points))
        return pd.DataFrame({"x": [p.x for p in points], "seed": 0, "v": 1.0 + len(calls)})

    pts = (Point(1.0, {"horizon": 10}),)
    sweep = Sweep("s", "hedge", "DPExperts-Shift-v0", pts, metric="v", custom=count)
    return Claim(
        name, "p", "s", "st", "q", 1.0, 5.0, "at_most", (sweep,),
        lambda rows: mean_with_ci(rows["s"], "v"),
        no_control="a cache test: the verdict is not what is tested",
    )  # fmt: skip


def test_a_changed_claim_experiment_reruns_it_and_rows_carry_the_code(tmp_path, monkeypatch):
    calls: list[int] = []
    claim = _custom_claim(calls)
    first = run_claims([claim], tmp_path)
    run_claims([claim], tmp_path)
    assert calls == [1]
    assert first[0]["code"] == claim_code_version(claim)
    edit_module(monkeypatch, "dp_experts_env.evaluation.paper_claims")
    second = run_claims([claim], tmp_path)
    assert calls == [1, 1]  # paper_claims.py changed: the custom experiment ran again
    assert second[0]["code"] != first[0]["code"] and second[0]["measured"] == 3.0
    with open(tmp_path / "claims.csv") as f:
        assert [r["code"] for r in csv.DictReader(f)] == [second[0]["code"]]


def test_claims_csv_never_mixes_verdicts_of_different_code(tmp_path, monkeypatch, capsys):
    import io

    from dp_experts_env.evaluation import paper_claims

    calls: list[int] = []
    a, b = _custom_claim(calls, "claim-a"), _custom_claim(calls, "claim-b")
    b = dataclasses.replace(b, sweeps=(dataclasses.replace(b.sweeps[0], agent="limited-updates"),))
    registry = [a, b]
    monkeypatch.setattr(paper_claims, "get_claims", lambda names=None, quick=False: registry)
    run_claims([a, b], tmp_path)
    run_claims([b], tmp_path)  # same code: a's verdict is current and kept
    with open(tmp_path / "claims.csv") as f:
        assert [r["claim"] for r in csv.DictReader(f)] == ["claim-a", "claim-b"]
    edit_module(monkeypatch, "agents.full_info")  # hedge (claim a) changed, b's learner not
    log = io.StringIO()
    run_claims([b], tmp_path, log=log)
    with open(tmp_path / "claims.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["claim"] for r in rows] == ["claim-b"]
    assert rows[0]["code"] == claim_code_version(b)
    assert "dropped the earlier verdicts of claim-a" in log.getvalue()


# ----------------------------------------------------------------------------- verify
def test_verify_says_current_then_stale_without_writing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    run(grid(), out)
    assert cli.main(["verify", str(out)]) == 0
    assert "4 current, 0 stale" in capsys.readouterr().out
    before = snapshot(out)
    edit_module(monkeypatch, "dp_experts_env.evaluation.grid")
    report = verify_folder(out)
    assert report.current == 0 and len(report.stale) == 4 and not report.ok
    assert all("code.env" in reason for _, reason in report.stale)
    assert cli.main(["verify", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "0 current, 4 stale" in printed and "NOT current" in printed
    assert snapshot(out) == before


def test_verify_lists_missing_foreign_damaged_and_manifest_problems(tmp_path):
    out = tmp_path / "out"
    run(grid(), out)
    as_run_files(out)  # one file per run, as earlier versions wrote them
    runs = read_manifest(out)["runs"]
    cells = out / "cells"
    (cells / f"{runs[0]}.json").unlink()
    text = (cells / f"{runs[1]}.json").read_text()
    (cells / f"{runs[1]}.json").write_text(text[:50])
    # a run of another grid, copied in and listed under a name that is not its key's
    other = tmp_path / "other"
    run(grid(agents=["follow-the-leader"]), other)
    stray = as_run_files(other)[0]
    (cells / "hedge-np-s0-0123456789abcdef0123.json").write_text(stray.read_text())
    (cells / stray.name).write_text(stray.read_text())
    _rewrite_manifest(out, [*runs[:3], "hedge-np-s0-0123456789abcdef0123", stray.stem])
    (out / "grid.json").write_text("{}")
    report = verify_folder(out)
    assert report.current == 1
    assert [r for r, _ in report.missing] == [runs[0], runs[3]]
    assert [r for r, _ in report.damaged] == [runs[1]]
    assert sorted(r for r, _ in report.foreign) == sorted(
        ["hedge-np-s0-0123456789abcdef0123", stray.stem]
    )
    assert any("grid.json differs" in p for p in report.problems)


def test_verify_a_reproduce_folder_checks_runs_and_claims(tmp_path, monkeypatch, capsys):
    from dp_experts_env.evaluation import paper_claims

    calls: list[int] = []
    claim = _custom_claim(calls)
    pts = (Point(30.0, {"horizon": 30, "n_experts": 3}),)
    sweep = Sweep("g", "hedge", "DPExperts-Shift-v0", pts, seeds=2)
    claim = dataclasses.replace(claim, sweeps=(*claim.sweeps, sweep))
    monkeypatch.setattr(paper_claims, "get_claims", lambda names=None, quick=False: [claim])
    run_claims([claim], tmp_path, backend="serial")
    assert cli.main(["verify", str(tmp_path)]) == 0
    capsys.readouterr()
    edit_module(monkeypatch, "dp_experts_env.evaluation.paper_claims")
    assert cli.main(["verify", str(tmp_path)]) == 1
    printed = capsys.readouterr().out
    assert "custom-switches: code changed" in printed


def test_ctrl_c_before_the_sweep_says_so(monkeypatch, capsys, tmp_path):
    def interrupt(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Grid, "validate", interrupt)
    assert cli.main(["run", "uniform", "--out", str(tmp_path / "o"), "--no-progress"]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "dp-experts run: interrupted before anything ran; nothing was written"


def test_reproduce_replaces_a_symlinked_claim_figure_and_refuses_a_symlinked_folder(
    tmp_path, outside
):
    claim = _custom_claim([])
    out = tmp_path / "rep"
    run_claims([claim], out)
    figure = out / "figures" / f"{claim.name}.png"
    assert figure.read_bytes().startswith(b"\x89PNG")
    figure.unlink()
    figure.symlink_to(outside)
    run_claims([claim], out)
    assert outside.read_text() == SECRET
    assert not figure.is_symlink() and figure.read_bytes().startswith(b"\x89PNG")
    other = tmp_path / "rep2"
    other.mkdir()
    (other / "figures").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(UnsafeResultsFolder):
        run_claims([claim], other)
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]


def test_read_plain_reads_every_byte_on_the_descriptor(tmp_path, monkeypatch):
    """read_plain reads the whole file with os.read (no buffered file object): empty, small,
    larger than one read, and a file that grew after its size was taken (a stale fstat size);
    a FIFO is refused without hanging, a link is refused, and the descriptor is closed."""
    from dp_experts_env.evaluation import safe_files

    sizes = {"empty": b"", "small": b"x\n" * 10, "big": os.urandom(300_000)}
    for name, data in sizes.items():
        (tmp_path / name).write_bytes(data)
        assert safe_files.read_plain(tmp_path / name) == data, name
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:  # the size before the file grew
        info = list(real_fstat(fd))
        info[6] = 5
        return os.stat_result(info)

    monkeypatch.setattr(safe_files.os, "fstat", stale)
    assert safe_files.read_plain(tmp_path / "big") == sizes["big"]
    monkeypatch.setattr(safe_files.os, "fstat", real_fstat)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafeResultsFolder, match="not a regular file"):
        safe_files.read_plain(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "small")
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        safe_files.read_plain(tmp_path / "link")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        safe_files.read_plain(tmp_path / "small")
        with pytest.raises(UnsafeResultsFolder):
            safe_files.read_plain(tmp_path / "fifo")
    assert len(os.listdir("/proc/self/fd")) == before
