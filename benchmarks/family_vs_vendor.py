"""Where one kernel family stands against the vendor library, read from a tuning database: for
every problem whose study measured both, the family's fastest screened candidate beside the
fastest vendor launch (``cublas``, ``cublaslt``) screened in the same study, on the same GPU, in
the same minutes. No GPU needed; the numbers are the studies' own.

    python benchmarks/family_vs_vendor.py --db sqlite:///grid.db --family tma_ws --out FILE.json

Screening times are one short timing each (the finalists' alternating rounds are only for the
few configs a study keeps), so a single row is noisy by a few per cent; the groups are not.
Problems are grouped by M (16 rows or fewer), then by how many rounds of output tiles of
``--tile`` (default 128x256) they give the GPU's SMs, the quantity that decides how well a
persistent kernel of whole tiles fills the chip. Rows with a dimension off a multiple of 8 are
kept apart (``aligned`` false): there the vendor launches include padded ones.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

import storage
from storage.models import Device, Measurement, Shape
from tuner.core.phases import Phase
from tuner.run.bench import geomean

VENDOR = ("cublas", "cublaslt")


def best_times(url: str) -> tuple[dict[tuple[Any, ...], dict[str, float]], dict[str, int]]:
    """Per problem (device, m, n, k, dtype, layout, out_dtype): each family's fastest screened
    time; and each device's SM count."""
    sessions = storage.open_existing_database(url)
    with sessions() as session:
        columns = (Device.name, Shape.m, Shape.n, Shape.k, Shape.dtype, Shape.layout)
        rows = session.execute(
            select(*columns, Shape.out_dtype, Measurement.family, func.min(Measurement.ms))
            .join(Shape, Shape.id == Measurement.shape_id)
            .join(Device, Device.id == Measurement.device_id)
            .where(Measurement.status == "ok", Measurement.phase == Phase.SCREENING.value)
            .group_by(Device.name, Shape.id, Measurement.family)
        ).all()
        sms = {d.name: d.sm_count for d in session.scalars(select(Device))}
    problems: dict[tuple[Any, ...], dict[str, float]] = defaultdict(dict)
    for *key, family, ms in rows:
        if ms:
            problems[tuple(key)][family] = ms
    return problems, sms


def group_of(m: int, n: int, sm_count: int, tile: tuple[int, int]) -> str:
    if m <= 16:
        return "M <= 16"
    rounds = math.ceil(m / tile[0]) * math.ceil(n / tile[1]) / sm_count
    if rounds < 1:
        return "tiles < 1 round"
    return "1-2 rounds" if rounds < 2 else ">= 2 rounds"


def compare(
    problems: dict[tuple[Any, ...], dict[str, float]],
    sms: dict[str, int],
    family: str,
    tile: tuple[int, int],
) -> dict[str, Any]:
    """Per problem the vendor's best time over the family's (> 1: the family is faster), and
    per group the count, geometric mean, median and range, and how many the family won."""
    rows = []
    for (device, m, n, k, dtype, layout, out_dtype), times in sorted(problems.items()):
        vendor = [times[v] for v in VENDOR if v in times]
        if family not in times or not vendor:
            continue
        rows.append(
            {
                "device": device, "m": m, "n": n, "k": k, "dtype": dtype, "layout": layout,
                "out_dtype": out_dtype, "family_ms": times[family], "vendor_ms": min(vendor),
                "vendor_over_family": min(vendor) / times[family],
                "aligned": not (m % 8 or n % 8 or k % 8),
                "group": group_of(m, n, sms.get(device) or 132, tile),
            }
        )  # fmt: skip
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[("aligned, " if row["aligned"] else "ragged, ") + row["group"]].append(
            row["vendor_over_family"]
        )
    summary = {
        name: {
            "problems": len(ratios),
            "geomean": round(geomean(ratios) or 0.0, 3),
            "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3),
            "max": round(max(ratios), 3),
            "family_faster": sum(r > 1 for r in ratios),
        }
        for name, ratios in sorted(groups.items())
    }
    return {"summary": summary, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a tuning database's URL")
    parser.add_argument("--family", default="tma_ws")
    parser.add_argument("--tile", default="128x256", help="BMxBN of the rounds counted")
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    bm, _, bn = options.tile.partition("x")
    problems, sms = best_times(options.db)
    result = compare(problems, sms, options.family, (int(bm), int(bn)))
    document = {
        "what": f"per problem, the fastest vendor launch's screened time over {options.family}'s "
        "fastest screened config's, in the same study (> 1: the family is faster)",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "database": options.db,
        "family": options.family,
        "tile": options.tile,
        **result,
    }
    options.out.write_text(json.dumps(document, indent=1) + "\n")
    for name, figures in document["summary"].items():
        print(f"{name}: {figures}")


if __name__ == "__main__":
    main()
