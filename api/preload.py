"""Fill an empty database with the committed H100 results, so a fresh server has answers.

Files under ``benchmarks/results/`` (or ``$GEMMTUNE_RESULTS_DIR``), each used when present:

* ``h100-sweep*.jsonl``: sweep tables (a header, then one row per shape and config, ok or
  pruned): ``h100-sweep.jsonl``, the exhaustive sweep, and slices of larger spaces
  (``h100-sweep-<slice>.jsonl``). Every row is stored, one study per file and shape
  (``<file stem>-MxNxK``, trials in file order), so the dashboard can show how the space was
  explored.
* ``h100.json``: best configs of the whole public suite (per shape m, n, k, config, ms, tflops,
  cublas_tflops, ratio, provenance), stored as ok measurements; then ``h100-suite.json``, the
  latest ``gemmtune bench`` (same row fields), the same way. Each shape's best config is the
  fastest of everything stored for it.

Everything goes through :func:`storage.record_measurements`, which stores the same rows and
best_config as live tuning's :func:`storage.record_measurement` one record at a time would.
Idempotent: a database that already holds measurements is left alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import storage
from api.lookup import tflops as _tflops
from tuner.errors import InputError
from tuner.families import parse_config
from tuner.shape import parse_shape

RESULTS_ENV_VAR = "GEMMTUNE_RESULTS_DIR"
SWEEP_FILE = "h100-sweep.jsonl"
SWEEP_GLOB = "h100-sweep*.jsonl"
SUITE_FILE = "h100.json"
BENCH_FILE = "h100-suite.json"
H100 = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)

Record = tuple[storage.DeviceIn, storage.ShapeIn, storage.MeasurementIn]


def results_dir() -> Path:
    """``$GEMMTUNE_RESULTS_DIR``, else ``benchmarks/results`` of this source checkout."""
    env = os.environ.get(RESULTS_ENV_VAR)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _device(provenance: Mapping[str, Any], fallback: storage.DeviceIn) -> storage.DeviceIn:
    name = provenance.get("device")
    sm_count = provenance.get("sm_count")
    cc = str(provenance.get("compute_capability", ""))
    arch = provenance.get("arch") or (f"sm_{cc.replace('.', '')}" if cc else fallback.arch)
    if isinstance(name, str) and isinstance(sm_count, int):
        return storage.DeviceIn(name, str(arch), sm_count)
    return fallback


def sweep_records(path: Path) -> Iterator[Record]:
    """Rows of a sweep table as storage inputs, one study per shape."""
    header: dict[str, Any] = {}
    trial: dict[str, int] = {}
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path.name} line {number}: {exc}") from None
            if row.get("kind") == "header":
                header = row
                continue
            shape = parse_shape(row["shape"])
            provenance = {
                **header.get("provenance", {}),
                "source": f"benchmarks/results/{path.name}",
            }
            device = _device({**provenance, "arch": header.get("arch")}, H100)
            number_in_study = trial.get(row["shape"], 0)
            trial[row["shape"]] = number_in_study + 1
            status = row.get("status", "ok")
            ms = row.get("ms") if status == "ok" else None
            cublas_ms = row.get("cublas_ms")
            yield (
                device,
                storage.ShapeIn(shape.m, shape.n, shape.k),
                storage.MeasurementIn(
                    family=row["family"],
                    config_name=row["config_name"],
                    params=parse_config(row["config_name"]).as_dict(),
                    status=status,
                    reason=row.get("reason") or (None if status == "ok" else status),
                    ms=ms,
                    tflops=_tflops(shape.m, shape.n, shape.k, ms),
                    cublas_ms=cublas_ms,
                    cublas_tflops=_tflops(shape.m, shape.n, shape.k, cublas_ms),
                    rel_error=row.get("rel_error"),
                    registers=row.get("registers"),
                    smem_bytes=row.get("smem_bytes"),
                    occupancy=row.get("occupancy"),
                    study=f"{path.stem}-{row['shape']}",
                    trial_number=number_in_study,
                    provenance=provenance,
                ),
            )


def suite_records(path: Path) -> Iterator[Record]:
    """Per-shape best configs of ``h100.json`` (a list, or an object holding one) as inputs."""
    data = json.loads(path.read_text())
    top: Mapping[str, Any] = data if isinstance(data, dict) else {}
    rows: Any = data
    if isinstance(data, dict):
        rows = next((data[key] for key in ("results", "shapes", "rows", "best") if key in data), [])
    for row in rows:
        m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
        name = row.get("config") or row["config_name"]
        config = parse_config(name)
        provenance = {**top.get("provenance", {}), **(row.get("provenance") or {})}
        provenance.setdefault("source", f"benchmarks/results/{path.name}")
        ms = float(row["ms"])
        cublas_tf = row.get("cublas_tflops")
        ratio = row.get("ratio")
        cublas_ms = None
        if cublas_tf:
            cublas_ms = 2.0 * m * n * k / (float(cublas_tf) * 1e12) * 1e3
        yield (
            _device(provenance, H100),
            storage.ShapeIn(m, n, k),
            storage.MeasurementIn(
                family=config.family,
                config_name=config.name,
                params=config.as_dict(),
                ms=ms,
                tflops=row.get("tflops") or _tflops(m, n, k, ms),
                cublas_ms=cublas_ms,
                cublas_tflops=cublas_tf,
                ratio=ratio,
                provenance=provenance,
            ),
        )


def preload(sessions: sessionmaker[Session], directory: Path | None = None) -> int:
    """Store the committed results into an empty database; returns how many rows were stored."""
    folder = directory or results_dir()
    with sessions() as session:
        if session.scalar(select(func.count(storage.Measurement.id))):
            return 0
    records: list[Record] = []
    for sweep in sorted(folder.glob(SWEEP_GLOB)):
        records.extend(sweep_records(sweep))
    for name in (SUITE_FILE, BENCH_FILE):
        if (folder / name).is_file():
            records.extend(suite_records(folder / name))
    with sessions.begin() as session:
        storage.record_measurements(session, records)
    return len(records)
