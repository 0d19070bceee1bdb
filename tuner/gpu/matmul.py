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
from tuner.core.shape import Shape
from tuner.gpu.half_arrays import describe, dtype_name, operand
from tuner.gpu.loaded import compiled
from tuner.kernels.families import is_vendor, parse_config


@dataclass(frozen=True)
class MatmulCall:
    """One call's operands as the kernel reads them, and the shape they make."""

    shape: Shape
    a: Any  # A as stored (the array itself, or the array a transposed view was made from)
    b: Any
    c: Any  # the output, float32 (M, N), C-contiguous


def prepare_call(a: Any, b: Any, beta: float, c: Any, accuracy: str) -> MatmulCall:
    """Check the operands (naming the array at fault) and read the shape and layout from them.

    A C-contiguous array is read as it is, and so is the transposed view of one (layout T);
    float32 in a layout that only emulated families compute, asked at a stricter class, is copied
    to NN once. ``c`` is allocated when None (``beta`` must then be 0).
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
    if c is None:
        if beta != 0:
            raise InputError(f"`beta` must be 0 when `c` is None, got {beta!r}")
        c = cupy.empty((m, n), dtype=cupy.float32)
    elif not isinstance(c, cupy.ndarray) or c.dtype != cupy.float32:
        raise InputError(f"`c` must be a cupy float32 array, got {describe(c)}")
    elif c.shape != (m, n) or not c.flags.c_contiguous:
        raise InputError(f"`c` must be C-contiguous with shape {(m, n)}, got {c.shape}")
    layout = ("T" if a_transposed else "N") + ("T" if b_transposed else "N")
    if not computed(dtype_name(a), layout, accuracy):
        # No family of the class computes this layout: the operands as NN, copied once.
        a_stored = cupy.ascontiguousarray(a_stored.T) if a_transposed else a_stored
        b_stored = cupy.ascontiguousarray(b_stored.T) if b_transposed else b_stored
        layout = "NN"
    # 1..2**31-1 each, or InputError naming the dimension
    return MatmulCall(Shape(m, n, k, dtype_name(a), layout), a_stored, b_stored, c)


def launch_answer(
    name: str,
    call: MatmulCall,
    alpha: float,
    beta: float,
    algorithm: tuple[str, ...] | None = None,
) -> None:
    """Run config ``name`` on ``call``'s operands, on the current stream; a vendor config
    (``cublaslt``) through the library, replaying ``algorithm`` (hex words) where given."""
    import cupy

    from tuner.gpu.measure import launch

    if is_vendor(parse_config(name).family):
        kernel, source = vendor_kernel(name, algorithm)
    else:
        # The handle alone does not name a stream: each thread's per-thread default stream has
        # the same one.
        site = (cupy.cuda.get_current_stream().ptr, threading.get_ident())
        kernel, source = compiled(name, site)
    launch(kernel, source, call.shape, alpha, call.a, call.b, beta, call.c)


# (config name, stored algorithm) -> its vendor kernel: one per answer, so an algorithm is
# checked (or the heuristic asked) once per problem, not per call.
_vendor_kernels: dict[tuple[str, tuple[str, ...] | None], tuple[Any, Any]] = {}
_vendor_lock = threading.Lock()


def vendor_kernel(name: str, algorithm: tuple[str, ...] | None) -> tuple[Any, Any]:
    """The :class:`~tuner.gpu.vendor_launch.VendorKernel` and source of a vendor config, kept
    per process; ``algorithm``: the stored words it replays (None: its rank)."""
    from tuner.gpu.lt_layouts import algo_words
    from tuner.gpu.vendor_launch import VendorKernel, vendor_source

    key = (name, algorithm)
    with _vendor_lock:
        kept = _vendor_kernels.get(key)
        if kept is None:
            config = parse_config(name)
            stored = algo_words(list(algorithm)) if algorithm else None
            kept = _vendor_kernels[key] = (VendorKernel(config, stored), vendor_source(config))
        return kept
