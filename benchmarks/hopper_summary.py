"""Tables of a Hopper ladder run (``benchmarks/hopper_ladder.py``'s JSON), for the notebook.

    python benchmarks/hopper_summary.py RESULTS.json [--config NAME_PREFIX] [--ceiling 989]

Per shape: the best verified config (as a study would pick among those measured: a maximum of
noisy ratios, so biased upwards a little) or, with ``--config``, the one config whose name starts
so; its TFLOP/s, the share of the tensor cores' dense ceiling, and its ratio to cuBLAS
(``cublasGemmEx``, C of the same type) and to ``torch.matmul``. Then geometric means of the
ratios per input type and layout, for the suite rows and the held-out rows apart (extra
``--shape`` rows are in the table only).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

# Dense BF16/FP16 tensor-core peak of an H100 SXM at its boost clock, TFLOP/s.
H100_DENSE_HALF = 989.0


def chosen_rows(rows: list[dict[str, Any]], prefix: str | None) -> list[dict[str, Any]]:
    """One row per shape: the fastest ok config, or the one named by ``prefix``."""
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("status") != "ok" or (prefix and not row["config"].startswith(prefix)):
            continue
        key = f"{row['shape']} {row_set(row)}"
        if key not in best or row["ours_ms"] < best[key]["ours_ms"]:
            best[key] = row
    return list(best.values())


def row_set(row: dict[str, Any]) -> str:
    """Which set a row is of: a suite's (it has a class), held out, or an extra ``--shape``."""
    return "held out" if row["heldout"] else "suite" if row["class"] else "extra"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(rows: list[dict[str, Any]], ceiling: float) -> str:
    lines = [
        "| shape | set | config | TFLOP/s | of ceiling | x cuBLAS | x torch |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        tile = row["config"].split("_bk")[0].removeprefix("tma_ws_")
        lines.append(
            f"| {row['shape']} | {row['class'] or row_set(row)} | "
            f"{tile} | {row['ours_tflops']:.1f} | {row['ours_tflops'] / ceiling:.0%} | "
            f"{row['vs_cublas']:.3f} | {row.get('vs_torch', float('nan')):.3f} |"
        )
    return "\n".join(lines)


def geomeans(rows: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        _, dtype, layout = row["shape"].split()
        if row_set(row) != "extra":
            groups[(f"{dtype} {layout}", row_set(row))].append(row)
    lines = [
        "| dtype layout | set | shapes | geomean x cuBLAS | geomean x torch | lowest x cuBLAS "
        "| shapes filling every SM | their geomean x cuBLAS |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (kind, where), group in sorted(groups.items()):
        low = min(group, key=lambda r: r["vs_cublas"])
        # Shapes with at least one tile per block of a full persistent grid: those the
        # family's whole-tile schedule can keep every SM busy on without a K split.
        full = [r["vs_cublas"] for r in group if r["tiles"] >= r["blocks"] and r["blocks"] >= 132]
        lines.append(
            f"| {kind} | {where} | {len(group)} | {geomean([r['vs_cublas'] for r in group]):.3f} "
            f"| {geomean([r['vs_torch'] for r in group if 'vs_torch' in r]):.3f} | "
            f"{low['vs_cublas']:.3f} ({low['shape'].split()[0]}) | {len(full)} | "
            f"{geomean(full) if full else float('nan'):.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--config", help="one config by the start of its name")
    parser.add_argument("--ceiling", type=float, default=H100_DENSE_HALF)
    args = parser.parse_args()
    document = json.loads(args.results.read_text())
    rows = chosen_rows(document["rows"], args.config)
    print(table(rows, args.ceiling))
    print()
    print(geomeans(rows))


if __name__ == "__main__":
    main()
