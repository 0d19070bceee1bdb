"""Where an emulated config's split pass puts each float32 operand's BF16 parts
(``tuner.kernels.families.emulated``), as arithmetic: what the GPU's split
(``tuner.gpu.split_launch``) writes and what a launch recipe (``tuner.kernels.launch_recipe``)
tells a caller to write.

A buffer is stored in the caller's layout, its rows on 16 bytes: where K runs along an operand's
rows (A stored M x K, B stored N x K) the three parts of a row sit side by side, each Kp wide;
where K runs down its columns (A stored K x M, B stored K x N) they sit one below the other, each
Kp rows deep, and a row is padded to a multiple of 8. The buffers start zeroed and the split writes
only the operand's own elements, so the part blocks' padding past K stays zero and adds nothing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tuner.core.shape import Shape
from tuner.kernels.families.emulated import A_PARTS, B_PARTS, PARTS, split_depth
from tuner.kernels.operand_padding import round_up

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

    @property
    def parts_side_by_side(self) -> bool:
        """Whether the parts sit side by side in each row (K along the rows), else one below
        the other."""
        return self.part_stride < self.buffer[1]


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
