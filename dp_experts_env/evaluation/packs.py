"""The unit-file format: two-line run records and the packs that hold them.

docs/grid.md, "Unit files, and folders written by earlier versions".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dp_experts_env.evaluation import columns as columns_mod
from dp_experts_env.evaluation.safe_files import UnsafeResultsFolder, check_run_id, loads

__all__ = [
    "DamagedPack",
    "FORMAT_VERSION",
    "PACK_SUFFIX",
    "PACK_VERSION",
    "key_digest",
    "parse_pack",
    "record_header",
    "record_payload",
    "record_problem",
    "split_record",
]

#: Version of the run-file layout and of the key's fields; bump it when the episode loop or the
#: seed derivation changes meaning in a way the code hash would not see.
#: 3: the derived seeds and the source of evaluation/grid.py joined the key; manifest checksum.
FORMAT_VERSION = 3
#: Version of the unit-file container (the records inside keep :data:`FORMAT_VERSION`).
PACK_VERSION = 1
PACK_SUFFIX = ".pack"


def record_payload(rows: list[dict[str, Any]]) -> bytes:
    """The stored JSON of one run's rows (what :func:`columns.payload` gives for them)."""
    return columns_mod.payload(columns_mod.run_columns(rows))


def split_record(raw: bytes) -> tuple[dict[str, Any], bytes]:
    """(header, payload bytes) of a run record; ValueError when it has not the two-line layout."""
    head, sep, payload = raw.partition(b"\n")
    if not sep:
        raise ValueError("not a two-line run file")
    header = loads(head)
    if not isinstance(header, dict):
        raise ValueError("header is not an object")
    return header, payload


class DamagedPack(ValueError):
    """A unit file that fails its own checks (truncated, edited, not a pack)."""


def record_problem(header: dict[str, Any], payload: bytes) -> str:
    """Why a record cannot be used whatever its key ("" when it can)."""
    if header.get("version") != FORMAT_VERSION:
        return "written by another format version"
    if header.get("checksum") != hashlib.sha256(payload).hexdigest():
        return "checksum mismatch"
    return ""


def _pack_header(raw: bytes, name: str) -> tuple[dict[str, Any], bytes]:
    """(pack header, rest) of a unit file; DamagedPack naming the file and what is wrong."""
    head, sep, body = raw.partition(b"\n")
    try:
        header = loads(head)
        if not isinstance(header, dict) or header.get("pack") != PACK_VERSION:
            raise ValueError(f"not a pack of version {PACK_VERSION}")
        runs = header["runs"]
        if not isinstance(runs, list):
            raise ValueError("'runs' is not a list")
        for run_id in runs:
            check_run_id(run_id)
    except UnsafeResultsFolder as err:
        raise DamagedPack(f"cells/{name} lists an unsafe run id ({err})") from None
    except (ValueError, KeyError, TypeError) as err:
        raise DamagedPack(f"cells/{name} is damaged ({err})") from None
    if not sep:
        raise DamagedPack(f"cells/{name} is damaged (truncated after its header)")
    return header, body


def parse_pack(raw: bytes, name: str) -> dict[str, tuple[bytes, bytes]]:
    """``{run id: (record header line, payload bytes)}`` of a unit file that passes its checks.

    The record headers are parsed where they are read (:func:`record_header`): a parsed key
    costs a few kB per run, more than the run's rows at the last round.

    Raises:
        DamagedPack: the file is truncated, edited or not a unit file; the message names it.
    """
    header, body = _pack_header(raw, name)
    if header.get("bytes") != len(body):
        raise DamagedPack(
            f"cells/{name} is damaged (truncated or extended: {len(body)} bytes after its header, "
            f"{header.get('bytes')} written)"
        )
    if header.get("checksum") != hashlib.sha256(body).hexdigest():
        raise DamagedPack(f"cells/{name} is damaged (checksum mismatch)")
    lines = body.split(b"\n")
    runs = header["runs"]
    if len(lines) != 2 * len(runs) + 1 or lines[-1]:
        raise DamagedPack(f"cells/{name} is damaged ({len(runs)} runs listed, not as many records)")
    records: dict[str, tuple[bytes, bytes]] = {}
    for i, run_id in enumerate(runs):
        records.setdefault(run_id, (lines[2 * i], lines[2 * i + 1]))
    return records


def record_header(line: bytes) -> dict[str, Any] | None:
    """A record's header line parsed; None when it is not a JSON object."""
    try:
        header = loads(line)
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


def key_digest(key: Any) -> str:
    """SHA-256 of a key's JSON form (keys sorted); "unserialisable" for a planted deep key."""
    try:
        text = json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (RecursionError, ValueError, TypeError):
        return "unserialisable"
    return hashlib.sha256(text.encode()).hexdigest()
