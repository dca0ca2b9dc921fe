"""The results table as CSV: the bytes of ``DataFrame.to_csv(fh, index=False)``, written faster.

``results.csv`` holds one row per recorded round of every run, so writing it is a large part of
a sweep over many stored runs; most of pandas' time goes to formatting each float and to the
csv module's per-row loop. :func:`write_frame` writes the same text from whole columns:

* each field is formatted once per stretch of equal consecutive values (equal bits for floats),
  so a run's constant columns (agent, env, epsilon, seed, ...) cost one format per run;
* a float is ``repr(float)`` -- the shortest text that reads back as the same float, which is
  numpy's ``str`` of a float64, what pandas writes -- and NaN an empty field;
* a string is quoted exactly as the csv module quotes it (asked once per distinct string);
* columns of other dtypes, non-string labels, a single column or no rows: pandas writes the
  frame itself.

``tests/test_csv_text.py`` holds it to pandas' bytes on the suite's sweeps and on fuzzed frames.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["csv_text", "write_frame"]


def _writer(fh: Any) -> Any:
    """The csv writer pandas' ``to_csv`` makes with its defaults."""
    return csv.writer(
        fh,
        lineterminator=os.linesep,
        delimiter=",",
        quoting=csv.QUOTE_MINIMAL,
        doublequote=True,
        escapechar=None,
        quotechar='"',
    )


def _quoted(text: str) -> str:
    """``text`` as the csv writer writes it in a row of two fields (quoted where it must be)."""
    buf = io.StringIO()
    _writer(buf).writerow([text, ""])
    return buf.getvalue()[: -1 - len(os.linesep)]


def _starts(keys: np.ndarray) -> np.ndarray:
    """Indices where a stretch of equal consecutive ``keys`` starts (the first is 0)."""
    change = np.empty(len(keys), dtype=bool)
    change[0] = True
    np.not_equal(keys[1:], keys[:-1], out=change[1:])
    return np.flatnonzero(change)


def _spread(texts: list[str], starts: np.ndarray, n: int) -> list[str]:
    """Each stretch's text repeated over its rows."""
    if len(starts) == n:
        return texts
    counts = np.diff(np.append(starts, n))
    return np.repeat(np.array(texts, dtype=object), counts).tolist()


def _float_fields(values: np.ndarray) -> list[str]:
    starts = _starts(values.view(np.int64))  # bits: -0.0 is not 0.0, NaN equals itself
    firsts = values[starts].tolist()
    texts = ["" if v != v else repr(v) for v in firsts]
    return _spread(texts, starts, len(values))


def _int_fields(values: np.ndarray) -> list[str]:
    starts = _starts(values)
    return _spread(list(map(str, values[starts].tolist())), starts, len(values))


def _string_fields(values: np.ndarray) -> list[str] | None:
    """Fields of a column of strings and missing values (NaN, None: empty); None otherwise."""
    items = values.tolist()
    if items and set(map(type, items)) == {str}:  # strings only: one quote per stretch
        starts = _starts(values)
        firsts = [items[i] for i in starts.tolist()]
        memo = {text: _quoted(text) for text in set(firsts)}
        return _spread([memo[text] for text in firsts], starts, len(items))
    memo: dict[str, str] = {}
    out: list[str] = []
    for value in items:
        if type(value) is str:
            text = memo.get(value)
            if text is None:
                text = memo[value] = _quoted(value)
        elif value is None or (type(value) is float and value != value):
            text = ""
        else:
            return None
        out.append(text)
    return out


def _fields(column: pd.Series) -> list[str] | None:
    """The column's CSV fields as pandas writes them, or None for a dtype not handled here."""
    dtype = column.dtype
    if dtype == np.float64:
        return _float_fields(np.ascontiguousarray(column.to_numpy()))
    if dtype == np.int64:
        return _int_fields(column.to_numpy())
    if dtype == np.bool_:
        return np.where(column.to_numpy(), "True", "False").tolist()
    if isinstance(dtype, pd.StringDtype) or dtype == np.dtype("O"):
        return _string_fields(column.to_numpy(dtype=object))
    return None


def csv_text(frame: pd.DataFrame, *, header: bool = True) -> str | None:
    """``frame.to_csv(index=False, header=header)``'s text, or None where pandas must write it.

    Args:
        frame: the table.
        header: write the column names first.

    Returns:
        The text, or None for a frame with a dtype other than float64, int64, bool and strings
        (with missing values), a non-string column label, fewer than two columns or no rows.
    """
    if len(frame) == 0 or frame.shape[1] < 2:
        return None
    if not all(type(name) is str for name in frame.columns):
        return None
    columns = []
    for _, column in frame.items():
        fields = _fields(column)
        if fields is None:
            return None
        columns.append(fields)
    head = ",".join(_quoted(name) for name in frame.columns) + os.linesep if header else ""
    return head + os.linesep.join(map(",".join, zip(*columns, strict=True))) + os.linesep


#: Fields formatted at a time (pandas' ``to_csv`` writes 100,000 cells at a time): a chunk's
#: strings are held, never the whole table's.
CHUNK_CELLS = 200_000


def write_frame(frame: pd.DataFrame, fh: Any, *, header: bool = True) -> None:
    """Write ``frame`` to the text file ``fh`` as ``frame.to_csv(fh, index=False)`` does.

    In chunks of rows: every field's text depends on its own value only, so the chunks' texts
    (each chunk pandas must write written by pandas) are the whole table's.
    """
    step = max(1, CHUNK_CELLS // max(1, frame.shape[1]))
    if len(frame) <= step or csv_text(frame.iloc[:1], header=False) is None:
        chunks = [frame]  # one piece, or a frame pandas writes whole (its dtypes or labels)
    else:
        chunks = [frame.iloc[start : start + step] for start in range(0, len(frame), step)]
    for k, chunk in enumerate(chunks):
        text = csv_text(chunk, header=header and k == 0)
        if text is None:
            chunk.to_csv(fh, index=False, header=header and k == 0)
        else:
            fh.write(text)
