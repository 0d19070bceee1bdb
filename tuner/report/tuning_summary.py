"""The suite bests: a ``gemmtune bench`` result with what tuning each shape cost.

For every shape of a bench document (best config, its re-measured ms and TFLOP/s beside cuBLAS,
the ratio, provenance) the summary adds, from the tuning database: the studies that tuned the
shape on that device, the candidates they evaluated (every status), and the tuning wall time.
The wall time is the sum of the intervals between consecutive stored results of the shape,
leaving out gaps longer than ``gap_s`` (a study resumed in a later run), so the time between
runs does not count. The result is a suite file (:mod:`tuner.data.suite_file`): ``h100.json``,
which the server preloads.

A database seeded from committed files (the server's preload of an earlier summary and of
sweep tables) holds no tuning history of its own. Given that earlier summary as ``seeded``, a
shape whose best config is the one it lists keeps its studies, candidates and wall time; any
other shape gets the database's sweep counts and no wall time (sweep tables hold no timestamps,
so their stored stamps are the seeding's).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tuner.core.errors import InputError
from tuner.data import SuiteFile

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

# What a summary row keeps of the bench row, and what it adds.
KEPT = (
    "class", "m", "n", "k", "config", "family", "status", "reason", "ms", "tflops", "cublas_ms",
    "cublas_tflops", "ratio", "rel_error", "roofline",
)  # fmt: skip
COST = ("studies", "candidates_evaluated", "tuning_wall_s")
BENCH_KEYS = ("date", "method", "summary")  # what a bench result has beyond any suite file
UNNAMED_STUDY = "(none)"  # rows stored outside any study (imports, uploads)
DEFAULT_GAP_S = 60.0

Dims = tuple[int, int, int]


@dataclass(frozen=True)
class TuningCost:
    """What tuning one shape on one device cost, as the database recorded it."""

    studies: dict[str, int] = field(default_factory=dict)  # study name -> rows stored
    candidates_evaluated: int = 0
    tuning_wall_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "studies": dict(self.studies),
            "candidates_evaluated": self.candidates_evaluated,
            "tuning_wall_s": self.tuning_wall_s,
        }


def active_seconds(stamps: list[datetime], gap_s: float) -> float:
    """The sum of the intervals between consecutive ``stamps`` (sorted) no longer than
    ``gap_s``: time spent tuning, not time between runs."""
    return sum(
        gap
        for before, after in itertools.pairwise(sorted(stamps))
        if (gap := (after - before).total_seconds()) <= gap_s
    )


def tuning_cost(session: Session, device: str, gap_s: float) -> dict[Dims, TuningCost]:
    """Studies, evaluated candidates and active wall time per shape stored for ``device``."""
    from sqlalchemy import select  # the database only when a summary reads it: `gemmtune --help`

    from storage.models import Device, Measurement, Shape

    stored: dict[Dims, list[tuple[datetime, str]]] = defaultdict(list)
    query = (
        select(Shape.m, Shape.n, Shape.k, Measurement.study, Measurement.created_at)
        .join(Shape, Measurement.shape_id == Shape.id)
        .join(Device, Measurement.device_id == Device.id)
        .where(Device.name == device)
    )
    for m, n, k, study, created in session.execute(query):
        stored[(m, n, k)].append((created, study or UNNAMED_STUDY))
    cost = {}
    for dims, rows in stored.items():
        studies: dict[str, int] = defaultdict(int)
        for _, study in rows:
            studies[study] += 1
        wall = active_seconds([created for created, _ in rows], gap_s)
        cost[dims] = TuningCost(dict(studies), len(rows), round(wall, 1))
    return cost


def _seeded_cost(
    row: dict[str, Any], earlier: dict[Dims, dict[str, Any]], found: TuningCost | None
) -> dict[str, Any]:
    """A row's cost when the database was seeded: the earlier summary's when its config did not
    change, else the database's sweep rows without a wall time."""
    dims = (row["m"], row["n"], row["k"])
    before = earlier.get(dims)
    if before is not None and before["config"] == row["config"]:
        return {name: before.get(name) for name in COST}
    studies = {s: n for s, n in (found.studies if found else {}).items() if s != UNNAMED_STUDY}
    return TuningCost(studies, sum(studies.values()), None).as_json()


def summary_document(
    bench: SuiteFile,
    cost: dict[Dims, TuningCost],
    gap_s: float = DEFAULT_GAP_S,
    seeded: SuiteFile | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The suite-bests document of ``bench`` with each shape's ``cost`` (see the module)."""
    doc = bench.document
    missing = [key for key in BENCH_KEYS if key not in doc]
    if missing:
        raise InputError(
            f"{bench.path} has no {', '.join(missing)}: give a result of gemmtune bench, "
            f"which records {', '.join(BENCH_KEYS)}"
        )
    earlier = {}
    if seeded is not None:
        earlier = {(r["m"], r["n"], r["k"]): r for r in seeded.document["shapes"]}
    shapes = []
    for row in doc["shapes"]:
        entry = {name: row.get(name) for name in KEPT}
        found = cost.get((row["m"], row["n"], row["k"]))
        if seeded is None:
            entry.update(found.as_json() if found is not None else {})
        else:
            entry.update(_seeded_cost(row, earlier, found))
        shapes.append(entry)
    wall = (
        f"sum of intervals between consecutive stored results of a shape, gaps over "
        f"{gap_s:.0f} s (between runs) left out"
    )
    if seeded is not None:
        wall = (
            f"carried from {seeded.path.name} where the best config did not change; null for "
            "configs found by sweeps (sweep tables keep no timestamps), whose studies count the "
            "sweep rows of the shape"
        )
    return {
        "what": "best config per suite shape after tuning, re-measured beside cuBLAS, and the "
        "cost of tuning it",
        "date": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "measured": doc["date"],
        "device": doc["device"],
        "provenance": doc["provenance"],
        "method": doc["method"],
        "wall_time": wall,
        "source": {"bench": bench.path.name, "database": "the tuning database of those runs"},
        "summary": doc["summary"],
        "shapes": shapes,
    }
