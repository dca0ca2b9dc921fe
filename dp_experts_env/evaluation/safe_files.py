"""The results folder's trust boundary: files read without following links, atomic writes, the lock.

A results folder may come from someone else, so nothing in it may make a sweep or a plot read or
write outside it (docs/grid.md, "The trust boundary").
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "ResultsFolderBusy",
    "SweepError",
    "TooDeep",
    "UnsafeResultsFolder",
    "check_run_id",
    "folder_lock",
    "loads",
    "plain_dir",
    "read_first_line",
    "read_plain",
    "write_atomic",
]


class SweepError(RuntimeError):
    """A sweep could not proceed for a reason outside the grid (folder busy, workers died)."""


class ResultsFolderBusy(SweepError):
    """Another process holds the results folder's lock."""


class UnsafeResultsFolder(ValueError):
    """A results folder holds a file that could make us read or write outside it."""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows, where symlinks need privileges
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a planted FIFO must not hang the open
#: What :meth:`CellStore.run_id` produces: a readable prefix of letters, digits and ``_.+-``
#: (``e1e+06``), no leading dot, no separator, at most 200 characters.
_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def check_run_id(run_id: Any) -> str:
    """Return ``run_id`` if it is a plain file stem (no separator, no ``..``).

    Raises:
        UnsafeResultsFolder: a ValueError, for any other run id (an altered manifest).
    """
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UnsafeResultsFolder(
            f"run id {run_id!r} is not a plain file name (letters, digits and _.+- only, no "
            "'..'); the manifest was altered: run compare again into a fresh folder"
        )
    return run_id


def plain_dir(path: str | Path, *, create: bool = True) -> Path:
    """``path`` as a real folder (created if missing); UnsafeResultsFolder for a symlink."""
    if not isinstance(path, Path):  # (called once per run read: a Path is not built again)
        path = Path(path)
    if create:
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if create:
            raise
        return path
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeResultsFolder(
            f"{path} is {'a symbolic link' if stat.S_ISLNK(info.st_mode) else 'not a folder'}; "
            "a results folder's sub-folders must be plain folders (remove it, or use another "
            "folder)"
        )
    return path


def read_plain(path: str | Path) -> bytes:
    """The bytes of a regular file, never following a symbolic link at ``path``.

    Raises:
        FileNotFoundError: no file there.
        UnsafeResultsFolder: a symbolic link, a FIFO, a device or a folder.
    """
    # The path is made a Path for the messages only (read once per stored run: not built twice).
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeResultsFolder(
                f"{Path(path)} is a symbolic link; files of a results folder are never followed "
                "out of it (remove the link)"
            ) from err
        raise
    # Read on the descriptor itself (no buffered file object: half the CPU of a small run file).
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeResultsFolder(f"{Path(path)} is not a regular file")
        chunks = [os.read(fd, info.st_size + 1)]  # the whole file, unless it grew meanwhile
        while chunks[-1]:  # to the end, as a buffered read() goes
            chunks.append(os.read(fd, max(info.st_size, 1 << 16)))
        return chunks[0] if len(chunks) == 2 else b"".join(chunks)
    finally:
        os.close(fd)


def _umask() -> int:
    # os.umask can only be read by setting it; restore it at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(
    path: str | Path, writer: Callable[[Any], None], *, text: bool = True, durable: bool = True
) -> Path:
    """Write a file via a temporary file in the same folder and an atomic rename.

    Args:
        path: the destination.
        writer: called with the open temporary file.
        text: open in text mode (else binary).
        durable: ``fsync`` before the rename (run files skip it: a torn one fails its
            checksum and is played again).

    A full disk or a kill leaves the previous file (or none), never a truncated one; the file
    gets an ordinary ``open``'s mode (0666 minus the umask).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w" if text else "wb", **({"newline": ""} if text else {})) as fh:
            writer(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(path)  # a full disk names the file it was writing (ENOSPC)
        raise
    return path


def read_first_line(path: str | Path) -> bytes:
    """The first line of a regular file (never following a link), read in chunks."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise UnsafeResultsFolder(f"{path} is not a regular file")
        chunks: list[bytes] = []
        while not chunks or b"\n" not in chunks[-1]:
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).partition(b"\n")[0]


class TooDeep(ValueError):
    """A JSON text nested deeper than the parser's recursion limit (a planted line)."""


def loads(raw: str | bytes) -> Any:
    """``json.loads`` for files of a results folder: deep nesting is a ValueError, not a crash.

    Raises:
        TooDeep: a ValueError, so the file is reported as damaged like any other.
    """
    try:
        return json.loads(raw)
    except RecursionError:
        raise TooDeep(
            "nested too deeply to parse (more levels than Python's recursion limit)"
        ) from None


@contextlib.contextmanager
def folder_lock(folder: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on a results folder (``.lock``) for the duration of a sweep.

    An OS lock on an open file, released when its process dies (even by ``kill -9``). The file
    must be a regular file with one link, is never followed or truncated (the holder's process
    id is written over its first bytes).

    Raises:
        ResultsFolderBusy: another process holds the lock.
        UnsafeResultsFolder: a ``.lock`` that is a link or not a regular file.
    """
    path = Path(folder) / ".lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeResultsFolder(
                f"{path} is a symbolic link; a results folder's lock is never followed out of "
                "the folder (remove the link, or use another folder)"
            ) from err
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise UnsafeResultsFolder(
                f"{path} is not a plain file of the folder ("
                f"{'a hard link shared with another file' if info.st_nlink != 1 else 'not a file'}"
                "); remove it, or use another folder"
            )
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError as err:
                raise ResultsFolderBusy(_busy(folder, "")) from err
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise ResultsFolderBusy(_busy(folder, holder if holder.isdigit() else "")) from err
        os.pwrite(fd, f"{os.getpid():<20}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _busy(folder: str | Path, pid: str) -> str:
    who = f"process {pid}" if pid else "another process"
    return (
        f"results folder {str(folder)!r} is in use by {who} (another compare/run writing to it); "
        "wait for it to finish or choose another --out"
    )
