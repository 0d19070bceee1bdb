"""Padded operands: which arrays a padded config (``_pad4``, ``_pad8``) copies, into what, and
how much.

The templates read a row as 16-byte vectors only when its length is a whole number of 16-byte
vectors and its base is 16-byte aligned (``vec_ok`` in templates/_common.cuh.j2, ``copy_width``
in templates/hmma.cu.j2): 4 floats, or 8 halves (:func:`pad_multiple`). A row of another length
makes every tile of that operand take narrower copies, four (or eight) times the instructions.
A padded config instead runs its kernel on buffers whose rows are whole vectors. Two ways:

* The kernel takes leading dimensions (``Family.leading_dims``: ``hmma``, ``hmma_splitk``,
  ``dmma``, ``dmma_pipelined``): a ragged or misaligned operand is copied row by row into a
  buffer whose row pitch is its row length rounded up to the multiple (for float32, to whole
  128-byte lines: :func:`row_pitch_multiple`); the kernel runs on the caller's M x N x K with
  that pitch and writes C in place. Nothing else is copied.
* It does not (the other float32 families): the kernel runs on (Mp, Np, Kp) on zero-padded
  buffers, where each of M, N and K that is the row length of a stored operand is rounded up: K
  for A stored M x K and for B stored N x K (transposed), M for A stored K x M, N for B stored
  K x N. The zero columns (or rows) of A along K meet the zero rows (or columns) of B, so the
  product is unchanged; A or B is copied when its buffer is larger than the array or the array's
  base is off 16 bytes, and C when Mp or Np is larger or C's base is off (in before the kernel
  only when beta reads it, back after); C's extra rows and columns are never copied back.

The vendor library's padded launch (``c_rows``) also rounds up N, C's row length, in every
layout (B's buffer grows by zero rows where B is stored N x K). cuBLAS leaves its fast kernels
when N is off the vector multiple even with C's rows an aligned pitch apart: on the H200, 4097^3
BF16 NT with K padded and C in rows of 4104 took 1.56-1.61 ms, slower than the unpadded call
(``benchmarks/results/h200-odd-bf16-nt-c-pitch-2026-11-28.json``); with N rounded up too, 0.28 ms
(``h200-vendor-ragged-2026-11-28.json``).

Everything here is arithmetic on integers; ``tuner.gpu.padded_launch`` does the copies on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tuner.core.shape import ELEMENT_BYTES, Shape

VECTOR_BYTES = 16


def pad_multiple(dtype: str) -> int:
    """Elements of ``dtype`` in one 16-byte vector: what a padded row length is a multiple of
    (4 for float32, 8 for float16 and bfloat16), and the value of its config's pad token."""
    return VECTOR_BYTES // ELEMENT_BYTES[dtype]


# Floats in 128 bytes: the row pitch of a float32 buffer that a leading-dimension kernel reads.
# On the H100, with B's column edge unchecked, dmma_pipelined ran 2048x2047x2048 (pitch 2048)
# as fast as 2048^3 but 2048x2044x2048 (pitch 2044, the same 16 tile columns) 8 % slower; the
# padded launch of 4097^3 went from 48.3 to 51.1 TFLOP/s with pitch 4128 instead of 4100. Half
# buffers keep the vector multiple (not measured).
FLOAT32_PITCH_MULTIPLE = 32


def row_pitch_multiple(dtype: str) -> int:
    """What a copied operand's row pitch is rounded up to, in elements of ``dtype``."""
    return FLOAT32_PITCH_MULTIPLE if dtype == "float32" else pad_multiple(dtype)


