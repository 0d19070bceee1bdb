"""An emulated config's launch on the GPU (``tuner.kernels.families.emulated``): split A and B into
BF16 parts, then run the half kernel on them.

Where each float32 operand's parts go in its BF16 buffer is arithmetic
(``tuner.kernels.operand_split``, shared with the launch recipe). The buffers are kept zeroed
(``tuner.gpu.kept_buffers``): the split writes only the operand's own elements, so the part
blocks' padding past K stays zero and adds nothing. The half kernel then
runs on the split shape (``Family.kernel_shape``) with the buffers' pitches and writes the
caller's C in place. Everything is asynchronous, on the current stream; what a caller times
around :func:`launch_split` includes the split.
"""

from __future__ import annotations

from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.kept_buffers import kept_buffers
from tuner.gpu.pad_copy import copy_geometry
from tuner.gpu.padded_launch import RawLaunch
from tuner.gpu.plain_kernels import plain_kernel
from tuner.kernels.families.emulated import split_shape
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.operand_split import SplitOperand, split_operands
from tuner.kernels.render import KernelSource


def split_into(dst: Any, src: Any, part: SplitOperand) -> None:
    """Write ``src`` (float32, ``part.rows`` x ``part.cols``, any row pitch) as BF16 parts into
    ``dst`` (a ``uint16`` buffer of ``part.buffer``), on the current stream."""
    import numpy as np

    if src.dtype != np.float32:
        raise ValueError(f"the split reads float32 operands, not {src.dtype}")
    if tuple(src.shape) != (part.rows, part.cols):
        raise ValueError(f"the split expects a {part.rows} x {part.cols} operand, got {src.shape}")
    grid, block = copy_geometry(part.rows, part.cols)
    args = (
        dst,
        np.int64(part.buffer[1]),
        np.int64(part.part_stride),
        np.int32(part.lo_part),
        src,
        np.int64(row_pitch(src)),
        np.int32(part.rows),
        np.int32(part.cols),
    )
    plain_kernel("split_bf16x3.cu", "split_bf16x3")(grid, block, args)


def launch_split(
    raw_launch: RawLaunch,
    kernel: Any,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """``C = alpha*A@B + beta*C`` for float32 A and B: the split into kept BF16 buffers, then
    ``raw_launch`` (``tuner.gpu.measure.launch_kernel``) of the half kernel on the split shape."""
    import cupy

    a_part, b_part = split_operands(shape)

    def make() -> dict[str, Any]:
        return {
            "a": cupy.zeros(a_part.buffer, dtype=cupy.uint16),
            "b": cupy.zeros(b_part.buffer, dtype=cupy.uint16),
        }

    buffers = kept_buffers(("split", shape), make)
    split_into(buffers["a"], a, a_part)
    split_into(buffers["b"], b, b_part)
    run = split_shape(shape)
    raw_launch(kernel, source, run, alpha, buffers["a"], buffers["b"], beta, c)
