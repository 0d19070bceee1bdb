"""The copies of a padded launch (``tuner.gpu.padded_launch``) as one small kernel of our own
(``templates/pad_copy.cu``) instead of ``cudaMemcpy2DAsync``: `benchmarks/pad_copy.py` times
both on the row lengths padding meets (odd pitches, bases off 16 bytes), where the runtime's
pitched copy is the slower (``benchmarks/results/h100-pad-copy.json``).

:func:`copy_geometry` is arithmetic (tested without a GPU); :func:`copy_rows` launches on the
current device and stream.
"""

from __future__ import annotations

import functools
from typing import Any

from tuner.gpu.plain_kernels import plain_kernel
from tuner.kernels.operand_padding import Copy2D

THREADS = 256  # threads of a copy block
UNROLL = 4  # elements a thread copies per row (templates/pad_copy.cu)
MAX_GRID_Y = 65535
KERNELS = {4: "copy_rows_4", 2: "copy_rows_2"}  # by element bytes


@functools.lru_cache(maxsize=256)
def copy_geometry(rows: int, cols: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) of a copy of ``rows`` x ``cols`` elements: blocks of :data:`THREADS`
    threads, a row's lanes as few as cover its columns in :data:`UNROLL` passes (at least a
    warp, at most the block) and the rest of the block on further rows; at most
    :data:`MAX_GRID_Y` block rows (blocks then stride over the rows)."""
    if rows < 1 or cols < 1:
        raise ValueError(f"a copy needs at least one row and one column, got {rows} x {cols}")
    lanes = 32
    while lanes < THREADS and lanes * UNROLL < cols:
        lanes *= 2
    rows_per_block = THREADS // lanes
    grid_x = -(-cols // (lanes * UNROLL))
    grid_y = min(-(-rows // rows_per_block), MAX_GRID_Y)
    return (grid_x, grid_y, 1), (lanes, rows_per_block, 1)


def copy_rows(dst: Any, src: Any, copy: Copy2D, element: int) -> None:
    """``copy`` (its widths and pitches in bytes) from ``src``'s base to ``dst``'s, both CuPy
    arrays of ``element``-byte items, on the current stream (asynchronous)."""
    if element not in KERNELS:
        raise ValueError(f"copies move 4- or 2-byte elements, not {element}-byte ones")
    for what, value in (
        ("width", copy.width),
        ("src_pitch", copy.src_pitch),
        ("dst_pitch", copy.dst_pitch),
    ):
        if value % element:
            raise ValueError(
                f"a copy's {what} of {value} bytes is not whole {element}-byte elements"
            )
    import numpy as np

    kernel = plain_kernel("pad_copy.cu", KERNELS[element])
    cols = copy.width // element
    grid, block = copy_geometry(copy.rows, cols)
    args = (
        dst,
        np.int64(copy.dst_pitch // element),
        src,
        np.int64(copy.src_pitch // element),
        np.int32(copy.rows),
        np.int32(cols),
    )
    kernel(grid, block, args)
