"""||out - ref||_F / ||ref||_F on the GPU with one small kernel of the project's own
(``templates/squared_sums.cu``), the check behind every verification.

CuPy's array operations (a difference, a square, a float64 sum) would do the same, but each
compiles with CuPy's headers on first use: on the lent H200 with an empty CuPy cache the first
relative error took 4.4 s (``h200-start-parts-2026-11-29-7940d2f.json``), all of it before a
first command's first candidate could be measured. The kernel reads the arrays as stored
(float64, float32, FP16, and BF16 bit patterns in ``uint16``), widens each element exactly to
double and sums in double, each block its share; the host adds the blocks' sums, so the result
does not depend on the order blocks finish in.
"""

from __future__ import annotations

import math
from typing import Any

from tuner.gpu.plain_kernels import grid_stride_blocks, plain_kernel

THREADS = 256  # SUM_THREADS in the kernel file
MAX_BLOCKS = 512

# How each stored element type is named in the kernel's entry points. ``uint16`` arrays hold
# BF16 bit patterns (``tuner.gpu.half_arrays``); ``bfloat16`` is ml_dtypes' type, where CuPy
# knows it.
ELEMENTS = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "uint16": "bf16",
    "bfloat16": "bf16",
}


def summable(out: Any, ref: Any) -> bool:
    """Whether the kernel reads both arrays as they are: C-contiguous, as many elements each, of
    a type it knows."""
    return (
        str(out.dtype) in ELEMENTS
        and str(ref.dtype) in ELEMENTS
        and out.size == ref.size
        and bool(out.flags.c_contiguous)
        and bool(ref.flags.c_contiguous)
    )


def blocks_for(size: int) -> int:
    """Blocks of the launch: enough to fill the device on large arrays, never an idle one."""
    return grid_stride_blocks(size, THREADS, MAX_BLOCKS)


def squared_sums(out: Any, ref: Any) -> tuple[float, float]:
    """(sum of (out - ref)^2, sum of ref^2), in double, of two arrays :func:`summable` accepts."""
    if not summable(out, ref):
        raise ValueError(
            f"cannot sum {out.dtype} {out.shape} against {ref.dtype} {ref.shape}: both must be "
            f"C-contiguous with as many elements, of {', '.join(ELEMENTS)}"
        )
    if out.size == 0:
        return 0.0, 0.0
    import cupy as cp

    blocks = blocks_for(out.size)
    sums = cp.empty(2 * blocks, dtype=cp.float64)
    name = f"squared_sums_{ELEMENTS[str(out.dtype)]}_{ELEMENTS[str(ref.dtype)]}"
    kernel = plain_kernel("squared_sums.cu", name)
    kernel((blocks,), (THREADS,), (out, ref, cp.uint64(out.size), sums))
    host = sums.get()  # waits for the kernel
    return float(host[0::2].sum()), float(host[1::2].sum())


def relative_error(out: Any, ref: Any) -> float:
    """||out - ref||_F / ||ref||_F (against 1 where ref is all zeros); NaN or inf anywhere in
    either array gives inf."""
    diff2, ref2 = squared_sums(out, ref)
    if not (math.isfinite(diff2) and math.isfinite(ref2)):
        return math.inf
    return math.sqrt(diff2) / (math.sqrt(ref2) if ref2 > 0 else 1.0)
