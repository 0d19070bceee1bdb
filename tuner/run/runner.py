"""One shape's study as a tune starts it: the default families, the warm-start policy, the
device's rates for the cost model, and the study itself, built from the tune's request.

``tuner.run.tune`` runs a request; each of its workers (``tuner.run.multi_gpu``) builds the study
of the shape it takes with :func:`build_study` and reports progress to whoever asks (a progress
bar, a log).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.answers.default_rule import default_config
from tuner.answers.device_kind import DeviceSpec
from tuner.answers.index import load_snapshot
from tuner.core.accuracy import DEFAULT_ACCURACY, accepted, loosest
from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.evaluators import EvaluatorKind
from tuner.core.shape import Shape
from tuner.data.probed_rates import read_probed, write_probed
from tuner.gpu.selection import cuda_device_count
from tuner.kernels.families import FAMILIES, checked_config, repinned
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates, table_rates
from tuner.run.default_families import (
    DEFAULT_EMULATED_FAMILIES,
    DEFAULT_FAMILIES,
    DEFAULT_HALF_FAMILIES,
    VENDOR_FAMILIES,
)
from tuner.run.request import TuneRequest
from tuner.search.evaluator import Evaluator
from tuner.search.priors import committed_starts
from tuner.search.recorder import Recorder
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Progress, Study

if TYPE_CHECKING:
    from tuner.gpu.worker import GpuEvaluator
    from tuner.kernels.compile_pool import CompilePools


class ProgressReport(Protocol):
    """Told when a study starts (its label and how many candidates it will evaluate) and after
    every evaluated candidate."""

    def start(self, label: str, total: int) -> None: ...

    def update(self, progress: Progress) -> None: ...


def check_answerable(
    evaluator: Evaluator,
    shapes: Sequence[Shape],
    families: Sequence[str] = (),
    accuracy: str = DEFAULT_ACCURACY,
) -> None:
    """Refuse shapes that none of the named families (else the defaults at the floor
    ``accuracy``) computes (:func:`check_families_compute`), and shapes (or named families) a
    replay has no measurements of, before any study runs; a GPU evaluator answers any."""
    from tuner.search.replay import ReplayEvaluator

    for shape in shapes:
        check_families_compute(shape, families or default_families(evaluator, shape, accuracy))

    if isinstance(evaluator, ReplayEvaluator):
        for shape in shapes:
            evaluator.check_covers(shape, families)


def start_gpu(
    purpose: str,
    budget_ms: float = 100.0,
    device_index: int = 0,
    pools: CompilePools | None = None,
    sharers: int = 1,
    compile_workers: int | None = None,
) -> GpuEvaluator:
    """The GPU evaluator of device ``device_index`` (compiling on ``pools`` when given, shared
    by ``sharers`` evaluators, else on ``compile_workers`` processes of its own, default every
    core but one), or an :class:`InputError` saying in one line why there is none (``purpose``
    names what needed it)."""
    count = cuda_device_count(purpose)
    if not 0 <= device_index < count:
        raise InputError(f"device {device_index} is not among the {count} visible (0..{count - 1})")
    from tuner.gpu.worker import GpuEvaluator

    try:
        return GpuEvaluator(
            device_index,
            budget_ms=budget_ms,
            compile_workers=compile_workers,
            pools=pools,
            sharers=sharers,
        )
    except (ImportError, RuntimeError) as exc:
        raise InputError(f"{purpose} needs a CUDA GPU with CuPy: {exc}") from None


def families_for(shape: Shape, accuracy: str = DEFAULT_ACCURACY) -> tuple[str, ...]:
    """The default families that compute ``shape``'s dtype and layout in a class the floor
    ``accuracy`` accepts: ``DEFAULT_FAMILIES`` for float32 NN, ``DEFAULT_HALF_FAMILIES`` for
    half inputs, and with floor ``bf16x3`` ``DEFAULT_EMULATED_FAMILIES`` for float32; then
    ``VENDOR_FAMILIES`` where any of them computes the shape."""
    every = (*DEFAULT_FAMILIES, *DEFAULT_HALF_FAMILIES, *DEFAULT_EMULATED_FAMILIES)
    allowed = accepted(accuracy)
    kernels = tuple(
        f
        for f in every
        if FAMILIES[f].unsupported(shape) is None and FAMILIES[f].accuracy in allowed
    )
    return (*kernels, *VENDOR_FAMILIES) if kernels else kernels


def default_families(
    evaluator: Evaluator, shape: Shape | None = None, accuracy: str = DEFAULT_ACCURACY
) -> tuple[str, ...]:
    """The families searched when none are named: a replay's own (it has no answer for any
    other), else those of :func:`families_for` (``DEFAULT_FAMILIES`` and the vendor's without a
    shape)."""
    if evaluator.families:
        return evaluator.families
    if shape is None:
        return (*DEFAULT_FAMILIES, *VENDOR_FAMILIES)
    return families_for(shape, accuracy)


def check_families_compute(shape: Shape, families: Sequence[str]) -> None:
    """Raise naming the dtype and layout when none of ``families`` computes ``shape`` (its
    study would have no candidate at all), and which families do, with their classes. The
    vendor library counts only for a dtype and layout some kernel family computes
    (:data:`VENDOR_FAMILIES`: it is measured beside kernels, never in place of them)."""
    kernels_compute = any(f.unsupported(shape) is None and not f.vendor for f in FAMILIES.values())
    if kernels_compute and any(FAMILIES[f].unsupported(shape) is None for f in families):
        return
    able = [
        name if family.accuracy == DEFAULT_ACCURACY else f"{name} (accuracy {family.accuracy})"
        for name, family in FAMILIES.items()
        if family.unsupported(shape) is None and not family.vendor
    ]
    raise InputError(
        f"no family of {', '.join(families) or 'the defaults'} computes {shape.dtype} inputs "
        f"in layout {shape.layout} writing {shape.out} C; "
        + (f"use {', '.join(able)}" if able else "no family does yet")
    )


def loosest_of(families: Sequence[str]) -> str:
    """The accuracy floor a study of ``families`` searches at: the least exact of their
    classes."""
    return loosest(FAMILIES[f].accuracy for f in families)


def untuned_answer(
    sessions: sessionmaker[Session],
    device: DeviceLimits,
    shape: Shape,
    accuracy: str = DEFAULT_ACCURACY,
) -> Config:
    """The config the service would answer for ``shape`` on ``device`` at the floor
    ``accuracy`` before this study (``tuner.answers.best``: this device's tuned shape or nearest
    one, else a device of the same kind, else the default rule)."""
    with sessions() as session:
        tuning = load_snapshot(session)
    spec = DeviceSpec(device.name, device.arch, device.sm_count)
    answer = tuning.answer(
        shape.m,
        shape.n,
        shape.k,
        shape.dtype,
        shape.layout,
        spec,
        accuracy=accuracy,
        out_dtype=shape.out,
    )
    try:
        return checked_config(answer.name)
    except InputError:  # a stored name this version of the tuner cannot read
        return default_config(
            shape.m, shape.n, shape.dtype, shape.layout, accuracy, out_dtype=shape.out
        )


def warm_starts(
    recorder: Recorder,
    device: DeviceLimits,
    shape: Shape,
    first: Config,
    limit: int,
    families: Sequence[str] | None = None,
) -> list[Config]:
    """What a new study evaluates first: ``first`` (the untuned answer), then up to ``limit``
    more of ``families`` (default: any), each pinned for ``shape`` (its DTYPE, LAYOUT and OUT:
    a suite measured writing float32 C starts a study of a half C): the committed suite's best
    for this shape on this kind of GPU, the committed sweep tables' fastest configs of this
    shape (``tuner.search.priors``), the best configs of the nearest shapes tuned in this
    database, and the committed bests of the
    nearest other shapes."""
    names: list[str] = []
    if limit:
        committed = committed_starts(device, shape)
        same = [name for distance, name in committed if distance == 0.0]
        others = [name for distance, name in committed if distance > 0.0]
        names = same + recorder.neighbours(device, shape, limit) + others
    starts = [first]
    for name in dict.fromkeys(names):
        if len(starts) > limit:
            break
        try:
            config = repinned(checked_config(name), shape)
        except InputError:
            continue
        # repinned: a start measured for another input type, layout or type of C is the same
        # tiles pinned for this shape; None where its family does not compute the shape.
        if config is None or config == first or config in starts:
            continue
        if families is None or config.family in families:
            starts.append(config)
    return starts


def device_rates(recorder: Recorder, evaluator: Evaluator, notes: list[str]) -> DeviceRates | None:
    """The device's rates for the cost model: stored in the database, else kept from an
    earlier command's probe of this GPU (``tuner.data.probed_rates``, GPU evaluators only:
    other kinds probe nothing real), else probed now; whichever it was is stored. None when
    there are none; ``notes`` says which."""
    device = evaluator.device
    rates = recorder.rates(device)
    if rates is None:
        on_gpu = evaluator.kind == EvaluatorKind.GPU.value
        rates = read_probed(device, evaluator.provenance) if on_gpu else None
        if rates is None:
            rates = evaluator.probe()
            if rates is not None and on_gpu:
                write_probed(device, evaluator.provenance, rates)
        if rates is not None:
            recorder.record_rates(device, rates)
    if rates is not None:
        notes.append(f"cost model on the rates {rates.source}")
        return rates
    table = table_rates(device)
    if table is not None:
        notes.append(f"no probed rates for {device.name}: cost model on the {table.source}")
    else:
        notes.append(
            f"no probed rates for {device.name} and no table for {device.arch}: the cost model "
            "ranks by kernel structure alone and the study leans on its own measurements"
        )
    return None


def build_study(
    request: TuneRequest,
    shape: Shape,
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    worker: str | None = None,
    joined: int = 0,
    claim_lease_s: float = storage.CLAIM_LEASE_S,
) -> tuple[Study, list[str]]:
    """The study of ``shape`` as ``request`` asks for it, on ``evaluator``, recording into the
    database behind ``sessions`` (Optuna's tables in the same database) as ``worker`` (a label
    that tells apart the workers of one process; the ``joined``-th to join this study; its claims
    lapse ``claim_lease_s`` after its last heartbeat), and what the user should know about it.
    The study is built, not prepared (:meth:`Study.prepare`)."""
    families = request.families or default_families(evaluator, shape, request.accuracy)
    check_families_compute(shape, families)
    recorder = SqlRecorder(sessions, claim_lease_s, worker=worker)
    notes: list[str] = []
    rates = device_rates(recorder, evaluator, notes)
    first = untuned_answer(sessions, evaluator.device, shape, loosest_of(families))
    study = Study(
        shape,
        families,
        evaluator,
        recorder,
        sampler=request.sampler,
        seed=request.seed_for(joined),
        optuna_storage=storage.database_url(request.database_url),
        starts=warm_starts(recorder, evaluator.device, shape, first, request.warm_start, families),
        rates=rates,
        joined=joined,
    )
    return study, notes
