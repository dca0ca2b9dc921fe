"""Issue 39: ``compare`` on a complete read-only folder prints the table and writes nothing.

The folder is made read-only with ``chmod`` and, since the tests may run as root (whom
permissions do not stop), by refusing every temporary file and directory made inside it with
``EACCES``, as a read-only mount would. The controls: a writable folder gets its report
rewritten; an incomplete read-only folder is an error (exit 1), with nothing written either.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

import pytest

from dp_experts_env.cli import main

GRID = """
seeds = 2
epsilons = [1.0]

[[env]]
id = "DPExperts-Shift-v0"
n_experts = 3
horizon = 40

[[agent]]
name = "hedge"

[[agent]]
name = "uniform"
"""


def _snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        body = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        found[str(path.relative_to(folder))] = (info.st_mode, info.st_mtime_ns, body)
    return found


@pytest.fixture
def read_only(monkeypatch):
    """Make a folder read-only (chmod, and EACCES for files and folders made inside it)."""
    frozen: list[Path] = []
    real_mkstemp, real_mkdir, real_open = tempfile.mkstemp, os.mkdir, os.open

    def inside(path) -> bool:
        return any(Path(os.path.abspath(path)).is_relative_to(f) for f in frozen)

    def mkstemp(*args, dir=None, **kw):
        if dir is not None and inside(dir):
            raise PermissionError(errno.EACCES, "Permission denied", str(dir))
        return real_mkstemp(*args, dir=dir, **kw)

    def mkdir(path, *args, **kw):
        if inside(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *args, **kw)

    def open_(path, flags, *args, **kw):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)

    def freeze(folder: Path) -> None:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o555)
        frozen.append(folder.resolve())

    yield freeze
    for folder in frozen:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o755)


def test_compare_on_a_complete_read_only_folder_prints_and_writes_nothing(
    tmp_path, capsys, read_only
):
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "out"
    args = ["compare", str(tmp_path / "g.toml"), "--out", str(out), "--backend", "serial"]
    assert main([*args, "--no-figures"]) == 0
    first = capsys.readouterr().out
    before = _snapshot(out)
    read_only(out)
    assert main([*args, "--no-figures"]) == 0
    printed = capsys.readouterr()
    assert "is read-only: nothing written" in printed.out, printed.err
    table = [line for line in first.splitlines() if "hedge" in line]
    assert table and all(line in printed.out for line in table)  # the same table
    assert _snapshot(out) == {k: (os.lstat(out / k).st_mode, *v[1:]) for k, v in before.items()}
    # With figures (the default) too: nothing written, exit 0.
    assert main(args) == 0
    assert "is read-only: nothing written" in capsys.readouterr().out
    assert set(_snapshot(out)) == set(before)


def test_controls_writable_rewrites_and_incomplete_read_only_fails(tmp_path, capsys, read_only):
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "out"
    args = ["compare", str(tmp_path / "g.toml"), "--out", str(out), "--backend", "serial",
            "--no-figures"]  # fmt: skip
    assert main(args) == 0
    (out / "summary.csv").unlink()
    assert main(args) == 0  # writable: the report is written again
    assert (out / "summary.csv").is_file()
    capsys.readouterr()
    (out / "results.csv").unlink()  # incomplete: it would have to be written
    before = _snapshot(out)
    read_only(out)
    assert main(args) == 1
    assert "cannot use results folder" in capsys.readouterr().err
    assert set(_snapshot(out)) == set(before)
