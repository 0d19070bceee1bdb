"""The leading dimension a kernel is given (``tuner.measure.row_pitch``): an array's row pitch
in elements, or a clear refusal where its rows are not contiguous or overlap. NumPy arrays
stand in for CuPy's (the same strides)."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.families import checked_config
from tuner.measure import row_pitch
from tuner.render import render


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


def test_only_the_half_families_take_leading_dimensions() -> None:
    half = render(checked_config("hmma_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_dt1_ly0"))
    split = render(checked_config("hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly0"))
    fp32 = render(checked_config("dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"))
    assert half.leading_dims and split.leading_dims and not fp32.leading_dims
    for source in (half, split):
        assert "int lda" in source.code and "int ldb" in source.code and "int ldc" in source.code
    assert "int lda" not in fp32.code
