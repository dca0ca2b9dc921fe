"""``key=value`` options of the command line (``--set``, ``--env-set``) as a parameter mapping.

The one reader of that syntax for every command; it imports nothing of the project.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["parse_assignments"]


def parse_assignments(items: Sequence[str] | None, what: str) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse, else kept as strings.

    Args:
        items: the option's values (None or empty: no pairs).
        what: the option's name, used in the error (``"--set"``).

    Returns:
        The pairs in order, keys stripped of spaces; a repeated key keeps its last value.

    Raises:
        ValueError: an item has no ``=``, or its JSON value nests too deep (naming ``what``
            and the key).
    """
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"{what} must look like key=value, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
        except RecursionError:
            raise ValueError(
                f"{what} {key.strip()}=...: the value is nested too deeply to parse (more levels "
                "than Python's recursion limit)"
            ) from None
    return out
