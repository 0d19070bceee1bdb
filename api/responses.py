"""Turning answers and stored rows into response bodies (the routes stay thin)."""

from __future__ import annotations

from collections.abc import Iterable

import storage
from api import schemas
from tuner.answers.answer import Answer
from tuner.answers.device_kind import DeviceSpec
from tuner.answers.index import BestIndex, Snapshot
from tuner.kernels.families import get_family


def asked_device(body: schemas.BestRequest) -> DeviceSpec | None:
    """The device a best-config request is for (validated by the schema), or None."""
    if body.device is None:
        return None
    return DeviceSpec(body.device, body.device_arch, body.device_sm_count)


def answer_headers(index: BestIndex, snapshot: Snapshot) -> dict[str, str]:
    """What a best answer must say beside its body: stale data, skipped configs."""
    headers = {}
    if index.stale is not None:
        headers["X-Gemmtune-Stale"] = index.stale
    if snapshot.unreadable:
        headers["X-Gemmtune-Unreadable"] = (
            f"{len(snapshot.unreadable)} stored best config(s) skipped: this version cannot "
            "read them"
        )
    return headers


def best_response(answer: Answer, include_source: bool) -> schemas.BestResponse:
    # A vendor library's answer (cublaslt) has no source: its algorithm is in the provenance.
    vendor = get_family(answer.family).vendor
    kernel = kernel_out(answer) if include_source and not vendor else None
    return schemas.BestResponse(**answer.as_json(), kernel=kernel)


def kernel_out(answer: Answer) -> schemas.KernelOut:
    """The answer's source and launch recipe (``Answer.recipe``) as the ``kernel`` block."""
    source, recipe = answer.kernel(), answer.recipe()
    m, n, k = recipe.kernel_shape
    return schemas.KernelOut(
        entry=recipe.entry,
        code=source.code,
        signature=recipe.signature,
        grid=recipe.grid,
        grid_rule=recipe.grid_rule,
        block=recipe.block,
        dynamic_smem_bytes=recipe.dynamic_smem_bytes,
        module_per_stream=recipe.module_per_stream,
        arguments=recipe.parameter_list,
        argument_list=[
            schemas.KernelArgumentOut(
                name=a.parameter.name,
                type=a.parameter.ctype,
                meaning=a.parameter.meaning,
                value=a.value,
                passes=a.passes,
            )
            for a in recipe.arguments
        ],
        kernel_shape=schemas.ShapeOut(m=m, n=n, k=k),
        buffers=[
            schemas.OperandBufferOut(
                operand=b.operand,  # type: ignore[arg-type]
                array=b.array,
                buffer=b.buffer,
                element=b.element,
                split_parts=list(b.split_parts),
                part_offset=b.part_offset,
                copy_back=b.copy_back,
            )
            for b in recipe.buffers
        ],
        before_launch=list(recipe.before),
        after_launch=list(recipe.after),
        compile=schemas.CompileOut(
            arch=recipe.compile.arch,
            options=list(recipe.compile.options),
            defines=dict(recipe.compile.defines),
            note=recipe.compile.note,
        ),
        types=dict(recipe.types),
    )


def measurement_out(row: storage.Measurement) -> schemas.MeasurementOut:
    shape, dev = row.shape, row.device
    return schemas.MeasurementOut(
        id=row.id,
        device=schemas.DeviceOut(name=dev.name, arch=dev.arch, sm_count=dev.sm_count),
        shape=schemas.ShapeOut(m=shape.m, n=shape.n, k=shape.k),
        dtype=shape.dtype,
        layout=shape.layout,
        out_dtype=shape.out_dtype,
        **storage.measurement_values(row, derive_tflops=True),
    )


def study_trials(rows: Iterable[storage.Measurement]) -> list[schemas.Trial]:
    """Trials in order, each with the fastest ok time seen so far (the best-so-far curve)."""
    trials: list[schemas.Trial] = []
    best_ms: float | None = None
    best_tf: float | None = None
    for row in rows:
        values = storage.measurement_values(row, derive_tflops=True)
        ms = values["ms"]
        if row.status == "ok" and ms is not None and (best_ms is None or ms < best_ms):
            best_ms, best_tf = ms, values["tflops"]
        trials.append(
            schemas.Trial(
                **{name: values[name] for name in _TRIAL_FIELDS},
                best_so_far_ms=best_ms,
                best_so_far_tflops=best_tf,
            )
        )
    return trials


# The measurement fields a trial shows (the rest of schemas.Trial is the best so far).
_TRIAL_FIELDS = tuple(
    name for name in schemas.Trial.model_fields if name in storage.MEASUREMENT_FIELDS
)


def study_out(name: str, rows: Iterable[storage.Measurement]) -> schemas.StudyOut:
    trials = study_trials(rows)
    ok = [t for t in trials if t.status == "ok" and t.ms is not None]
    best = min(ok, key=lambda t: t.ms or 0.0) if ok else None
    return schemas.StudyOut(study=name, trials=trials, best=best)
