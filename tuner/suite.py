"""Shape lists: the CSV files that ``tune-batch`` and ``gemmtune bench`` read.

Rows are ``M,N,K`` or ``class,M,N,K``; ``#`` starts a comment line. Every row is checked before
anything runs, and a bad one is named by its line number.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from tuner.errors import InputError
from tuner.shape import Shape, parse_shape


@dataclass(frozen=True)
class SuiteEntry:
    """One row of a shape CSV: its class (``None`` for ``M,N,K`` rows) and shape."""

    label: str | None
    shape: Shape


def read_suite(path: Path) -> list[SuiteEntry]:
    """Every row of a shape CSV, in file order."""
    if not path.is_file():
        raise InputError(f"shape file {str(path)!r} does not exist")
    rows: list[SuiteEntry] = []
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.reader(handle), 1):
            if not row or row[0].lstrip().startswith("#") or not "".join(row).strip():
                continue
            cells = [c.strip() for c in row]
            if len(cells) not in (3, 4):
                raise InputError(
                    f"{path.name} line {number}: expected M,N,K or class,M,N,K, "
                    f"got {','.join(cells)!r}"
                )
            try:
                shape = parse_shape("x".join(cells[-3:]))
            except InputError as exc:
                raise InputError(f"{path.name} line {number}: {exc}") from None
            label = (cells[0] or None) if len(cells) == 4 else None
            rows.append(SuiteEntry(label, shape))
    if not rows:
        raise InputError(f"{path.name} holds no shapes")
    return rows


def read_shapes(path: Path) -> list[Shape]:
    """The shapes of a shape CSV, in file order."""
    return [entry.shape for entry in read_suite(path)]