def round_up(value: int, multiple: int = 4) -> int:
    """The smallest multiple of ``multiple`` that is at least ``value``."""
    return -(-value // multiple) * multiple


def _padded_dims(shape: Shape, c_rows: bool = False) -> tuple[int, int, int]:
    """(Mp, Np, Kp): each dimension that is a stored operand's row length, rounded up (C's
    too with ``c_rows``)."""
    multiple = pad_multiple(shape.dtype)
    k_is_a_row = not shape.a_transposed or shape.b_transposed
    mp = round_up(shape.m, multiple) if shape.a_transposed else shape.m
    np_ = shape.n if shape.b_transposed and not c_rows else round_up(shape.n, multiple)
    kp = round_up(shape.k, multiple) if k_is_a_row else shape.k
    return mp, np_, kp


def padded_product(shape: Shape) -> Shape:
    """Mp x Np x Kp: ``shape`` with each dimension that is a stored operand's row length
    rounded up to whole 16-byte vectors (the product a padded kernel without leading
    dimensions computes, ``PaddingPlan.run_shape``)."""
    return Shape(*_padded_dims(shape), shape.dtype, shape.layout, shape.out_dtype)


def padding_refusal(shape: Shape, c_rows: bool = False) -> str | None:
    """Why padded operands are not offered for ``shape`` (None when they are): only where a
    stored operand's row length is not a whole number of 16-byte vectors (A's or B's, and C's
    for a launch that pads C's rows too, ``c_rows``)."""
    if _padded_dims(shape, c_rows) == (shape.m, shape.n, shape.k):
        rows = "A, B or C" if c_rows else "A or B"
        return (
            f"padded operands are for {rows} rows that are not a multiple of 16 bytes "
            f"({pad_multiple(shape.dtype)} {shape.dtype} elements), and {shape.label()} has none"
        )
    return None


@dataclass(frozen=True)
class Copy2D:
    """One pitched copy: ``rows`` rows of ``width`` bytes, ``src_pitch`` and ``dst_pitch``
    bytes apart (the arguments of ``cudaMemcpy2DAsync``)."""

    rows: int
    width: int
    src_pitch: int
    dst_pitch: int


def _stored(rows_cols: tuple[int, int], transposed: bool) -> tuple[int, int]:
    """A matrix of ``rows_cols`` (logical) as stored, row-major: swapped when transposed."""
    rows, cols = rows_cols
    return (cols, rows) if transposed else (rows, cols)


def _copy_into(array: tuple[int, int], buffer: tuple[int, int], element: int) -> Copy2D:
    """``array`` (rows x cols as stored) into the top left of ``buffer``."""
    width = array[1] * element
    return Copy2D(array[0], width, width, buffer[1] * element)


@dataclass(frozen=True)
class PaddingPlan:
    """The buffers a padded launch uses and the copies it makes, for one call."""

    shape: Shape  # the caller's product
    mp: int
    np: int
    kp: int
    copy_a: bool
    copy_b: bool
    copy_c: bool
    leading_dims: bool = False  # the kernel takes row pitches: buffers widen rows only

    @property
    def run_shape(self) -> Shape:
        """The product the kernel computes: Mp x Np x Kp, in the caller's dtype and layout."""
        return Shape(
            self.mp, self.np, self.kp, self.shape.dtype, self.shape.layout, self.shape.out_dtype
        )

    def _widened(self, array: tuple[int, int], copied: bool) -> tuple[int, int]:
        """A copied array's buffer: rows whose pitch is a multiple of row_pitch_multiple."""
        if not copied:
            return array
        return (array[0], round_up(array[1], row_pitch_multiple(self.shape.dtype)))

    @property
    def copies(self) -> bool:
        """Whether anything is copied (else the kernel runs on the caller's arrays)."""
        return self.copy_a or self.copy_b or self.copy_c

    @property
    def c_bytes(self) -> int:
        """Bytes of one element of C: the shape's type of C (float32, or a half C)."""
        return ELEMENT_BYTES[self.shape.out]

    @property
    def element(self) -> int:
        """Bytes of one A or B element."""
        return ELEMENT_BYTES[self.shape.dtype]

    @property
    def a_array(self) -> tuple[int, int]:
        return _stored((self.shape.m, self.shape.k), self.shape.a_transposed)

    @property
    def b_array(self) -> tuple[int, int]:
        return _stored((self.shape.k, self.shape.n), self.shape.b_transposed)

    @property
    def a_buffer(self) -> tuple[int, int]:
        if self.leading_dims:
            return self._widened(self.a_array, self.copy_a)
        return _stored((self.mp, self.kp), self.shape.a_transposed)

    @property
    def b_buffer(self) -> tuple[int, int]:
        if self.leading_dims:
            return self._widened(self.b_array, self.copy_b)
        return _stored((self.kp, self.np), self.shape.b_transposed)

    @property
    def c_buffer(self) -> tuple[int, int]:
        return (self.mp, self.np)

    def a_in(self) -> Copy2D:
        """A, as stored, into the top left of its buffer."""
        return _copy_into(self.a_array, self.a_buffer, self.element)

    def b_in(self) -> Copy2D:
        """B, as stored, into the top left of its buffer."""
        return _copy_into(self.b_array, self.b_buffer, self.element)

    def c_in(self) -> Copy2D:
        """C (M x N) into its Mp x Np buffer (only when beta reads it)."""
        return _copy_into((self.shape.m, self.shape.n), self.c_buffer, self.c_bytes)

    def c_out(self) -> Copy2D:
        """The M x N part of the C buffer back into C."""
        n = self.shape.n * self.c_bytes
        return Copy2D(self.shape.m, n, self.np * self.c_bytes, n)

    @property
    def bytes_moved(self) -> int:
        """Bytes the copies read and write when beta is 0 (C is not copied in)."""
        a = self.a_in() if self.copy_a else None
        b = self.b_in() if self.copy_b else None
        c = self.c_out() if self.copy_c else None
        return sum(2 * copy.rows * copy.width for copy in (a, b, c) if copy is not None)


def plan_padding(
    shape: Shape,
    a_aligned: bool = True,
    b_aligned: bool = True,
    c_aligned: bool = True,
    leading_dims: bool = False,
    c_rows: bool = False,
) -> PaddingPlan:
    """What a padded launch of ``shape`` copies, given whether each array's base is 16-byte
    aligned, whether the kernel takes leading dimensions (then the product keeps its
    dimensions and C is never copied) and whether N, C's row length, is rounded up in every
    layout (``c_rows``, the vendor library's padded launch)."""
    mp, np_, kp = (shape.m, shape.n, shape.k) if leading_dims else _padded_dims(shape, c_rows)
    plan = PaddingPlan(shape, mp, np_, kp, False, False, False, leading_dims)
    multiple = pad_multiple(shape.dtype)

    def ragged(array: tuple[int, int], buffer: tuple[int, int]) -> bool:
        if leading_dims:
            return array[1] % multiple != 0
        return buffer != array

    return replace(
        plan,
        copy_a=ragged(plan.a_array, plan.a_buffer) or not a_aligned,
        copy_b=ragged(plan.b_array, plan.b_buffer) or not b_aligned,
        copy_c=not leading_dims and ((mp, np_) != (shape.m, shape.n) or not c_aligned),
    )


def row_pitch(array: Any) -> int:
    """Elements from one row of a 2-D array to the next: the ``ld`` its kernel is given. Rows
    must be contiguous and must not overlap."""
    rows, cols = array.shape
    step, item = array.strides[0], array.itemsize
    if rows == 1:
        return int(cols)
    if (cols > 1 and array.strides[1] != item) or step % item or step // item < cols:
        raise ValueError(
            f"a {rows} x {cols} array with strides {array.strides} has no row pitch a kernel "
            "can take: rows must be contiguous and must not overlap"
        )
    return int(step // item)
