"""The study's recorder on a SQL database (SQLite or PostgreSQL), through ``storage``.

Each evaluated candidate is committed in its own transaction before the study moves on, so a
crash (even kill -9) loses at most the candidate being measured. Claims make several workers on
one study skip each other's candidates.
"""

from __future__ import annotations

import os
import socket

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.errors import InputError
from tuner.evaluate import Result
from tuner.families import parse_config
from tuner.resources import DeviceLimits
from tuner.shape import Shape


def device_in(device: DeviceLimits) -> storage.DeviceIn:
    return storage.DeviceIn(name=device.name, arch=device.arch, sm_count=device.sm_count)


def shape_in(shape: Shape) -> storage.ShapeIn:
    return storage.ShapeIn(shape.m, shape.n, shape.k, shape.dtype, shape.layout)


def measurement_in(
    result: Result, study: str | None, trial_number: int | None
) -> storage.MeasurementIn:
    """A result as storage records it, as a trial of ``study``."""
    return storage.MeasurementIn(
        family=result.family,
        config_name=result.config_name,
        params=result.params,
        status=result.status,
        reason=result.reason,
        ms=result.ms,
        tflops=result.tflops,
        cublas_ms=result.cublas_ms,
        cublas_tflops=result.cublas_tflops,
        ratio=result.ratio,
        rel_error=result.rel_error,
        registers=result.registers,
        smem_bytes=result.smem_bytes,
        occupancy=result.occupancy,
        study=study,
        trial_number=trial_number,
        provenance=result.provenance,
    )


def _result(row: storage.Measurement) -> Result:
    return Result(
        row.config_name,
        row.family,
        dict(row.params),
        row.status,
        row.reason,
        ms=row.ms,
        tflops=row.tflops,
        cublas_ms=row.cublas_ms,
        cublas_tflops=row.cublas_tflops,
        ratio=row.ratio,
        rel_error=row.rel_error,
        registers=row.registers,
        smem_bytes=row.smem_bytes,
        occupancy=row.occupancy,
        provenance=dict(row.provenance),
    )


class SqlRecorder:
    """Records into the gemmtune schema; the schema must be at head (``gemmtune db upgrade``)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self.worker = f"{socket.gethostname()}:{os.getpid()}"

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
    ) -> None:
        measurement = measurement_in(result, study, trial_number)
        with self.sessions.begin() as session:
            storage.record_measurement(session, device_in(device), shape_in(shape), measurement)

    def evaluated(self, study: str) -> dict[str, Result]:
        with self.sessions() as session:
            rows = storage.measurements_for_study(session, study)
            return {row.config_name: _result(row) for row in rows}

    def claim(self, study: str, config_name: str) -> bool:
        with self.sessions.begin() as session:
            return storage.claim_candidate(session, study, config_name, self.worker)

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        """Best configs of the nearest tuned shapes on this device (never this shape itself)."""
        with self.sessions() as session:
            rows = storage.best_configs(session, device.name)
        scored = sorted(
            (
                storage.shape_distance(
                    (shape.m, shape.n, shape.k), (r.shape.m, r.shape.n, r.shape.k)
                ),
                r.measurement.config_name,
            )
            for r in rows
            if (r.shape.m, r.shape.n, r.shape.k) != (shape.m, shape.n, shape.k)
        )
        names: list[str] = []
        for _, name in scored:
            try:
                parse_config(name)
            except InputError:  # a name written by an older tuner with other parameters
                continue
            if name not in names:
                names.append(name)
        return names[:limit]
