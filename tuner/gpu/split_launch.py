"""An emulated config's launch on the GPU (``tuner.kernels.families.emulated``): split A and B into
BF16 parts, then run the half kernel on them.

:func:`split_operands` is arithmetic (tested without a GPU): where each float32 operand's
parts go in its BF16 buffer. A buffer is stored in the caller's layout, its rows on 16 bytes:
where K runs along an operand's rows (A stored M x K, B stored N x K) the three parts of a row
sit side by side, each Kp wide; where K runs down its columns (A stored K x M, B stored K x N)
they sit one below the other, each Kp rows deep, and a row is padded to a multiple of 8. The
buffers are kept zeroed (``tuner.gpu.kept_buffers``): the split writes only the operand's own
elements, so the part blocks' padding past K stays zero and adds nothing. The half kernel then
runs on the split shape (``Family.kernel_shape``) with the buffers' pitches and writes the
caller's C in place. Everything is asynchronous, on the current stream; what a caller times
around :func:`launch_split` includes the split.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.kept_buffers import kept_buffers
from tuner.gpu.pad_copy import copy_geometry
from tuner.gpu.padded_launch import RawLaunch
from tuner.gpu.plain_kernels import plain_kernel
from tuner.kernels.families.emulated import A_PARTS, B_PARTS, PARTS, split_depth, split_shape
from tuner.kernels.operand_padding import round_up, row_pitch
from tuner.kernels.render import KernelSource

ROW_MULTIPLE = 8  # BF16 elements in 16 bytes: a buffer row's length is a multiple of it


@dataclass(frozen=True)
class SplitOperand:
    """Where one operand's BF16 parts go: its stored extent (``rows`` x ``cols`` floats), its
    buffer's extent, the elements from one part's start to the next, and the part that holds
    the low halves."""

    rows: int
    cols: int
    buffer: tuple[int, int]
    part_stride: int
    lo_part: int


def _operand(stored: tuple[int, int], k_along_rows: bool, k: int, lo_part: int) -> SplitOperand:
    rows, cols = stored
    depth = split_depth(k)
    if k_along_rows:
        return SplitOperand(rows, cols, (rows, PARTS * depth), depth, lo_part)
    pitch = round_up(cols, ROW_MULTIPLE)
    return SplitOperand(rows, cols, (PARTS * depth, pitch), depth * pitch, lo_part)


@functools.lru_cache(maxsize=256)
def split_operands(shape: Shape) -> tuple[SplitOperand, SplitOperand]:
    """A's and B's split for a float32 ``shape``: A's parts in the order of ``A_PARTS``, B's in
    that of ``B_PARTS`` (equal positions multiply)."""
    a_stored = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b_stored = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    return (
        _operand(a_stored, not shape.a_transposed, shape.k, A_PARTS.index("lo")),
        _operand(b_stored, shape.b_transposed, shape.k, B_PARTS.index("lo")),
    )


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
