"""A padded config's launch on the GPU: copy in, run the kernel, copy back (what
``tuner.operand_padding`` plans), for any input type and layout.

The buffers are made zeroed once and kept per device, stream, thread, shape and operand mode,
so each call copies only the arrays' own extents (``tuner.pad_copy``'s kernel, on the current
stream, in order with the product's): the pads stay zero because nothing writes them, except
C's extra columns, which are never read back. A kernel that takes leading dimensions is given each
buffer's padded row length as its pitch and the caller's C (``tuner.measure.launch_kernel``).
Everything is asynchronous; what a caller times around :func:`launch_padded` includes the
copies.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tuner.operand_padding import (
    C_BYTES,
    VECTOR_BYTES,
    Copy2D,
    PaddingPlan,
    plan_padding,
    row_pitch,
)
from tuner.pad_copy import copy_rows
from tuner.render import KernelSource
from tuner.shape import Shape

# Buffer sets kept (a study or a bench works on one shape at a time; matmul callers on a few).
KEPT_BUFFERS = 4

_buffers: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_lock = threading.Lock()

RawLaunch = Callable[[Any, KernelSource, Shape, float, Any, Any, float, Any], None]


def _in_place(array: Any, leading_dims: bool) -> bool:
    """Whether the kernel may read (or write) ``array`` where it lies as far as its base and
    pitch go: a base on 16 bytes, and rows whole 16-byte vectors apart (a kernel that takes
    leading dimensions) or packed (one that does not). Else the plan copies it."""
    pitch, cols = row_pitch(array), int(array.shape[1])
    if int(array.data.ptr) % VECTOR_BYTES:
        return False
    if leading_dims:
        return pitch * int(array.itemsize) % VECTOR_BYTES == 0 or pitch == cols
    return pitch == cols


def _buffers_for(plan: PaddingPlan, a_dtype: Any, b_dtype: Any) -> dict[str, Any]:
    """Zeroed buffers of the arrays ``plan`` copies (A and B of the arrays' own dtypes: FP16
    or BF16 bits move as they are; C float32) for this device, stream and thread (made on
    first use; the oldest set is dropped beyond :data:`KEPT_BUFFERS`)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    key = (
        cupy.cuda.Device().id,
        stream.ptr,
        threading.get_ident(),
        plan,
        str(a_dtype),
        str(b_dtype),
    )
    with _lock:
        kept = _buffers.get(key)
        if kept is None:
            while len(_buffers) >= KEPT_BUFFERS:
                _buffers.popitem(last=False)
            wanted = {
                "a": (plan.copy_a, plan.a_buffer, a_dtype),
                "b": (plan.copy_b, plan.b_buffer, b_dtype),
                "c": (plan.copy_c, plan.c_buffer, cupy.float32),
            }
            kept = _buffers[key] = {
                name: cupy.zeros(extent, dtype=dtype)
                for name, (copied, extent, dtype) in wanted.items()
                if copied
            }
        _buffers.move_to_end(key)
        return kept


def _from(array: Any, copy: Copy2D, element: int) -> Copy2D:
    """``copy`` reading ``array``'s rows at their own pitch (a view may sit in wider rows)."""
    return replace(copy, src_pitch=row_pitch(array) * element)


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
    need them (``tuner.operand_padding.plan_padding``), else straight on the arrays, with
    ``raw_launch`` (``tuner.measure.launch_kernel``) running the kernel."""
    ld = source.leading_dims
    plan = plan_padding(shape, _in_place(a, ld), _in_place(b, ld), _in_place(c, ld), ld)
    if not plan.copies:
        raw_launch(kernel, source, shape, alpha, a, b, beta, c)
        return
    buffers = _buffers_for(plan, a.dtype, b.dtype)
    if plan.copy_a:
        copy_rows(buffers["a"], a, _from(a, plan.a_in(), plan.element), plan.element)
    if plan.copy_b:
        copy_rows(buffers["b"], b, _from(b, plan.b_in(), plan.element), plan.element)
    if plan.copy_c and beta != 0.0:
        copy_rows(buffers["c"], c, _from(c, plan.c_in(), C_BYTES), C_BYTES)
    a_run = buffers["a"] if plan.copy_a else a
    b_run = buffers["b"] if plan.copy_b else b
    c_run = buffers["c"] if plan.copy_c else c
    raw_launch(kernel, source, plan.run_shape, alpha, a_run, b_run, beta, c_run)
    if plan.copy_c:
        out = plan.c_out()
        copy_rows(c, buffers["c"], replace(out, dst_pitch=row_pitch(c) * C_BYTES), C_BYTES)
