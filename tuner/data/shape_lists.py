"""Shape lists: the CSV files that ``tune-batch`` and ``gemmtune bench`` read.

Rows are ``M,N,K`` or ``class,M,N,K``, or ``class,M,N,K,dtype,layout`` (optionally with
``out_dtype`` after them) where a list mixes problems: such a row's own dtype and layout replace
the command's ``--dtype`` and ``--layout``, and its C is the input type unless it names one. ``#``
starts a comment line, and the first row may be a header naming those columns (``class,M,N,K``,
any case), as spreadsheets write it. Every row is checked before anything runs, and a bad one is
named by its line number.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from tuner.core.errors import InputError
from tuner.core.shape import Shape, parse_shape
from tuner.data.user_files import read_text

_HEADERS = (
    ["m", "n", "k"],
    ["class", "m", "n", "k"],
    ["class", "m", "n", "k", "dtype", "layout"],
    ["class", "m", "n", "k", "dtype", "layout", "out_dtype"],
)
_ROW_FORMS = "M,N,K or class,M,N,K or class,M,N,K,dtype,layout[,out_dtype]"


@dataclass(frozen=True)
class SuiteEntry:
    """One row of a shape CSV: its class (``None`` for ``M,N,K`` rows) and shape."""

    label: str | None
    shape: Shape


def read_suite(
    path: Path, dtype: str = "float32", layout: str = "NN", out_dtype: str | None = None
) -> list[SuiteEntry]:
    """Every row of a shape CSV, in file order, as shapes of ``dtype``, ``layout`` and
    ``out_dtype`` (None: the input type)."""
    text = read_text(path, "shape file")
    rows: list[SuiteEntry] = []
    seen_data = False
    for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), 1):
        if not row or row[0].lstrip().startswith("#") or not "".join(row).strip():
            continue
        cells = [c.strip() for c in row]
        first, seen_data = not seen_data, True
        if first and [c.lower() for c in cells] in _HEADERS:
            continue
        rows.append(_entry(cells, f"{path.name} line {number}", dtype, layout, out_dtype))
    if not rows:
        raise InputError(f"{path.name} holds no shapes")
    return rows


def _entry(
    cells: list[str], where: str, dtype: str, layout: str, out_dtype: str | None
) -> SuiteEntry:
    if len(cells) not in (3, 4, 6, 7):
        raise InputError(f"{where}: expected {_ROW_FORMS}, got {','.join(cells)!r}")
    if len(cells) >= 6:  # the row names its own problem
        dtype, layout = cells[4], cells[5]
        out_dtype = cells[6] if len(cells) == 7 and cells[6] else None
        cells = cells[:4]
    try:
        shape = parse_shape("x".join(cells[-3:]), dtype, layout, out_dtype)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return SuiteEntry((cells[0] or None) if len(cells) == 4 else None, shape)


def read_shapes(
    path: Path, dtype: str = "float32", layout: str = "NN", out_dtype: str | None = None
) -> list[Shape]:
    """The shapes of a shape CSV, in file order, as shapes of ``dtype``, ``layout`` and
    ``out_dtype`` (None: the input type)."""
    return [entry.shape for entry in read_suite(path, dtype, layout, out_dtype)]
