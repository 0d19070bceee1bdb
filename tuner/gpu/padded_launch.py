"""A padded config's launch on the GPU: copy in, run the kernel, copy back (what
``tuner.kernels.operand_padding`` plans), for any input type and layout.

The buffers are made zeroed once and kept per device, stream, thread, shape and operand mode,
so each call copies only the arrays' own extents (``tuner.gpu.pad_copy``'s kernel, on the current
stream, in order with the product's): the pads stay zero because nothing writes them, except
C's extra columns, which are never read back. A kernel that takes leading dimensions is given each
buffer's padded row length as its pitch and the caller's C (``tuner.gpu.measure.launch_kernel``).
Everything is asynchronous; what a caller times around :func:`launch_padded` includes the
copies. What a call does depends only on the shape and on each array's alignment and pitch
(:func:`launch_steps`, cached), so a repeated call spends its host time on the launches alone:
a timed launch whose host work outlasts the GPU's would count the host's time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.kept_buffers import kept_buffers
from tuner.gpu.pad_copy import copy_rows
from tuner.kernels.operand_padding import (
    VECTOR_BYTES,
    Copy2D,
    PaddingPlan,
    plan_padding,
    row_pitch,
)
from tuner.kernels.render import KernelSource

RawLaunch = Callable[[Any, KernelSource, Shape, float, Any, Any, float, Any], None]


@dataclass(frozen=True)
class Layout:
    """What a launch needs to know of one array: whether its base is on 16 bytes, its row
    pitch in bytes, and its row length in bytes."""

    aligned: bool
    pitch: int
    width: int

    @classmethod
    def of(cls, array: Any) -> Layout:
        item = int(array.itemsize)
        aligned = int(array.data.ptr) % VECTOR_BYTES == 0
        return cls(aligned, row_pitch(array) * item, int(array.shape[1]) * item)

    @property
    def vector_rows(self) -> bool:
        """A base on 16 bytes and rows whole 16-byte vectors apart: what a kernel that takes
        leading dimensions reads where the array lies, whatever the row length."""
        return self.aligned and self.pitch % VECTOR_BYTES == 0

    @property
    def packed_in_place(self) -> bool:
        """A base on 16 bytes and packed rows: what a kernel without leading dimensions may
        read (or write) where the array lies, if its rows need no padding."""
        return self.aligned and self.pitch == self.width


@dataclass(frozen=True)
class LaunchSteps:
    """A padded launch's plan and its copies with the arrays' own pitches (None: not copied)."""

    plan: PaddingPlan
    a_in: Copy2D | None
    b_in: Copy2D | None
    c_in: Copy2D | None  # made only when beta reads C
    c_out: Copy2D | None


@functools.lru_cache(maxsize=256)
def launch_steps(
    shape: Shape, leading_dims: bool, a: Layout, b: Layout, c: Layout, c_rows: bool = False
) -> LaunchSteps:
    """The plan of ``shape`` for arrays laid out as ``a``, ``b``, ``c``, and each copy reading
    (or, C's copy back, writing) the caller's rows at their own pitch; ``c_rows``: N, C's row
    length, is rounded up too (``Family.pads_c_rows``)."""
    if leading_dims:
        # The kernel reads A and B in rows of whole vectors wherever they lie (the plan's own
        # rule assumes packed rows), and writes C in place.
        plan = replace(
            plan_padding(shape, leading_dims=True),
            copy_a=not a.vector_rows,
            copy_b=not b.vector_rows,
        )
    else:
        plan = plan_padding(
            shape, a.packed_in_place, b.packed_in_place, c.packed_in_place, c_rows=c_rows
        )
    return LaunchSteps(
        plan,
        replace(plan.a_in(), src_pitch=a.pitch) if plan.copy_a else None,
        replace(plan.b_in(), src_pitch=b.pitch) if plan.copy_b else None,
        replace(plan.c_in(), src_pitch=c.pitch) if plan.copy_c else None,
        replace(plan.c_out(), dst_pitch=c.pitch) if plan.copy_c else None,
    )


def _buffers_for(plan: PaddingPlan, a_dtype: Any, b_dtype: Any, c_dtype: Any) -> dict[str, Any]:
    """Zeroed buffers of the arrays ``plan`` copies, each of its array's own dtype (FP16 or
    BF16 bits move as they are; C float32 or, for a half C, its half type), kept per device,
    stream and thread (``tuner.gpu.kept_buffers``)."""
    import cupy

    def make() -> dict[str, Any]:
        wanted = {
            "a": (plan.copy_a, plan.a_buffer, a_dtype),
            "b": (plan.copy_b, plan.b_buffer, b_dtype),
            "c": (plan.copy_c, plan.c_buffer, c_dtype),
        }
        return {
            name: cupy.zeros(extent, dtype=dtype)
            for name, (copied, extent, dtype) in wanted.items()
            if copied
        }

    return kept_buffers(("padded", plan, a_dtype, b_dtype, c_dtype), make)


def launch_padded(
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
    """``C = alpha*A@B + beta*C`` through padded buffers where ``shape`` or the arrays' bases
    need them (``tuner.kernels.operand_padding.plan_padding``), else straight on the arrays, with
    ``raw_launch`` (``tuner.gpu.measure.launch_kernel``) running the kernel."""
    steps = launch_steps(
        shape, source.leading_dims, Layout.of(a), Layout.of(b), Layout.of(c), source.pads_c_rows
    )
    plan = steps.plan
    if not plan.copies:
        raw_launch(kernel, source, shape, alpha, a, b, beta, c)
        return
    buffers = _buffers_for(plan, a.dtype, b.dtype, c.dtype)
    if steps.a_in is not None:
        copy_rows(buffers["a"], a, steps.a_in, plan.element)
    if steps.b_in is not None:
        copy_rows(buffers["b"], b, steps.b_in, plan.element)
    if steps.c_in is not None and beta != 0.0:
        copy_rows(buffers["c"], c, steps.c_in, plan.c_bytes)
    a_run = buffers["a"] if plan.copy_a else a
    b_run = buffers["b"] if plan.copy_b else b
    c_run = buffers["c"] if plan.copy_c else c
    raw_launch(kernel, source, plan.run_shape, alpha, a_run, b_run, beta, c_run)
    if steps.c_out is not None:
        copy_rows(c, buffers["c"], steps.c_out, plan.c_bytes)
