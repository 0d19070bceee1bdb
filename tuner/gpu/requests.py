"""What the GPU worker process does for each request: measure, compare, probe.

Runs in the child process that owns the GPU (``tuner.gpu.worker``). Each shape gets random
operands and cuBLAS's answers for the correctness checks once (:class:`tuner.gpu.measure.Operands`);
every candidate of a study is verified against them and timed on them.

* :class:`Measure` (a study's candidate): verify, then one timed block of ours and, for the
  shape's first ``CUBLAS_WINDOW`` candidates and every ``CUBLAS_EVERY``-th after, one of cuBLAS,
  back to back. The cuBLAS time reported is the median of the last ``CUBLAS_WINDOW`` blocks of
  this shape, so each candidate's ratio is to cuBLAS timed during the study, not once per shape
  at the start (when the clocks may still be settling).
* :class:`Compare` (a study's finalists, ``gemmtune bench``): verify each kernel, then
  ``rounds`` rounds in which every kernel and cuBLAS are timed alternately.
* :class:`Probe`: the device's rates (``tuner.gpu.probes``).

A vendor library's config (``cublaslt``) comes as its :class:`~tuner.core.config.Config` where
a compiled kernel would (nothing compiles): it is verified and timed the same way, through the
library (``tuner.gpu.vendor_launch``), and its reply carries the algorithm that ran
(``vendor``); a rank the library's heuristic does not offer for the shape is ``pruned``.
"""

from __future__ import annotations

import contextlib
import statistics
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.compile import CompiledKernel

# What a request measures: a compiled kernel, or a vendor library's config (nothing to compile).
Measurable = CompiledKernel | Config

# cuBLAS blocks whose median is a candidate's baseline (the latest one included).
CUBLAS_WINDOW = 5
# Once a shape's window is full, cuBLAS is timed beside every third candidate, not every one:
# the screening ranks candidates by their own times, its ratio to cuBLAS is for reading, and the
# finalists are timed alternately with cuBLAS anyway; a third of the cuBLAS blocks after the
# first five leaves the device that much more of a study's time for its candidates.
CUBLAS_EVERY = 3
# Shapes whose operands a worker keeps (a study or a bench works on one at a time).
KEPT_SHAPES = 2
OPERAND_SEED = 12345
# Kernel time of the cuBLAS block run (and thrown away) when a shape's operands are made: the first
# block on a new shape pays cuBLAS's set-up and the clocks' ramp, and once skewed the first
# candidate's ratio (a warptile screened at 4.96x on the H100, the same config at 0.97x later).
SETTLE_MS = 15.0


@dataclass(frozen=True)
class Measure:
    """Verify ``compiled`` (a kernel, or a vendor config) on ``shape``, then time it and cuBLAS
    for ``budget_ms`` each."""

    compiled: Measurable
    shape: Shape
    budget_ms: float


@dataclass(frozen=True)
class Compare:
    """Verify each kernel, then time every kernel and cuBLAS alternately for ``rounds`` rounds
    (``budget_ms`` of launches per timed block) on the same operands."""

    kernels: tuple[Measurable, ...]
    shape: Shape
    rounds: int
    budget_ms: float


@dataclass(frozen=True)
class Probe:
    """Measure the device's rates."""


@dataclass
class ShapeState:
    """A shape's operands and its recent cuBLAS times, kept by the worker between requests."""

    operands: Any
    cublas_ms: deque[float] = field(default_factory=lambda: deque(maxlen=CUBLAS_WINDOW))
    measured: int = 0  # candidates measured on the shape


class WorkerState:
    """Per-process state of the worker: the last few shapes' operands."""

    def __init__(self) -> None:
        self.shapes: OrderedDict[Shape, ShapeState] = OrderedDict()

    def shape(self, shape: Shape) -> ShapeState:
        from tuner.gpu.measure import Operands

        state = self.shapes.get(shape)
        if state is None:
            if len(self.shapes) >= KEPT_SHAPES:
                while len(self.shapes) >= KEPT_SHAPES:
                    self.shapes.popitem(last=False)
                release_cached_memory()
            state = self.shapes[shape] = ShapeState(Operands.make(shape, OPERAND_SEED))
            _settle_cublas(state.operands)
        self.shapes.move_to_end(shape)
        return state


def release_cached_memory() -> None:
    """Give the device memory CuPy's pool keeps for reuse back to the driver. A worker tunes
    shape after shape, each of other sizes: the operands of shapes let go stay in the pool, and
    after a few large ones (a 128256-row vocabulary head's are gigabytes) the device is full for
    every other process on it (compile processes, the next worker started after a failure)."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def _settle_cublas(ops: Any) -> None:
    """One cuBLAS block on a shape's new operands, not kept in its window."""
    from tuner.gpu.measure import time_launches

    time_launches(lambda: ops.cublas(1.0, 0.0, ops.out), budget_ms=SETTLE_MS, warmup=1)


WARM_UP_SHAPE = Shape(64, 64, 64)


def warm_up(state: WorkerState) -> None:
    """Run once what every measurement needs (random operands, cuBLAS, the error norm, the L2
    flush), so CuPy compiles its own kernels and cuBLAS makes its handle before the first
    candidate waits for them. A failure here is left for the first real request to report."""
    from tuner.gpu.measure import relative_error, time_launches

    with contextlib.suppress(Exception):  # the request that meets it again reports it
        ops = state.shape(WARM_UP_SHAPE).operands
        relative_error(ops.references[0], ops.references[1])
        time_launches(lambda: ops.cublas(1.0, 0.0, ops.out), 1.0, 1, 1, 1)
    state.shapes.pop(WARM_UP_SHAPE, None)


