"""Padded operands: which arrays a padded config (``_pad4``) copies, into what, and how much.

The templates read a row as 16-byte vectors only when its length is a multiple of 4 floats and
its base is 16-byte aligned (``vec_ok`` in templates/_common.cuh.j2): A's rows are K long, B's
and C's N long. A row of another length makes every tile of that operand take 4-byte copies,
four times the instructions. A padded config instead runs its kernel on (M, Np, Kp), Kp and Np
rounded up to multiples of :data:`~tuner.config.OPERAND_PAD`, on zero-padded buffers: A as
M x Kp, B as Kp x Np, C as M x Np. The zero columns of A meet the zero rows of B, so the product
is unchanged; C's extra columns are never copied back.

Only what needs it is copied: A when K is ragged or A's base is off 16 bytes; B when K or N
is ragged (the zero rows) or B's base is off; C when N is ragged or C's base is off (in before
the kernel only when beta reads it, back after). Everything here is arithmetic on integers;
``tuner.padded_launch`` does the copies on the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.config import OPERAND_PAD, Config
from tuner.shape import Shape

FLOAT_BYTES = 4


def round_up(value: int, multiple: int = OPERAND_PAD) -> int:
    """The smallest multiple of ``multiple`` that is at least ``value``."""
    return -(-value // multiple) * multiple


def padding_refusal(shape: Shape) -> str | None:
    """Why padded operands are not offered for ``shape`` (None when they are): only float32
    NN products are padded, and only where a row length (K or N) is ragged."""
    if not shape.is_default_kind:
        return f"padded operands are for float32 NN shapes, not {shape.dtype} {shape.layout}"
    if shape.k % OPERAND_PAD == 0 and shape.n % OPERAND_PAD == 0:
        return (
            f"padded operands are for row lengths that are not multiples of {OPERAND_PAD}, "
            f"and K={shape.k}, N={shape.n} are"
        )
    return None


def padded_twins(configs: Sequence[Config], shape: Shape) -> list[Config]:
    """The padded variant of each unpadded config, for a shape that padding applies to (none
    for any other shape: the search of aligned shapes stays as it was)."""
    if padding_refusal(shape) is not None:
        return []
    return [c.padded() for c in configs if not c.pad]


@dataclass(frozen=True)
class Copy2D:
    """One pitched copy: ``rows`` rows of ``width`` bytes, ``src_pitch`` and ``dst_pitch``
    bytes apart (the arguments of ``cudaMemcpy2DAsync``)."""

    rows: int
    width: int
    src_pitch: int
    dst_pitch: int


@dataclass(frozen=True)
class PaddingPlan:
    """The buffers a padded launch uses and the copies it makes, for one call."""

    shape: Shape  # the caller's product
    kp: int
    np: int
    copy_a: bool
    copy_b: bool
    copy_c: bool

    @property
    def run_shape(self) -> Shape:
        """The product the kernel computes: M x Np x Kp."""
        return Shape(self.shape.m, self.np, self.kp, self.shape.dtype, self.shape.layout)

    @property
    def copies(self) -> bool:
        """Whether anything is copied (else the kernel runs on the caller's arrays)."""
        return self.copy_a or self.copy_b or self.copy_c

    @property
    def a_buffer(self) -> tuple[int, int]:
        return (self.shape.m, self.kp)

    @property
    def b_buffer(self) -> tuple[int, int]:
        return (self.kp, self.np)

    @property
    def c_buffer(self) -> tuple[int, int]:
        return (self.shape.m, self.np)

    def a_in(self) -> Copy2D:
        """A (M x K) into its M x Kp buffer."""
        k = self.shape.k * FLOAT_BYTES
        return Copy2D(self.shape.m, k, k, self.kp * FLOAT_BYTES)

    def b_in(self) -> Copy2D:
        """B (K x N) into the top left of its Kp x Np buffer."""
        n = self.shape.n * FLOAT_BYTES
        return Copy2D(self.shape.k, n, n, self.np * FLOAT_BYTES)

    def c_in(self) -> Copy2D:
        """C (M x N) into its M x Np buffer (only when beta reads it)."""
        n = self.shape.n * FLOAT_BYTES
        return Copy2D(self.shape.m, n, n, self.np * FLOAT_BYTES)

    def c_out(self) -> Copy2D:
        """The M x N part of the C buffer back into C."""
        n = self.shape.n * FLOAT_BYTES
        return Copy2D(self.shape.m, n, self.np * FLOAT_BYTES, n)

    @property
    def bytes_moved(self) -> int:
        """Bytes the copies read and write when beta is 0 (C is not copied in)."""
        a = self.a_in() if self.copy_a else None
        b = self.b_in() if self.copy_b else None
        c = self.c_out() if self.copy_c else None
        return sum(2 * copy.rows * copy.width for copy in (a, b, c) if copy is not None)


def plan_padding(
    shape: Shape, a_aligned: bool = True, b_aligned: bool = True, c_aligned: bool = True
) -> PaddingPlan:
    """What a padded launch of ``shape`` copies, given whether each array's base is 16-byte
    aligned. A float32 NN shape only (``padding_refusal``'s first reason)."""
    if not shape.is_default_kind:
        raise ValueError(f"padded operands are for float32 NN shapes, not {shape}")
    kp, np_ = round_up(shape.k), round_up(shape.n)
    return PaddingPlan(
        shape,
        kp,
        np_,
        copy_a=kp != shape.k or not a_aligned,
        copy_b=kp != shape.k or np_ != shape.n or not b_aligned,
        copy_c=np_ != shape.n or not c_aligned,
    )
