"""Issue 41's targets, read from ``gemmtune bench`` files of half-precision inputs (no GPU).

    python benchmarks/half_targets.py FILE.json [FILE.json ...] [--out targets.json]

Each file is one column: one suite benched in one input type and layout. Its rows split in two:

* aligned shapes (M, N and K multiples of 8, so every stored row is whole 16-byte vectors): the
  geometric mean of the default cuBLAS call's time over ours (target at least 1.02), the lowest
  such ratio (at least 0.95), and 4096^3 and 8192^3 where the file has them (at least 1.0 each);
* ragged shapes, those the bench also timed padded (some stored row not whole 16-byte
  vectors): the geometric mean of "pad to a multiple of 8, then cuBLAS" (the bench's
  ``cublas_pad8`` launch, its copies timed) over ours, at least 1.0, and the lowest. A shape of
  neither kind (1023x4096x4096 in NT: M is no row length) counts in neither.

Beside each, the same against the best vendor launch the bench measured (cuBLASLt's heuristic
ranks and the padded launches too), which is what a user of the library could reach by trying.
A file of held-out shapes is scored the same way; whether it was chosen on is the reader's to
know (its name says so in this project). Prints one table row per column and writes the figures
to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import geometric_mean as geomean
from typing import Any

ALIGNED = 8  # halves in 16 bytes
PADDED_CALL = "cublas_pad8"
# (what, threshold) per target; a target with no rows to read is left out.
TARGETS = {
    "geomean_call": 1.02,
    "lowest_call": 0.95,
    "square_4096_call": 1.0,
    "square_8192_call": 1.0,
    "ragged_geomean_padded": 1.0,
}


def is_aligned(row: dict[str, Any]) -> bool:
    return all(row[side] % ALIGNED == 0 for side in ("m", "n", "k"))


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows timed beside the vendor: verified, with our time and the call's."""
    return [r for r in rows if r.get("status") == "ok" and r.get("ms") and r.get("cublas_ms")]


def column_figures(bench: dict[str, Any]) -> dict[str, Any]:
    """One bench file's figures: its column, the aligned and the ragged shapes' ratios, and each
    target's value and whether it is met."""
    rows = measured(bench["shapes"])
    if not rows:
        raise ValueError(f"{bench.get('suite')}: no shape was timed beside cuBLAS")
    first = rows[0]
    figures: dict[str, Any] = {
        "column": f"{first['dtype']} {first['layout']} -> {first['out_dtype']}",
        "suite": bench.get("suite"),
        "device": bench.get("device"),
        "date": bench.get("date"),
        "shapes": len(rows),
    }
    values: dict[str, float] = {}
    aligned = [r for r in rows if is_aligned(r)]
    if aligned:
        call = [r["cublas_ms"] / r["ms"] for r in aligned]
        values["geomean_call"] = geomean(call)
        values["lowest_call"] = min(call)
        vendor = [r["vendor_ms"] / r["ms"] for r in aligned if r.get("vendor_ms")]
        if vendor:
            figures["aligned_geomean_vendor"] = geomean(vendor)
            figures["aligned_lowest_vendor"] = min(vendor)
        for side in (4096, 8192):
            square = [r for r in aligned if r["m"] == r["n"] == r["k"] == side]
            if square:
                values[f"square_{side}_call"] = square[0]["cublas_ms"] / square[0]["ms"]
        figures["aligned_shapes"] = len(aligned)
    ragged = [r for r in rows if not is_aligned(r)]
    padded = [
        r["vendor_launches"][PADDED_CALL] / r["ms"]
        for r in ragged
        if (r.get("vendor_launches") or {}).get(PADDED_CALL)
    ]
    if padded:
        values["ragged_geomean_padded"] = geomean(padded)
        figures["ragged_lowest_padded"] = min(padded)
        figures["ragged_shapes"] = len(padded)
        vendor = [r["vendor_ms"] / r["ms"] for r in ragged if r.get("vendor_ms")]
        if vendor:
            figures["ragged_geomean_vendor"] = geomean(vendor)
    figures["targets"] = {
        name: {"value": value, "threshold": TARGETS[name], "met": value >= TARGETS[name]}
        for name, value in values.items()
    }
    return figures


def table(columns: list[dict[str, Any]]) -> str:
    """A Markdown table, one row per column: each target's value (an asterisk where missed)."""
    head = ["column", "suite", "shapes", *TARGETS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for column in columns:
        cells = [column["column"], Path(str(column["suite"])).name, str(column["shapes"])]
        for name in TARGETS:
            target = column["targets"].get(name)
            cells.append(
                "" if target is None else f"{target['value']:.3f}{'' if target['met'] else '*'}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    columns = [
        column_figures(json.loads(path.read_text())) | {"file": path.name} for path in args.files
    ]
    print(table(columns))
    print("(* missed; thresholds: " + ", ".join(f"{k} >= {v}" for k, v in TARGETS.items()) + ")")
    if args.out:
        args.out.write_text(
            json.dumps({"what": __doc__.splitlines()[0], "columns": columns}, indent=1)
        )
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