def handle(request: object, state: WorkerState) -> Any:
    """Answer one request (raises on a CUDA error: the caller ends the process)."""
    if isinstance(request, Measure):
        return measure(request, state)
    if isinstance(request, Compare):
        return compare(request, state)
    if isinstance(request, Probe):
        from tuner.gpu.probes import probe_rates

        return probe_rates()
    raise TypeError(f"unknown request {type(request).__name__}")


def _wrong(check: Any) -> dict[str, Any]:
    return {"status": "wrong_result", "reason": check.reason, "rel_error": check.rel_error}


def _loaded(item: Measurable) -> tuple[Any, Any]:
    """The launchable kernel and source of what a request measures."""
    if isinstance(item, Config):
        from tuner.gpu.vendor_launch import make_vendor_kernel, vendor_source

        return make_vendor_kernel(item), vendor_source(item)
    from tuner.gpu.nvrtc import load_kernel

    return load_kernel(item), item.source


def _vendor_identity(kernel: Any) -> dict[str, Any]:
    """The reply's ``vendor`` entry: the algorithm a vendor kernel ran (empty for ours)."""
    from tuner.gpu.default_call import DefaultCall
    from tuner.gpu.vendor_launch import VendorKernel

    vendor = isinstance(kernel, VendorKernel | DefaultCall)
    return {"vendor": kernel.identity()} if vendor else {}


def _checked(kernel: Any, source: Any, shape: Shape, ops: Any) -> Any:
    """:func:`tuner.gpu.measure.verify`, or the ``pruned`` reply of a vendor rank the library
    does not offer for the shape (raised before anything ran)."""
    from tuner.gpu.cublaslt import LtUnavailable
    from tuner.gpu.measure import verify

    try:
        return verify(kernel, source, shape, operands=ops)
    except LtUnavailable as exc:
        return {"status": "pruned", "reason": str(exc)}


def measure(request: Measure, state: WorkerState) -> dict[str, Any]:
    """Verify, then time one kernel and cuBLAS back to back on the shape's operands."""
    from tuner.gpu.measure import launch, time_launches

    shape = request.shape
    kept = state.shape(shape)
    ops = kept.operands
    kernel, source = _loaded(request.compiled)
    check = _checked(kernel, source, shape, ops)
    if isinstance(check, dict):
        return check
    if not check.ok:
        return _wrong(check)
    # One warm-up launch each: the kernel has just run twice to be verified, and cuBLAS ran
    # for the candidate before.
    ours = time_launches(
        lambda: launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, ops.out),
        budget_ms=request.budget_ms,
        warmup=1,
    )
    kept.measured += 1
    if len(kept.cublas_ms) < CUBLAS_WINDOW or kept.measured % CUBLAS_EVERY == 0:
        theirs = time_launches(
            lambda: ops.cublas(1.0, 0.0, ops.out), budget_ms=request.budget_ms, warmup=1
        )
        kept.cublas_ms.append(theirs.median_ms)
    return {
        "status": "ok",
        "rel_error": check.rel_error,
        "ms": ours.median_ms,
        "cublas_ms": statistics.median(kept.cublas_ms),
        "repeats": ours.repeats,
        **_vendor_identity(kernel),
    }


def compare(request: Compare, state: WorkerState) -> list[dict[str, Any]]:
    """Verify every kernel, then alternate: (kernel 1, cuBLAS, kernel 2, cuBLAS, ...) per round.
    One reply per kernel, in order; a kernel that fails its check is never timed."""
    from tuner.gpu.measure import launch, time_launches

    shape = request.shape
    ops = state.shape(shape).operands
    replies: list[dict[str, Any]] = []
    timed: list[tuple[int, Any, Any]] = []
    for index, item in enumerate(request.kernels):
        kernel, source = _loaded(item)
        check = _checked(kernel, source, shape, ops)
        if isinstance(check, dict):
            replies.append(check)
            continue
        if not check.ok:
            replies.append(_wrong(check))
            continue
        replies.append(
            {
                "status": "ok",
                "rel_error": check.rel_error,
                "ms_rounds": [],
                "cublas_ms_rounds": [],
                **_vendor_identity(kernel),
            }
        )
        timed.append((index, kernel, source))

    def ours(kernel: Any, source: Any) -> None:
        launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, ops.out)

    def call() -> None:
        ops.cublas(1.0, 0.0, ops.out)

    if timed:
        # One block of the default call, not kept: the GPU has idled through the checks, and a
        # power-limited GPU runs the first block after an idle spell at clocks the next blocks do
        # not get (H200, 8192^3 FP16 in 30 ms blocks: the first-timed kernel 11 % faster than in
        # 100 ms blocks, cuBLAS right after it 2.5 %: h200-block-length-2026-11-28.json).
        time_launches(call, budget_ms=request.budget_ms)
    for _ in range(request.rounds):
        for index, kernel, source in timed:
            mine = time_launches(partial(ours, kernel, source), budget_ms=request.budget_ms)
            theirs = time_launches(call, budget_ms=request.budget_ms)
            replies[index]["ms_rounds"].append(mine.median_ms)
            replies[index]["cublas_ms_rounds"].append(theirs.median_ms)
    return replies
