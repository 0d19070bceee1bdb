"""Fill an empty database with the committed H100 results, so a fresh server has answers.

Files of the results folder (:mod:`tuner.data.location`: ``$GEMMTUNE_RESULTS_DIR``, else
``tuner/data/results`` of the installed package), each used when present:

* ``h100-sweep*.jsonl``: sweep tables (a header, then one row per shape and config, ok or
  pruned): ``h100-sweep.jsonl``, the exhaustive sweep, and slices of larger spaces
  (``h100-sweep-<slice>.jsonl``). Every row is stored, one study per file and shape
  (``<file stem>-MxNxK``, trials in file order), so the dashboard can show how the space was
  explored.
* ``h100.json``: best configs of the whole public suite, then every suite file a ``gemmtune
  bench`` wrote (``*-suite*.json``: each GPU, input type, layout and accuracy class): each ``ok``
  row stored as an ok measurement (rows without a measured config add nothing). Each shape's
  best config is the fastest of everything stored for it, per type, layout and class, so a
  BF16 NT question about a shape of those suites is answered ``exact``.

Each row's ``created_at`` is when it was measured, not when it was preloaded: the provenance's
``time`` (one measurement) or ``date`` (a suite run), else the sweep table header's ``date``.

Every record must pass the rules of uploads and imports (:mod:`tuner.data.intake`), or nothing is
stored. Everything goes through :func:`storage.record_measurements`, which stores the same rows and
best_config as live tuning's :func:`storage.record_measurement` one record at a time would.
Idempotent: a database that already holds measurements is left alone.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.core.dims import tflops
from tuner.core.errors import InputError
from tuner.data import SuiteFile, SweepTable, data_location, read_suite_file, read_sweep_table
from tuner.data.intake import check_records
from tuner.data.location import SUITE_BESTS, all_suite_files
from tuner.kernels.families import accuracy_of, parse_config
from tuner.search.sql_recorder import measurement_in

SWEEP_FILE = "h100-sweep.jsonl"
SWEEP_GLOB = "h100-sweep*.jsonl"
SUITE_FILE = SUITE_BESTS

Record = tuple[storage.DeviceIn, storage.ShapeIn, storage.MeasurementIn]


class Outcome(enum.Enum):
    HELD = "held"  # the database already holds results: left alone
    NOTHING = "nothing"  # no result file in the folder
    STORED = "stored"


@dataclass(frozen=True)
class Preloaded:
    """What a preload did, and where it looked."""

    outcome: Outcome
    folder: str  # the folder and why it was chosen
    count: int = 0  # measurements stored
    files: int = 0

    def __str__(self) -> str:
        if self.outcome is Outcome.HELD:
            return "database already holds results; preload skipped"
        if self.outcome is Outcome.NOTHING:
            return (
                f"no committed results found at {self.folder}; nothing preloaded (answers are "
                "`default` until something is tuned)"
            )
        return f"preloaded {self.count} measurements from {self.files} files in {self.folder}"


def measured_at(provenance: Mapping[str, Any], fallback: str | None = None) -> datetime | None:
    """When a committed result was measured: the first ISO 8601 time of the provenance's
    ``time`` and ``date`` and ``fallback`` (naive times are UTC), or None without one."""
    for value in (provenance.get("time"), provenance.get("date"), fallback):
        if not isinstance(value, str):
            continue
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            continue
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return None


def sweep_records(table: SweepTable) -> Iterator[Record]:
    """Rows of a sweep table as storage inputs, one study per shape: each stored as the result
    a replay of the table answers, as live tuning would record it."""
    gpu = table.header.gpu
    device = storage.DeviceIn(gpu.name, gpu.arch, gpu.sm_count)
    provenance = {**table.header.provenance, "source": f"tuner/data/results/{table.path.name}"}
    trial: dict[str, int] = {}
    for row in table.rows:
        shape = row.shape
        study = f"{table.path.stem}-{shape}"
        number_in_study = trial.get(study, 0)
        trial[study] = number_in_study + 1
        result = row.to_result(parse_config(row.config_name), provenance)
        record = measurement_in(result, study, number_in_study)
        when = measured_at(record.provenance, table.header.date)
        yield (
            device,
            storage.ShapeIn(shape.m, shape.n, shape.k, shape.dtype, shape.layout, shape.out),
            replace(record, created_at=when),
        )


def suite_records(suite: SuiteFile) -> Iterator[Record]:
    """The ``ok`` rows of a suite file as storage inputs."""
    device = storage.DeviceIn(suite.gpu.name, suite.gpu.arch, suite.gpu.sm_count)
    provenance = {"source": f"tuner/data/results/{suite.path.name}", **suite.provenance}
    for row in suite.rows:
        if row.status != "ok" or row.config is None or row.ms is None:
            continue
        m, n, k = row.shape.m, row.shape.n, row.shape.k
        config = parse_config(row.config)
        yield (
            device,
            storage.ShapeIn(m, n, k, row.shape.dtype, row.shape.layout, row.shape.out),
            storage.MeasurementIn(
                family=config.family,
                config_name=config.name,
                params=config.as_dict(),
                accuracy=accuracy_of(config.family),
                ms=row.ms,
                tflops=row.tflops or tflops(m, n, k, row.ms),
                cublas_ms=row.cublas_ms,
                cublas_tflops=row.cublas_tflops or tflops(m, n, k, row.cublas_ms),
                ratio=row.ratio,
                rel_error=row.rel_error,
                provenance=provenance,
                created_at=measured_at(provenance, suite.document.get("date")),
            ),
        )


def _records(folder: Path) -> tuple[list[Record], int]:
    """Every record of the folder's preloaded files, and how many files there were."""
    sweeps = sorted(folder.glob(SWEEP_GLOB))
    bests = [folder / SUITE_FILE] if (folder / SUITE_FILE).is_file() else []
    suites = bests + all_suite_files(folder)
    records: list[Record] = []
    for path in sweeps:
        records.extend(_checked(path, sweep_records(read_sweep_table(path))))
    for path in suites:
        records.extend(_checked(path, suite_records(read_suite_file(path))))
    return records, len(sweeps) + len(suites)


def _checked(path: Path, records: Iterator[Record]) -> list[Record]:
    """The file's records, each passing the rules of uploads and imports (:mod:`tuner.data.intake`).

    Raises:
        InputError: a record names no config (:class:`RejectedRecords` when it breaks a rule);
            nothing of the preload is stored.
    """
    try:
        listed = list(records)
    except InputError as exc:
        raise InputError(f"{path.name}: {exc}") from exc
    check_records((f"{path.name} record {i}", record) for i, record in enumerate(listed))
    return listed


def preload(sessions: sessionmaker[Session], directory: Path | None = None) -> Preloaded:
    """Store the committed results of ``directory`` (default: the results folder) into an empty
    database."""
    folder = data_location().results if directory is None else directory
    shown = data_location().describe() if directory is None else str(directory)
    with sessions() as session:
        if storage.holds_measurements(session):
            return Preloaded(Outcome.HELD, shown)
    records, files = _records(folder)
    if not files:
        return Preloaded(Outcome.NOTHING, shown)
    with sessions.begin() as session:
        storage.record_measurements(session, records)
    return Preloaded(Outcome.STORED, shown, len(records), files)
