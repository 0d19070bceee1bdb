"""The leading dimension a kernel is given (``tuner.kernels.operand_padding.row_pitch``): an array's
row pitch in elements, or a clear refusal where its rows are not contiguous or overlap. NumPy
arrays stand in for CuPy's (the same strides)."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.kernels.families import checked_config
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE


def test_a_packed_array_and_a_column_slice_give_the_full_row() -> None:
    a = np.zeros((6, 10), dtype=np.float32)
    assert row_pitch(a) == 10
    assert row_pitch(a[:, :7]) == 10  # a view inside wider rows
    assert row_pitch(np.zeros((6, 10), dtype=np.uint16)[1:, 2:]) == 10
    assert row_pitch(a[:1]) == 10 and row_pitch(np.zeros((1, 3), np.float32)) == 3


@pytest.mark.parametrize(
    "view",
    [
        np.zeros((6, 10), dtype=np.float32)[:, ::2],  # strided columns
        np.zeros((6, 10), dtype=np.float32).T,  # a transposed view
        np.broadcast_to(np.zeros((1, 10), dtype=np.float32), (6, 10)),  # rows overlap
    ],
    ids=["strided columns", "transposed", "broadcast"],
)
def test_rows_a_kernel_cannot_walk_are_refused(view: np.ndarray) -> None:
    with pytest.raises(ValueError, match="row pitch"):
        row_pitch(view)


HALF_FAMILIES = {"hmma", "hmma_splitk", "wgmma", "wgmma_splitk"}
LEADING_DIMS_FAMILIES = {
    *HALF_FAMILIES,
    *(f"{name}_bf16x3" for name in HALF_FAMILIES),  # the same kernels on split float32
    "dmma",
    "dmma_pipelined",
    "dmma_streamk",
    "tma_ws",  # A's and B's pitches travel in their tensor maps, ldc as an argument
    "tma_ws_bf16x3",
}


@pytest.mark.parametrize("family", sorted(REPRESENTATIVE))
def test_a_family_takes_leading_dimensions_exactly_when_it_says_so(family: str) -> None:
    source = render(checked_config(REPRESENTATIVE[family][0]))
    assert source.leading_dims == (family in LEADING_DIMS_FAMILIES)
    for ld in ("lda", "ldb", "ldc"):
        by_argument = source.leading_dims and not (source.tensor_maps and ld != "ldc")
        assert (f"int {ld}" in source.code) == by_argument, ld


def test_a_family_reading_packed_rows_refuses_a_view_in_wider_rows() -> None:
    """Before any launch: such a kernel would read the view's rows at the wrong pitch."""
    from tuner.core.shape import Shape
    from tuner.gpu.measure import launch_kernel

    source = render(checked_config(REPRESENTATIVE["pipelined"][0]))
    a = np.zeros((8, 12), dtype=np.float32)[:, :8]
    b, c = np.zeros((8, 8), dtype=np.float32), np.zeros((8, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="A is a 8 x 8 view with a row pitch of 12"):
        launch_kernel(None, source, Shape(8, 8, 8), 1.0, a, b, 0.0, c)
