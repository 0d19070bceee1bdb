"""Turning lookup answers and stored rows into response bodies (the routes stay thin)."""

from __future__ import annotations

from collections.abc import Iterable

import storage
from api import schemas
from api.lookup import Answer, kernel_source, launch_geometry, tflops
from tuner.families import get_family


def best_response(answer: Answer, include_source: bool) -> schemas.BestResponse:
    kernel = None
    if include_source:
        source = kernel_source(answer.name)
        sm_count = answer.device.sm_count if answer.device else None
        geo = launch_geometry(answer.name, answer.m, answer.n, answer.k, sm_count)
        kernel = schemas.KernelOut(
            entry=source.entry,
            code=source.code,
            grid=geo.grid,
            block=geo.block,
            dynamic_smem_bytes=geo.dynamic_smem_bytes,
            module_per_stream=get_family(answer.family).module_counters,
        )
    device = answer.device
    measured = answer.measured_on
    return schemas.BestResponse(
        m=answer.m,
        n=answer.n,
        k=answer.k,
        dtype=answer.dtype,
        layout=answer.layout,
        family=answer.family,
        params=dict(answer.params),
        name=answer.name,
        source=answer.source,
        distance=answer.distance,
        measured_on=None
        if measured is None
        else schemas.ShapeOut(m=measured[0], n=measured[1], k=measured[2]),
        ms=answer.ms,
        tflops=answer.tflops,
        cublas_tflops=answer.cublas_tflops,
        ratio=answer.ratio,
        device=None
        if device is None
        else schemas.DeviceOut(name=device.name, arch=device.arch, sm_count=device.sm_count),
        provenance=dict(answer.provenance),
        note=answer.note,
        kernel=kernel,
    )


def measurement_out(row: storage.Measurement) -> schemas.MeasurementOut:
    shape, dev = row.shape, row.device
    cublas_tf = row.cublas_tflops
    if cublas_tf is None:
        cublas_tf = tflops(shape.m, shape.n, shape.k, row.cublas_ms)
    return schemas.MeasurementOut(
        id=row.id,
        device=schemas.DeviceOut(name=dev.name, arch=dev.arch, sm_count=dev.sm_count),
        shape=schemas.ShapeOut(m=shape.m, n=shape.n, k=shape.k),
        dtype=shape.dtype,
        layout=shape.layout,
        family=row.family,
        config_name=row.config_name,
        params=dict(row.params),
        status=row.status,
        reason=row.reason,
        ms=row.ms,
        tflops=row.tflops if row.tflops is not None else tflops(shape.m, shape.n, shape.k, row.ms),
        cublas_tflops=cublas_tf,
        ratio=row.ratio,
        registers=row.registers,
        smem_bytes=row.smem_bytes,
        occupancy=row.occupancy,
        study=row.study,
        trial_number=row.trial_number,
        created_at=row.created_at.isoformat(),
    )


def study_trials(rows: Iterable[storage.Measurement]) -> list[schemas.Trial]:
    """Trials in order, each with the fastest ok time seen so far (the best-so-far curve)."""
    trials: list[schemas.Trial] = []
    best_ms: float | None = None
    best_tf: float | None = None
    for row in rows:
        shape = row.shape
        tf = row.tflops if row.tflops is not None else tflops(shape.m, shape.n, shape.k, row.ms)
        if row.status == "ok" and row.ms is not None and (best_ms is None or row.ms < best_ms):
            best_ms, best_tf = row.ms, tf
        trials.append(
            schemas.Trial(
                trial_number=row.trial_number,
                config_name=row.config_name,
                family=row.family,
                status=row.status,
                reason=row.reason,
                ms=row.ms,
                tflops=tf,
                registers=row.registers,
                occupancy=row.occupancy,
                best_so_far_ms=best_ms,
                best_so_far_tflops=best_tf,
            )
        )
    return trials


def study_out(name: str, rows: Iterable[storage.Measurement]) -> schemas.StudyOut:
    trials = study_trials(rows)
    ok = [t for t in trials if t.status == "ok" and t.ms is not None]
    best = min(ok, key=lambda t: t.ms or 0.0) if ok else None
    return schemas.StudyOut(study=name, trials=trials, best=best)
