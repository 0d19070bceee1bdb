"""The padded launch's copy kernel on the GPU (``tuner.gpu.pad_copy``): 4- and 2-byte elements,
pitches of every residue, sources off 16 bytes, rows past the grid's height; the copy equals
the source, and the destination's pad columns stay as they were."""

from __future__ import annotations

import pytest

from tuner.kernels.operand_padding import Copy2D

pytestmark = pytest.mark.gpu

# (rows, cols, source pitch, destination pitch, source offset in elements)
CASES = [
    (1, 1, 1, 4, 0),
    (7, 5, 5, 8, 1),
    (33, 255, 255, 256, 3),
    (5, 1029, 1031, 1032, 2),
    (600_000, 3, 3, 4, 1),  # more rows than 65535 blocks of 8 rows: blocks stride over rows
    (9, 16, 16, 16, 0),
]


@pytest.mark.parametrize(("rows", "cols", "sp", "dp", "off"), CASES)
@pytest.mark.parametrize("element", [4, 2])
def test_copy_equals_the_source_and_leaves_the_pads(
    rows: int, cols: int, sp: int, dp: int, off: int, element: int
) -> None:
    import cupy as cp

    from tuner.gpu.pad_copy import copy_rows

    dtype = cp.uint32 if element == 4 else cp.uint16
    rng = cp.random.default_rng(rows + cols)
    flat = rng.integers(0, 1 << 15, size=rows * sp + off, dtype=cp.int64).astype(dtype)
    src = flat[off:].reshape(rows, sp)
    dst = cp.full((rows, dp), 0xABC, dtype=dtype)
    copy_rows(dst, src, Copy2D(rows, cols * element, sp * element, dp * element), element)
    assert bool(cp.all(dst[:, :cols] == src[:, :cols]))
    assert bool(cp.all(dst[:, cols:] == 0xABC))
