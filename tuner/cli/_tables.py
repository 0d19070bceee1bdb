"""Tables for the terminal that never cut a config name or a shape.

A config's procedural name is its identity and is up to ~65 characters long: squeezed into a
column of an 80-column table it gets cut or folded until rows cannot be told apart. So when a
table with the name as its first column does not fit the width, the name goes on a line of its
own under its row, and the other columns keep their full width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GAP = "  "
NAME_INDENT = "  "


@dataclass(frozen=True)
class Column:
    header: str
    numeric: bool = False  # right-aligned


def table_lines(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    name: Column | None = None,
    names: Sequence[str] = (),
) -> list[str]:
    """Aligned lines of the table: ``names`` (one per row) as the first column when that fits
    in ``width``, else each on its own indented line under its row."""
    if name is not None:
        inline = _aligned([name, *columns], [[n, *row] for n, row in zip(names, rows, strict=True)])
        if max(len(line) for line in inline) <= width:
            return inline
    lines = _aligned(columns, rows)
    if name is None:
        return lines
    result = [lines[0]]
    for line, row_name in zip(lines[1:], names, strict=True):
        result += [line, NAME_INDENT + row_name]
    return result


def _aligned(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max([len(col.header), *(len(row[i]) for row in rows)]) for i, col in enumerate(columns)
    ]

    def line(cells: Sequence[str]) -> str:
        return GAP.join(
            cell.rjust(w) if col.numeric else cell.ljust(w)
            for cell, col, w in zip(cells, columns, widths, strict=True)
        ).rstrip()

    return [line([c.header for c in columns]), *(line(row) for row in rows)]
