"""What a padded launch copies, from the arrays' layouts alone (``tuner.gpu.padded_launch``, no
GPU): which arrays go through buffers, and that every copy reads or writes the caller's rows
at their own pitch. The copies themselves are checked on the GPU in
tests/gpu/test_padded_operands.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tuner.core.shape import Shape
from tuner.gpu.padded_launch import Layout, launch_steps


@dataclass
class _Data:
    ptr: int


@dataclass
class FakeArray:
    """The attributes Layout.of reads of a CuPy array: a rows x cols view in rows ``pitch``
    elements apart, ``offset`` bytes past a 16-byte boundary."""

    rows: int
    cols: int
    pitch: int
    itemsize: int = 4
    offset: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def strides(self) -> tuple[int, int]:
        return (self.pitch * self.itemsize, self.itemsize)

    @property
    def data(self) -> _Data:
        return _Data(1 << 20 | self.offset)


def test_layout_reads_alignment_pitch_and_width_in_bytes() -> None:
    layout = Layout.of(FakeArray(5, 1019, 1024, offset=4))
    assert layout == Layout(aligned=False, pitch=4096, width=4076)
    assert Layout.of(FakeArray(5, 1019, 1019)) == Layout(True, 4076, 4076)


def test_ragged_packed_operands_are_copied_reading_their_own_pitch() -> None:
    shape = Shape(37, 1013, 1019)
    a, b, c = (Layout.of(FakeArray(r, n, n)) for r, n in ((37, 1019), (1019, 1013), (37, 1013)))
    steps = launch_steps(shape, True, a, b, c)
    assert steps.a_in is not None and steps.b_in is not None
    # float32 buffers' rows are whole 128-byte lines: 1019 and 1013 floats in rows of 1024.
    assert (steps.a_in.src_pitch, steps.a_in.dst_pitch, steps.a_in.width) == (4076, 4096, 4076)
    assert (steps.b_in.src_pitch, steps.b_in.dst_pitch) == (4052, 4096)
    # Leading dimensions: C is written in place, whatever its pitch.
    assert steps.c_in is None and steps.c_out is None and not steps.plan.copy_c


def test_views_in_rows_of_whole_vectors_run_in_place_with_leading_dimensions() -> None:
    shape = Shape(37, 1013, 1019)
    a = Layout.of(FakeArray(37, 1019, 1024))
    b = Layout.of(FakeArray(1019, 1013, 1016))
    c = Layout.of(FakeArray(37, 1013, 1013))
    steps = launch_steps(shape, True, a, b, c)
    assert not steps.plan.copies
    # A base off 16 bytes is copied even where the pitch would do.
    off = Layout.of(FakeArray(37, 1019, 1024, offset=8))
    assert launch_steps(shape, True, off, b, c).a_in is not None


@pytest.mark.parametrize("c_pitch", [1013, 1017])
def test_without_leading_dimensions_c_goes_through_a_buffer_at_its_own_pitch(
    c_pitch: int,
) -> None:
    shape = Shape(37, 1013, 1019)
    a = Layout.of(FakeArray(37, 1019, 1019))
    b = Layout.of(FakeArray(1019, 1013, 1013))
    c = Layout.of(FakeArray(37, 1013, c_pitch))
    steps = launch_steps(shape, False, a, b, c)
    assert steps.c_in is not None and steps.c_out is not None
    assert steps.c_in.src_pitch == steps.c_out.dst_pitch == 4 * c_pitch
    assert steps.c_out.src_pitch == 4 * steps.plan.np == 4 * 1016
    assert steps.c_out.width == 4 * 1013 and steps.c_out.rows == 37


def test_the_vendor_launch_rounds_up_ragged_rows_of_c() -> None:
    """cuBLAS (``c_rows``) on an NT shape whose only ragged rows are C's: the product runs on
    N rounded up, B copied into rows of zeros past N, C copied back from its buffer."""
    shape = Shape(37, 1013, 1024, "bfloat16", "NT")
    a = Layout.of(FakeArray(37, 1024, 1024, itemsize=2))
    b = Layout.of(FakeArray(1013, 1024, 1024, itemsize=2))
    c = Layout.of(FakeArray(37, 1013, 1013, itemsize=2))
    assert not launch_steps(shape, False, a, b, c).plan.copies
    steps = launch_steps(shape, False, a, b, c, c_rows=True)
    assert steps.a_in is None and steps.b_in is not None and steps.c_out is not None
    assert steps.plan.run_shape == Shape(37, 1016, 1024, "bfloat16", "NT")
    assert (steps.c_out.src_pitch, steps.c_out.dst_pitch, steps.c_out.width) == (2032, 2026, 2026)
