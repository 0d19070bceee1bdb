"""The padded launch's copy kernel (``tuner.gpu.pad_copy``, ``templates/pad_copy.cu``) without a
GPU: its launch geometry covers every element of a copy exactly once (the kernel's indexing,
modelled here), refusals name the value, and nvcc builds it (and the emulated families' split
kernel, the other plain CUDA file) for sm_80 and sm_90."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tuner.gpu.error_norm import ELEMENTS
from tuner.gpu.pad_copy import KERNELS, MAX_GRID_Y, THREADS, UNROLL, copy_geometry, copy_rows
from tuner.kernels.compile import NVCC_OPTIONS, parse_ptxas_report
from tuner.kernels.operand_padding import Copy2D
from tuner.kernels.render import templates_dir


def _touched(rows: int, cols: int, grid_y: int | None = None) -> dict[tuple[int, int], int]:
    """How often the kernel's loops (templates/pad_copy.cu) visit each (row, col) under
    :func:`copy_geometry`, optionally with fewer block rows, as past :data:`MAX_GRID_Y`."""
    (gx, gy, _), (bx, by, _) = copy_geometry(rows, cols)
    gy = grid_y or gy
    seen: dict[tuple[int, int], int] = {}
    for block_x in range(gx):
        for block_y in range(gy):
            for tx in range(bx):
                for ty in range(by):
                    col0 = block_x * bx * UNROLL + tx
                    for row in range(block_y * by + ty, rows, gy * by):
                        for u in range(UNROLL):
                            col = col0 + u * bx
                            if col < cols:
                                seen[(row, col)] = seen.get((row, col), 0) + 1
    return seen


@pytest.mark.parametrize(
    ("rows", "cols"), [(1, 1), (3, 7), (5, 33), (2, 129), (9, 255), (4, 1030), (1, 2049)]
)
def test_every_element_is_copied_once(rows: int, cols: int) -> None:
    seen = _touched(rows, cols)
    assert set(seen) == {(r, c) for r in range(rows) for c in range(cols)}
    assert set(seen.values()) == {1}


def test_blocks_stride_over_rows_beyond_the_grid() -> None:
    seen = _touched(37, 5, grid_y=2)
    assert len(seen) == 37 * 5 and set(seen.values()) == {1}


@pytest.mark.parametrize("cols", [1, 31, 128, 129, 255, 256, 1024, 1025, 4097])
def test_a_row_gets_as_few_lanes_as_cover_it(cols: int) -> None:
    (gx, _, _), (lanes, rows_per_block, _) = copy_geometry(8, cols)
    assert lanes * rows_per_block == THREADS and 32 <= lanes <= THREADS
    assert lanes == 32 or lanes // 2 * UNROLL < cols  # no smaller warp multiple would do
    assert (gx - 1) * lanes * UNROLL < cols <= gx * lanes * UNROLL


def test_the_grid_stays_within_the_hardware_limit() -> None:
    (_, gy, _), (_, by, _) = copy_geometry(10_000_000, 4)
    assert gy == MAX_GRID_Y and by == THREADS // 32


def test_an_empty_copy_is_refused() -> None:
    with pytest.raises(ValueError, match="0 x 5"):
        copy_geometry(0, 5)


@pytest.mark.parametrize(
    ("copy", "element", "message"),
    [
        (Copy2D(2, 12, 12, 16), 8, "not 8-byte"),
        (Copy2D(2, 6, 12, 16), 4, "width of 6 bytes"),
        (Copy2D(2, 8, 10, 16), 4, "src_pitch of 10 bytes"),
        (Copy2D(2, 4, 6, 7), 2, "dst_pitch of 7 bytes"),
    ],
)
def test_copies_of_other_elements_or_partial_ones_are_refused(
    copy: Copy2D, element: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        copy_rows(None, None, copy, element)


# The plain CUDA files (not families) and their kernels: the pad copy's, the split of float32
# into BF16 parts for the emulated families (tuner/gpu/split_launch.py), the stream gate the
# timing waits behind (tuner/gpu/stream_gate.py), the conversions to and from the half types
# (tuner/gpu/half_arrays.py) and the sums of the relative error (tuner/gpu/error_norm.py), one
# entry point for each pair of stored types.
PLAIN_KERNELS = {
    "pad_copy.cu": tuple(KERNELS.values()),
    "split_bf16x3.cu": ("split_bf16x3",),
    "stream_gate.cu": ("wait_for_host",),
    "half_convert.cu": ("round_to_bf16", "round_to_f16", "widen_bf16", "widen_f16"),
    "squared_sums.cu": tuple(
        f"squared_sums_{x}_{y}" for x in set(ELEMENTS.values()) for y in set(ELEMENTS.values())
    ),
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("file", sorted(PLAIN_KERNELS))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_plain_kernels_build_without_spills(arch: str, file: str, tmp_path: Path) -> None:
    source = templates_dir() / file
    cmd = ["nvcc", "-cubin", f"-arch={arch}", *NVCC_OPTIONS, "-o", str(tmp_path / "k.cubin")]
    proc = subprocess.run([*cmd, str(source)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    for name in PLAIN_KERNELS[file]:
        usage = parse_ptxas_report(proc.stderr, name)
        assert usage.spill_store_bytes == 0 and usage.spill_load_bytes == 0, name
