"""The odd-shape suite beside its aligned twin: two ``gemmtune bench`` files, one Markdown table.

    python benchmarks/odd_report.py benchmarks/results/h100-odd.json \
        benchmarks/results/h100-odd-aligned.json > benchmarks/results/h100-odd-comparison.md

Row i of ``benchmarks/odd_shapes.csv`` is paired with row i of ``odd_shapes_aligned.csv`` (every
dimension rounded to the nearest multiple of 4, ties up; :func:`aligned_twin`), both tuned with
the same budget. The issue-20 targets: each odd shape at >= 95 % of its twin's TFLOP/s, the
suite's geometric mean of cuBLAS time / ours >= 1.2, and no shape below 1.0.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from tuner.data.shape_lists import read_suite  # noqa: E402

SHARE_OF_ALIGNED = 0.95
GEOMEAN_RATIO = 1.2
LOWEST_RATIO = 1.0


def aligned_twin(dims: Sequence[int]) -> tuple[int, ...]:
    """Every dimension rounded to the nearest multiple of 4; a tie (2 mod 4) rounds up."""
    return tuple(4 * ((d + 2) // 4) for d in dims)


def _dims(row: dict[str, Any]) -> tuple[int, ...]:
    return (row["m"], row["n"], row["k"])


def _shape(dims: Sequence[int]) -> str:
    return "x".join(map(str, dims))


def pairs(odd: dict[str, Any], aligned: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    """Each shape of the odd suite (its measured row, or a row saying it was not measured) with
    its twin's row (None where the twin was not measured)."""
    measured = {_dims(row): row for row in odd["shapes"]}
    twins = {_dims(row): row for row in aligned["shapes"]}
    rows = [
        measured.get(dims) or {"class": e.label, "m": dims[0], "n": dims[1], "k": dims[2]}
        for e in read_suite(ROOT / odd["suite"])
        for dims in [(e.shape.m, e.shape.n, e.shape.k)]
    ]
    return [(row, twins.get(aligned_twin(_dims(row)))) for row in rows]


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _share(row: dict[str, Any], twin: dict[str, Any] | None) -> float | None:
    if twin is None or row.get("tflops") is None or twin.get("tflops") is None:
        return None
    return float(row["tflops"]) / float(twin["tflops"])


def table(odd: dict[str, Any], aligned: dict[str, Any]) -> str:
    lines = [
        "| class | odd shape | TFLOP/s | x cuBLAS | aligned twin | TFLOP/s | x cuBLAS "
        "| odd / aligned | odd config |",
        "|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for row, twin in pairs(odd, aligned):
        share = _share(row, twin)
        other = twin or {}
        config = f"`{row['config']}`" if row.get("config") else "not measured"
        lines.append(
            f"| {row.get('class') or '-'} | {_shape(_dims(row))} "
            f"| {_fmt(row.get('tflops'), '.1f')} | {_fmt(row.get('ratio'), '.2f')} "
            f"| {_shape(aligned_twin(_dims(row)))} "
            f"| {_fmt(other.get('tflops'), '.1f')} | {_fmt(other.get('ratio'), '.2f')} "
            f"| {'-' if share is None else f'{100 * share:.0f} %'} | {config} |"
        )
    return "\n".join(lines)


def targets(odd: dict[str, Any], aligned: dict[str, Any]) -> str:
    """The three targets, each with what was measured and how many shapes it covers."""
    rows = [row for row, _ in pairs(odd, aligned)]
    ratios = [float(r["ratio"]) for r in rows if r.get("ratio") is not None]
    shares = [s for s in (_share(r, t) for r, t in pairs(odd, aligned)) if s is not None]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    checks = [
        (
            f"each odd shape >= {SHARE_OF_ALIGNED:.0%} of its twin's TFLOP/s",
            f"lowest {min(shares):.0%}, {sum(s >= SHARE_OF_ALIGNED for s in shares)} of "
            f"{len(shares)} pairs"
            if shares
            else "-",
            bool(shares) and min(shares) >= SHARE_OF_ALIGNED,
        ),
        (
            f"geometric mean of cuBLAS time / ours >= {GEOMEAN_RATIO}",
            _fmt(geomean, ".2f"),
            geomean is not None and geomean >= GEOMEAN_RATIO,
        ),
        (
            f"no shape below {LOWEST_RATIO:.1f}x cuBLAS",
            f"lowest {min(ratios):.2f}, {sum(r < LOWEST_RATIO for r in ratios)} below"
            if ratios
            else "-",
            bool(ratios) and min(ratios) >= LOWEST_RATIO,
        ),
    ]
    lines = ["| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if met else '**no**'} |" for name, value, met in checks]
    measured = f"{len(ratios)} of {len(rows)} odd shapes measured, {len(shares)} with their twin"
    return "\n".join(lines) + f"\n\n{measured}."


def report(odd: dict[str, Any], aligned: dict[str, Any]) -> str:
    prov = odd["provenance"]
    return (
        f"{table(odd, aligned)}\n\n{targets(odd, aligned)}\n\nMeasured on {prov['device']} "
        f"({prov['sm_count']} SMs), driver {prov['driver']}, CUDA runtime {prov['cuda_runtime']}, "
        f"NVRTC {prov['nvrtc']}, CuPy {prov['cupy']}, gemmtune {prov['tuner']}, {odd['date']} "
        f"(twin: {aligned['date']}); {odd['method']['trials_per_tuned_shape']} candidates per "
        "shape, families " + ", ".join(odd["method"]["families"]) + ".\n"
    )


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: odd_report.py ODD_SUITE.json ALIGNED_SUITE.json")
    odd, aligned = (json.loads(Path(p).read_text()) for p in argv)
    sys.stdout.write(report(odd, aligned))


if __name__ == "__main__":
    main(sys.argv[1:])
