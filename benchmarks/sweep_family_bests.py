"""Each family's best ratio to cuBLAS on every shape of the committed sweep tables (no GPU).

    python benchmarks/sweep_family_bests.py [--tables 'tuner/data/results/h100-sweep*.jsonl']
        --out benchmarks/results/h100-sweep-family-bests.json

What a family can win on a shape, read from the exhaustive and partial sweeps the project
ships (measured on the lent H100, 2026-11-22 to 2026-11-24; every row verified against strict
FP32 cuBLAS). Beside each family, the median seconds its kernels took to compile in one study's
compile pool on an H200 (``h200x2-compile-times-2026-11-28.json``), so the two can be weighed: a
family that costs several times the compile seconds of another and wins on few shapes is where
a study's compile time goes. The sweep shapes are in-sample (none is in ``heldout.csv``).
"""

from __future__ import annotations

import argparse
import glob
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from tuner.data.sweep_table import read_sweep_table

COMPILE_TIMES = Path(__file__).parent / "results" / "h200x2-compile-times-2026-11-28.json"


def family_bests(paths: list[str]) -> dict[str, dict[str, float]]:
    """shape -> family -> the best cuBLAS time over the family's time among verified rows."""
    best: dict[str, dict[str, float]] = defaultdict(dict)
    for path in paths:
        for row in read_sweep_table(Path(path)).rows:
            if row.ok_ms is None or row.cublas_ms is None:
                continue
            shape, ratio = str(row.shape), row.cublas_ms / row.ok_ms
            best[shape][row.family] = max(best[shape].get(row.family, 0.0), ratio)
    return dict(best)


def compile_medians(path: Path) -> dict[str, float]:
    """Family -> median compile seconds in one pool, as ``compile_times.py`` recorded them."""
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    medians = document["runs"]["pools_1"]["summary"]["by_family_median_s"]
    return {family: float(s) for family, s in medians.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="tuner/data/results/h100-sweep*.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    paths = sorted(glob.glob(args.tables))
    bests = family_bests(paths)
    medians = compile_medians(COMPILE_TIMES) if COMPILE_TIMES.is_file() else {}
    winners = {
        shape: max(by_family, key=by_family.__getitem__) for shape, by_family in bests.items()
    }
    document = {
        "what": "each family's best ratio to cuBLAS (cuBLAS ms / ms, verified rows) on every "
        "shape of the sweep tables, the winning family per shape, and each family's median "
        "compile seconds from one study's compile pool on an H200",
        "tables": [Path(p).name for p in paths],
        "compile_times": COMPILE_TIMES.name,
        "family_bests": {
            s: dict(sorted(b.items(), key=lambda kv: -kv[1])) for s, b in bests.items()
        },
        "winners": winners,
        "wins_by_family": {
            family: sum(1 for w in winners.values() if w == family)
            for family in sorted({f for b in bests.values() for f in b})
        },
        "compile_median_s": medians,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    for shape, by_family in sorted(bests.items()):
        row = ", ".join(f"{f} {r:.2f}" for f, r in sorted(by_family.items(), key=lambda kv: -kv[1]))
        print(f"{shape:>18}  {row}")
    print("wins:", document["wins_by_family"], "compile medians:", medians)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
