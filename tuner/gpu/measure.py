"""Kernel -> verified timing on the GPU, side by side with cuBLAS (strict FP32 sums).

Correctness first: a kernel is compared with cuBLAS on fresh random normal data, by relative
Frobenius error, once with alpha != 1 and beta != 0, and once with beta == 0 and C poisoned with
NaN (every element must be written, and C must not be read). Only then is it timed: CUDA events
around each launch, warm-up, repeats until a time budget, L2 flushed before every repeat, median.
cuBLAS is timed the same way in the same process.

FP16 and BF16 inputs (FP32 sums; C float32, float16 or bfloat16, the shape's ``out_dtype``): the
reference is cuBLAS in the same input type writing the same type of C, with FP32 sums
(``cublasGemmEx``, ``CUBLAS_COMPUTE_32F``, never TF32), on the same rounded inputs and the same
C, so only the order of the FP32 sums differs (and, for a half C, which way an element rounds
where the two sums straddle a rounding boundary); and an FP32 SGEMM on the float32 values before
they were rounded, which bounds what the input type and C's type cost. cuBLAS is timed writing
the same type of C. Operands are stored in the
shape's layout (a transposed operand is a transposed array, as ``x @ W.T`` hands it over).

A family of a less exact accuracy class (``tuner.core.accuracy``: float32 emulated on the BF16
tensor cores) is held to the FP32 tolerance plus its class's allowance, never more.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner.core.accuracy import allowance
from tuner.core.shape import UNIT_ROUNDOFF, Shape
from tuner.gpu import error_norm, half_arrays
from tuner.gpu.stream_gate import held_stream
from tuner.kernels.families import get_family, is_vendor, rewrites_operands
from tuner.kernels.launch_recipe import kernel_parameters
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import KernelSource

FP32_EPS = 2.0**-24
# Timed repeats enqueued behind one stream gate: each is a flush, two event records and a
# launch's kernels (at most four: a padded launch's copies in and back, and the kernel), within
# tuner.gpu.stream_gate.GATED_LAUNCHES.
REPEATS_PER_GATE = 25
# Tensor cores add FP32 products in a different order (and, within one mma, with their own
# rounding) than cuBLAS's kernel for the same inputs: twice the FP32 allowance for half inputs.
HALF_SUM_FACTOR = 2


def tolerance(k: int, dtype: str = "float32", out_dtype: str = "float32") -> float:
    """Allowed relative error against cuBLAS in the same dtype writing the same type of C: FP32
    rounding of the sums, which grows like sqrt(K) for random data (both sides hold the same
    inputs and exact products).

    Stays an order of magnitude under what TF32 (10-bit mantissa) would produce, so a kernel that
    silently used TF32 would fail; for half inputs, under what rounding C to the input type
    would (2^-11 or 2^-8) up to K of about 10^6.

    A half C (``out_dtype`` float16 or bfloat16): both sides round their FP32 result once to C's
    type. Where the two FP32 sums (relative distance about ``sums``, the FP32 allowance) straddle
    a rounding boundary, which happens for a fraction of about sums / (2u) of the elements (u:
    C's unit roundoff), those elements differ by one step, 2u relative: the Frobenius error is
    then about sqrt(2u * sums), added to the sums' own. That stays under u for K up to about
    10^5, so a kernel that truncated instead of rounding (off by about u on half the elements),
    or rounded twice, would fail.
    """
    factor = 1 if dtype == "float32" else HALF_SUM_FACTOR
    sums = factor * max(1e-5, 8 * FP32_EPS * math.sqrt(k))
    if out_dtype == "float32":
        return sums
    return sums + math.sqrt(2 * UNIT_ROUNDOFF[out_dtype] * sums)


def reference_tolerance(k: int, dtype: str, out_dtype: str = "float32") -> float:
    """Allowed relative error of a half-input GEMM against FP32 on the values before rounding:
    each product is off by the two inputs' rounding (about 0.8 unit roundoffs in the Frobenius
    norm for random data, whatever K), plus the FP32 sums of :func:`tolerance`, plus, for a half
    C, its rounding to C's type (at most one unit roundoff of C's type per element)."""
    rounding = 0.0 if out_dtype == "float32" else UNIT_ROUNDOFF[out_dtype]
    return 4 * UNIT_ROUNDOFF[dtype] + tolerance(k, dtype) + rounding


def _cupy() -> Any:
    import cupy

    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: the cuBLAS reference would not be strict FP32")
    return cupy


def stored_shapes(shape: Shape) -> tuple[tuple[int, int], tuple[int, int]]:
    """A's and B's arrays as the layout stores them (row-major)."""
    a = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    return a, b


def random_values(shape: Shape, seed: int | None = None) -> tuple[Any, Any, Any]:
    """Fresh float32 A, B (as the layout stores them) and C with standard normal entries (never
    zeros), before any rounding to the input type."""
    cp = _cupy()
    rng = cp.random.default_rng(seed)
    a_shape, b_shape = stored_shapes(shape)
    a = rng.standard_normal(a_shape, dtype=cp.float32)
    b = rng.standard_normal(b_shape, dtype=cp.float32)
    c = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
    return a, b, c


def random_operands(shape: Shape, seed: int | None = None) -> tuple[Any, Any, Any]:
    """Fresh A, B in the shape's dtype and layout and C in its ``out_dtype``
    (:mod:`tuner.gpu.half_arrays`)."""
    a, b, c = random_values(shape, seed)
    return (
        half_arrays.from_float32(a, shape.dtype),
        half_arrays.from_float32(b, shape.dtype),
        half_arrays.from_float32(c, shape.out),
    )


def launch(
    kernel: Any,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """Run ``C = alpha*A@B + beta*C`` with a loaded kernel (asynchronous); a padded config
    (``_pad4``, ``_pad8``) through its padded buffers, copies included
    (``tuner.gpu.padded_launch``), as is a TMA kernel given an operand off 16 bytes; an
    emulated one after splitting A and B (``tuner.gpu.split_launch``); a vendor library's
    (``cublaslt``) through the library (``tuner.gpu.vendor_launch``: ``kernel`` is its
    :class:`VendorKernel`)."""
    if is_vendor(source.config.family):
        from tuner.gpu.vendor_launch import launch_vendor

        launch_vendor(kernel, source, shape, alpha, a, b, beta, c)
        return
    if rewrites_operands(source.config):
        from tuner.gpu.split_launch import launch_split

        launch_split(launch_kernel, kernel, source, shape, alpha, a, b, beta, c)
        return
    if source.config.pad or source.tensor_maps:
        # A TMA kernel cannot read an operand whose base or row pitch is off 16 bytes where it
        # lies: the padded launch copies such an operand (only such: on aligned arrays it is
        # the plain launch), so a view anywhere in memory runs, as with the other families.
        from tuner.gpu.padded_launch import launch_padded

        launch_padded(launch_kernel, kernel, source, shape, alpha, a, b, beta, c)
        return
    launch_kernel(kernel, source, shape, alpha, a, b, beta, c)


def launch_kernel(
    kernel: Any,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """Run the kernel itself on ``shape`` and these arrays, whatever the config's operand mode
    (asynchronous). The arguments go in the order of ``tuner.kernels.launch_recipe.
    kernel_parameters``, the one table the API's launch recipe is read from too. A kernel that
    takes leading dimensions gets each array's row pitch (its rows must be contiguous; a padded
    buffer's pitch is its padded row length). A kernel that reads A and B through TMA gets their
    tensor maps instead (``tuner.gpu.tensor_maps``)."""
    import numpy as np

    if source.tensor_maps:
        from tuner.gpu.tensor_maps import launch_tma

        launch_tma(kernel, source, shape, alpha, a, b, beta, c, sm_count())
        return
    family = get_family(source.config.family)
    geo = source.launch(shape, sm_count() if source.persistent else None)
    values: dict[str, Any] = {
        "M": np.int32(shape.m),
        "N": np.int32(shape.n),
        "K": np.int32(shape.k),
        "alpha": np.float32(alpha),
        "beta": np.float32(beta),
        "A": a,
        "B": b,
        "C": c,
    }
    if family.leading_dims:
        values.update(
            lda=np.int32(row_pitch(a)), ldb=np.int32(row_pitch(b)), ldc=np.int32(row_pitch(c))
        )
    else:
        for name, x in (("A", a), ("B", b), ("C", c)):
            if row_pitch(x) != x.shape[1]:
                raise ValueError(
                    f"{source.config.family} reads packed rows: {name} is a {x.shape[0]} x "
                    f"{x.shape[1]} view with a row pitch of {row_pitch(x)} (copy it, or use a "
                    "padded config or a family that takes leading dimensions)"
                )
    args = tuple(values[p.name] for p in kernel_parameters(family, shape.dtype))
    kernel(geo.grid, geo.block, args, shared_mem=geo.dynamic_smem_bytes)


def sm_count() -> int:
    """Streaming multiprocessors of the current device (persistent grids launch per SM)."""
    return _sm_count_of(_cupy().cuda.runtime.getDevice())


@functools.cache
def _sm_count_of(device: int) -> int:
    return int(_cupy().cuda.runtime.getDeviceProperties(device)["multiProcessorCount"])


def cublas_gemm(alpha: float, a: Any, b: Any, beta: float, c: Any) -> None:
    """The reference: ``c = alpha * a @ b + beta * c`` as one cuBLAS SGEMM call, in place.

    One ``cublasSgemm`` does the whole update (alpha, beta and the write into ``c``), as our
    kernels do: no temporary product and no extra elementwise pass over C, which would add a
    read and a write of C to cuBLAS's time. Row-major operands go in as the column-major
    product C^T = B^T A^T, so nothing is copied. FP32 math: CuPy's handle is in the default
    math mode, and :func:`_cupy` refuses to run with TF32 switched on from the environment.
    """
    _cupy()  # refuses TF32 from the environment
    from cupy import cublas

    cublas.gemm("N", "N", a, b, out=c, alpha=alpha, beta=beta)


def shape_gemm(shape: Shape, alpha: float, a: Any, b: Any, beta: float, c: Any) -> None:
    """cuBLAS's ``c = alpha * op(a) @ op(b) + beta * c`` for ``shape``'s dtype, layout and type
    of C: :func:`cublas_gemm` for float32 NN, ``cublasGemmEx`` with FP32 sums for the others."""
    _cupy()  # refuses TF32 from the environment
    if shape.is_default_kind:
        cublas_gemm(alpha, a, b, beta, c)
    else:
        half_arrays.gemm(shape, alpha, a, b, beta, c)


def relative_error(out: Any, ref: Any, dtype: str = "float32") -> float:
    """||out - ref||_F / ||ref||_F of two arrays of ``dtype`` (stored as
    :func:`tuner.gpu.half_arrays.from_float32` stores it), summed in float64 (no float64 copies
    of the matrices); NaN or inf anywhere gives inf.

    Contiguous arrays of the same size (every verification's) go to
    :func:`tuner.gpu.error_norm.relative_error`, which reads each as stored (a ``uint16`` array
    is BF16), so ``out`` and ``ref`` may be of different types there; anything else (views,
    broadcasting) is summed with CuPy's array operations."""
    cp = _cupy()
    if error_norm.summable(out, ref):  # as stored: no conversions, no CuPy-compiled kernels
        return error_norm.relative_error(out, ref)
    if dtype != "float32":
        out, ref = half_arrays.to_float32(out, dtype), half_arrays.to_float32(ref, dtype)
    diff = out - ref
    err2 = float(cp.sum(cp.square(diff), dtype=cp.float64))
    if not math.isfinite(err2):
        return math.inf
    ref2 = float(cp.sum(cp.square(ref), dtype=cp.float64))
    return math.sqrt(err2) / (math.sqrt(ref2) if ref2 > 0 else 1.0)


@dataclass(frozen=True)
class Verification:
    """Worst relative error over the checks against cuBLAS, and whether it passes the tolerance;
    for half inputs also against FP32 on the unrounded values (None for float32)."""

    rel_error: float
    tolerance: float
    reference_error: float | None = None
    reference_tolerance: float | None = None

    @property
    def ok(self) -> bool:
        within = self.rel_error <= self.tolerance
        if self.reference_error is None or self.reference_tolerance is None:
            return within
        return within and self.reference_error <= self.reference_tolerance

    @property
    def reason(self) -> str:
        """Why it failed, in one line (what the study records)."""
        if self.rel_error > self.tolerance:
            return f"relative error {self.rel_error:.2e} > {self.tolerance:.1e}"
        return (
            f"relative error against FP32 {self.reference_error:.2e} > "
            f"{self.reference_tolerance:.1e}"
        )


@dataclass(frozen=True)
class Operands:
    """Random A, B and C of one shape with cuBLAS's answers for the two checks of
    :func:`verify`, made once per shape: a study verifies every candidate against them, and
    times on ``a``, ``b`` and ``out``. ``c0``, the references and ``out`` are of the shape's
    ``out_dtype``; the FP32 references are float32."""

    shape: Shape
    a: Any
    b: Any
    c0: Any
    references: tuple[Any, Any]  # cuBLAS's C for each of CHECKS
    out: Any  # C for timed launches (beta = 0: written, never read)
    # Half inputs: FP32's C on the unrounded values for each of CHECKS (None for float32).
    fp32_references: tuple[Any, Any] | None = None

    @classmethod
    def make(cls, shape: Shape, seed: int | None = None) -> Operands:
        cp = _cupy()
        a32, b32, c32 = random_values(shape, seed)
        a = half_arrays.from_float32(a32, shape.dtype)
        b = half_arrays.from_float32(b32, shape.dtype)
        c0 = half_arrays.from_float32(c32, shape.out)
        fp32 = Shape(shape.m, shape.n, shape.k, "float32", shape.layout)
        references, fp32_references = [], []
        for alpha, beta in CHECKS:
            references.append(_reference(shape, alpha, a, b, beta, c0))
            if shape.dtype != "float32":
                # The same C as the kernel reads (rounded to its type), the sums unrounded.
                ref32 = half_arrays.to_float32(c0, shape.out)
                shape_gemm(fp32, alpha, a32, b32, beta, ref32)
                fp32_references.append(ref32)
        cp.cuda.get_current_stream().synchronize()
        return cls(
            shape,
            a,
            b,
            c0,
            (references[0], references[1]),
            cp.empty_like(c0),
            (fp32_references[0], fp32_references[1]) if fp32_references else None,
        )

    def cublas(self, alpha: float, beta: float, c: Any) -> None:
        """cuBLAS on these operands (:func:`shape_gemm`): the baseline timed beside a kernel."""
        shape_gemm(self.shape, alpha, self.a, self.b, beta, c)


def _reference(shape: Shape, alpha: float, a: Any, b: Any, beta: float, c0: Any) -> Any:
    """cuBLAS's C for one check: the same GEMM in FP32 (cublasGemmEx, FP32 sums, on the same
    inputs and the same C) written as float32 and, for a half C, rounded once to C's type.

    Not cuBLAS writing the half C itself: on some shapes its half C is not the FP32 result
    rounded once (on an H200, 130x1028x1030 BF16 NT writing BF16 came out 2.6e-3 from it, where
    both hmma and wgmma were within 1e-4 on every other shape), and a reference must be what a
    correct kernel writes. cuBLAS writing the half C stays the timed baseline."""
    if shape.out == "float32":
        ref = half_arrays.device_copy(c0)
        shape_gemm(shape, alpha, a, b, beta, ref)
        return ref
    wide = half_arrays.to_float32(c0, shape.out)
    shape_gemm(shape.with_out("float32"), alpha, a, b, beta, wide)
    return half_arrays.from_float32(wide, shape.out)


# (alpha, beta) of the two checks: C read and scaled; C poisoned with NaN and never read.
CHECKS = ((0.5, 3.0), (1.0, 0.0))


def verify(
    kernel: Any,
    source: KernelSource,
    shape: Shape,
    seed: int | None = None,
    operands: Operands | None = None,
) -> Verification:
    """Compare with cuBLAS twice: (alpha=0.5, beta=3) on random C; (1, 0) on NaN-poisoned C.
    ``operands``: made for this shape already (else fresh ones from ``seed``).

    Raises:
        ValueError: the config's shape-pinned parameters (DTYPE, LAYOUT, OUT) are not the shape's:
            its kernel computes another product, and the error would say nothing of it.
    """
    _check_pinned(source, shape)
    cp = _cupy()
    ops = operands if operands is not None else Operands.make(shape, seed)
    worst, worst_fp32 = 0.0, 0.0
    out = shape.out
    for index, (alpha, beta) in enumerate(CHECKS):
        if beta != 0.0:
            c = half_arrays.device_copy(ops.c0)
        else:
            c = half_arrays.nan_filled(shape.m, shape.n, out)
        launch(kernel, source, shape, alpha, ops.a, ops.b, beta, c)
        cp.cuda.get_current_stream().synchronize()
        worst = max(worst, relative_error(c, ops.references[index], out))
        if ops.fp32_references is not None:
            c32 = half_arrays.to_float32(c, out)
            worst_fp32 = max(worst_fp32, relative_error(c32, ops.fp32_references[index]))
    if ops.fp32_references is None:
        # An emulated family's class allows its own error on top of the FP32 sums'.
        extra = allowance(get_family(source.config.family).accuracy)
        return Verification(worst, tolerance(shape.k) + extra)
    dtype = shape.dtype
    allowed = tolerance(shape.k, dtype, out)
    if out != "float32" and get_family(source.config.family).vendor:
        allowed += vendor_half_c_allowance(out)
    return Verification(worst, allowed, worst_fp32, reference_tolerance(shape.k, dtype, out))


def vendor_half_c_allowance(out_dtype: str) -> float:
    """What the vendor library may add when it writes a half C: one unit roundoff of C's type.

    Some of cuBLASLt's algorithms do not round their FP32 sums once to a BF16 C (on the lent H100,
    2026-11-28, rank 1 at 257x136x200 BF16 TN came out 2.8e-3 from the FP32 result rounded
    once, and the padded rank 0 at 1001x999x1003 BF16 NT 2.7e-3: about 0.7 unit roundoffs, as
    rounding twice would give). Those algorithms are what a user of the library already gets, so
    they stay candidates; our own kernels are still held to rounding once."""
    return UNIT_ROUNDOFF[out_dtype]


def _check_pinned(source: KernelSource, shape: Shape) -> None:
    config = source.config
    wanted = get_family(config.family).pinned(shape)
    wrong = {name: value for name, value in wanted.items() if config[name] != value}
    if wrong:
        needs = ", ".join(f"{name}={value}" for name, value in wrong.items())
        raise ValueError(
            f"{config.name} computes another input type, layout or type of C: {shape.label()} "
            f"needs {needs}"
        )


@dataclass(frozen=True)
class Timing:
    """Median and spread of per-launch times in milliseconds."""

    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int


def time_launches(
    run: Callable[[], None],
    budget_ms: float = 100.0,
    warmup: int = 3,
    min_repeats: int = 5,
    max_repeats: int = 200,
) -> Timing:
    """Time ``run`` with CUDA events: warm up, then repeat for about ``budget_ms`` of kernel time
    (bounded by min/max repeats), flushing L2 before each repeat; median of the repeats.

    The warm-up launches are timed together to size the repeats, and every repeat records its
    own pair of events with one synchronisation at the end, so microsecond kernels get their
    repeats without a host round trip each. Both are enqueued behind a stream gate
    (``tuner.gpu.stream_gate``, in batches of :data:`REPEATS_PER_GATE`): the GPU runs them back to
    back, so the events time the GPU's work, not the host's pace in enqueueing it.
    """
    cp = _cupy()
    flush = _l2_flush_buffer()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    with held_stream():
        start.record()
        for _ in range(max(warmup, 1)):
            run()
        stop.record()
    stop.synchronize()
    per_launch = cp.cuda.get_elapsed_time(start, stop) / max(warmup, 1)
    repeats = min(max_repeats, max(min_repeats, math.ceil(budget_ms / max(per_launch, 1e-3))))
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(repeats)]
    for first in range(0, repeats, REPEATS_PER_GATE):
        with held_stream():
            for begin, end in events[first : first + REPEATS_PER_GATE]:
                flush.fill(0)
                begin.record()
                run()
                end.record()
    events[-1][1].synchronize()
    times = sorted(cp.cuda.get_elapsed_time(begin, end) for begin, end in events)
    return Timing(times[len(times) // 2], times[0], times[-1], len(times))


@functools.cache
def _l2_flush_buffer() -> Any:
    """Twice the L2 of the current device, written before each timed launch (cached per
    process: a study times thousands of launches)."""
    cp = _cupy()
    l2 = cp.cuda.Device().attributes.get("L2CacheSize", 50 * 2**20)
    return cp.empty(max(2 * l2, 2**22) // 4, dtype=cp.int32)
