"""Per-shape tuning summary of the suite: ``gemmtune bench``'s result plus what the tuning cost.

    python benchmarks/tuning_summary.py --bench benchmarks/results/h100-suite.json \
        --db sqlite:///bench.db --out benchmarks/results/h100.json

For every shape of the bench document (best config, its re-measured ms and TFLOP/s beside
cuBLAS, the ratio, provenance) it adds, from the tuning database: the studies that tuned the
shape on that device, the candidates they evaluated (all statuses), and the tuning wall time:
the sum of the intervals between consecutive stored results of the shape, leaving out gaps of
more than ``--gap-s`` seconds (a study resumed in a later run), so the time between runs does
not count. The output is a suite file (``tuner.data.suite_file``), which ``gemmtune serve``
preloads.

When the database was seeded from committed files (``api.preload``: an earlier summary and sweep
tables) rather than filled by the studies themselves, pass ``--seeded EARLIER.json``: a shape
whose best config is the one EARLIER.json lists keeps EARLIER.json's studies, candidates and
wall time; any other shape gets the database's sweep counts and no wall time (the sweep tables
hold no timestamps; their stamps are the seeding's).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select

import storage
from storage.models import Device, Measurement, Shape
from tuner.data import read_suite_file, write_suite_file

KEEP = (
    "class", "m", "n", "k", "config", "family", "status", "reason", "ms", "tflops", "cublas_ms",
    "cublas_tflops", "ratio", "rel_error", "roofline",
)  # fmt: skip


COST = ("studies", "candidates_evaluated", "tuning_wall_s")


def tuning_cost(db: str, device: str, gap_s: float) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Studies, evaluated candidates and active wall time per shape tuned on ``device``."""
    engine = storage.make_engine(db, writable=False)
    rows = defaultdict(list)
    with storage.make_session_factory(engine)() as session:
        query = (
            select(Shape.m, Shape.n, Shape.k, Measurement.study, Measurement.created_at)
            .join(Shape, Measurement.shape_id == Shape.id)
            .join(Device, Measurement.device_id == Device.id)
            .where(Device.name == device)
        )
        for m, n, k, study, created in session.execute(query):
            rows[(m, n, k)].append((created, study))
    engine.dispose()
    cost = {}
    for shape, stamps in rows.items():
        stamps.sort()
        wall = sum(
            gap
            for (before, _), (after, _) in itertools.pairwise(stamps)
            if (gap := (after - before).total_seconds()) <= gap_s
        )
        studies: dict[str, int] = defaultdict(int)
        for _, study in stamps:
            studies[study or "(none)"] += 1
        cost[shape] = {
            "studies": dict(studies),
            "candidates_evaluated": len(stamps),
            "tuning_wall_s": round(wall, 1),
        }
    return cost


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", type=Path, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gap-s", type=float, default=60.0)
    parser.add_argument(
        "--seeded", type=Path, help="the earlier summary the database was seeded with"
    )
    args = parser.parse_args()

    bench = read_suite_file(args.bench).document
    cost = tuning_cost(args.db, bench["device"], args.gap_s)
    earlier = {}
    if args.seeded is not None:
        earlier = {
            (r["m"], r["n"], r["k"]): r for r in read_suite_file(args.seeded).document["shapes"]
        }
    shapes = []
    for row in bench["shapes"]:
        key = (row["m"], row["n"], row["k"])
        entry = {k: row.get(k) for k in KEEP}
        if args.seeded is None:
            entry.update(cost.get(key, {}))
        elif key in earlier and earlier[key]["config"] == row["config"]:
            entry.update({k: earlier[key].get(k) for k in COST})
        else:
            studies = {
                s: n for s, n in cost.get(key, {}).get("studies", {}).items() if s != "(none)"
            }
            entry.update(
                studies=studies, candidates_evaluated=sum(studies.values()), tuning_wall_s=None
            )
        shapes.append(entry)
    wall = (
        f"sum of intervals between consecutive stored results of a shape, gaps over "
        f"{args.gap_s:.0f} s (between runs) left out"
    )
    if args.seeded is not None:
        wall = (
            f"carried from {args.seeded.name} where the best config did not change; null for "
            "configs found by sweeps (benchmarks/sweep.py tables keep no timestamps), whose "
            "studies count the sweep rows of the shape"
        )
    doc = {
        "what": "best config per suite shape after tuning, re-measured beside cuBLAS, and the "
        "cost of tuning it",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "measured": bench["date"],
        "device": bench["device"],
        "provenance": bench["provenance"],
        "method": bench["method"],
        "wall_time": wall,
        "source": {"bench": args.bench.name, "database": "the tuning database of those runs"},
        "summary": bench["summary"],
        "shapes": shapes,
    }
    write_suite_file(args.out, doc)
    print(f"wrote {args.out}: {len(shapes)} shapes")


if __name__ == "__main__":
    main()
