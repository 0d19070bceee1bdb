"""The GPU side of ``tuner.matmul``: the caller's CuPy arrays checked and read as a shape, and
the answered config launched on them.

The client (``tuner.client``) asks which config to run; this module owns everything that touches
CuPy, so the client stays importable without it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tuner.answers.best import computed
from tuner.core.errors import InputError
from tuner.core.shape import OUT_DTYPES, Shape, check_out_dtype, default_out_dtype
from tuner.gpu.half_arrays import describe, dtype_name, operand
from tuner.gpu.loaded import compiled


@dataclass(frozen=True)
class MatmulCall:
    """One call's operands as the kernel reads them, and the shape they make."""

    shape: Shape
    a: Any  # A as stored (the array itself, or the array a transposed view was made from)
    b: Any
    c: Any  # the output (M, N) of shape.out_dtype, C-contiguous


def prepare_call(
    a: Any, b: Any, beta: float, c: Any, accuracy: str, out_dtype: str | None = None
) -> MatmulCall:
    """Check the operands (naming the array at fault) and read the shape, layout and type of C
    from them.

    A C-contiguous array is read as it is, and so is the transposed view of one (layout T);
    float32 in a layout that only emulated families compute, asked at a stricter class, is copied
    to NN once. ``c`` is allocated when None (``beta`` must then be 0), of ``out_dtype`` (None:
    the input type); a given ``c`` decides the type of C, and must agree with ``out_dtype``.
    """
    import cupy

    a_stored, a_transposed = operand("a", a)
    b_stored, b_transposed = operand("b", b)
    if a.dtype != b.dtype:
        raise InputError(
            f"`b` is {dtype_name(b)} and `a` is {dtype_name(a)}: A and B must have one dtype"
        )
    if a.shape[1] != b.shape[0]:
        raise InputError(f"`a` is {a.shape} and `b` is {b.shape}: inner dimensions differ")
    m, k = a.shape
    n = b.shape[1]
    dtype = dtype_name(a)
    allowed = OUT_DTYPES[dtype]
    if c is None:
        if beta != 0:
            raise InputError(f"`beta` must be 0 when `c` is None, got {beta!r}")
        out = check_out_dtype(default_out_dtype(dtype) if out_dtype is None else out_dtype, dtype)
        c = cupy.empty((m, n), dtype=_cupy_dtype(out, a))
    elif not isinstance(c, cupy.ndarray) or dtype_name(c) not in allowed:
        raise InputError(
            f"`c` must be a cupy array of {', '.join(allowed)} for {dtype} inputs, got "
            f"{describe(c)}"
        )
    elif c.shape != (m, n) or not c.flags.c_contiguous:
        raise InputError(f"`c` must be C-contiguous with shape {(m, n)}, got {c.shape}")
    elif out_dtype is not None and out_dtype != dtype_name(c):
        raise InputError(f"`out_dtype` is {out_dtype!r} but `c` is {dtype_name(c)}: give one")
    layout = ("T" if a_transposed else "N") + ("T" if b_transposed else "N")
    if not computed(dtype_name(a), layout, accuracy):
        # No family of the class computes this layout: the operands as NN, copied once.
        a_stored = cupy.ascontiguousarray(a_stored.T) if a_transposed else a_stored
        b_stored = cupy.ascontiguousarray(b_stored.T) if b_transposed else b_stored
        layout = "NN"
    # 1..2**31-1 each, or InputError naming the dimension
    return MatmulCall(Shape(m, n, k, dtype, layout, dtype_name(c)), a_stored, b_stored, c)


def _cupy_dtype(name: str, like: Any) -> Any:
    """The CuPy dtype of the tuner's type ``name`` (float32 or ``like``'s own type: bfloat16 is
    the dtype CuPy gave the inputs)."""
    return like.dtype if name == dtype_name(like) else name


def launch_answer(name: str, call: MatmulCall, alpha: float, beta: float) -> None:
    """Run config ``name`` on ``call``'s operands, on the current stream."""
    import cupy

    from tuner.gpu.measure import launch

    # The handle alone does not name a stream: each thread's per-thread default stream has
    # the same one.
    site = (cupy.cuda.get_current_stream().ptr, threading.get_ident())
    kernel, source = compiled(name, site)
    launch(kernel, source, call.shape, alpha, call.a, call.b, beta, call.c)
