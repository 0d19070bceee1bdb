"""The GPU side of ``tuner.matmul``: the caller's CuPy arrays checked and read as a shape, and
the answered config launched on them.

The client (``tuner.client``) asks which config to run; this module owns everything that touches
CuPy, so the client stays importable without it.

:func:`run_matmul` is the call: the first call of a kind of operands (shapes, strides, dtypes,
array types, device, and where and how the answer is asked) checks them, asks for the answer
and keeps a :class:`Prepared` call; a later call of that kind only looks it up by those
attributes and launches (``tuner.gpu.call_plan``), so its host time is about that of one CuPy
kernel launch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from tuner.answers.best import computed
from tuner.core.accuracy import check_accuracy
from tuner.core.errors import InputError
from tuner.core.shape import OUT_DTYPES, Shape, check_out_dtype, default_out_dtype
from tuner.gpu.call_plan import (
    DirectLaunch,
    current_stream_ptr,
    direct_launch,
    refuse_first_call_while_capturing,
)
from tuner.gpu.default_call import DefaultCallLaunch
from tuner.gpu.half_arrays import describe, dtype_name, operand
from tuner.gpu.loaded import compiled
from tuner.kernels.families import is_vendor, parse_config

CUPY_EXTRA = "pip install 'gemmtune[gpu]' (CUDA 13) or 'gemmtune[gpu-cuda12]' (CUDA 12)"
# Kinds of calls kept; past this many (a program cycling through shapes), the oldest go.
KEPT_CALLS = 512


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
    """The kernel (:func:`~tuner.gpu.vendor_launch.make_vendor_kernel`) and source of a vendor
    config, kept per process; ``algorithm``: the stored words it replays (None: its rank)."""
    from tuner.gpu.lt_layouts import algo_words
    from tuner.gpu.vendor_launch import make_vendor_kernel, vendor_source

    key = (name, algorithm)
    with _vendor_lock:
        kept = _vendor_kernels.get(key)
        if kept is None:
            config = parse_config(name)
            stored = algo_words(list(algorithm)) if algorithm else None
            kept = _vendor_kernels[key] = (
                make_vendor_kernel(config, stored),
                vendor_source(config),
            )
        return kept


def require_cupy(purpose: str) -> Any:
    """CuPy, or an :class:`ImportError` saying which extra installs it."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        raise ImportError(f"{purpose} needs CuPy, which is not installed: {CUPY_EXTRA}") from exc
    return cupy


@dataclass(frozen=True)
class Prepared:
    """What a kind of call runs: the answered config, and its direct launch where there is one
    (None: the general path of :func:`launch_answer`, checks included, on every call)."""

    name: str
    algorithm: tuple[str, ...] | None  # a vendor config's stored algorithm (launch_answer)
    direct: DirectLaunch | DefaultCallLaunch | None
    c_shape: tuple[int, int]
    c_dtype: Any  # the CuPy dtype of C the call allocates


# (operand attributes, device, asked) -> the prepared call. Plain dict operations: each is atomic
# under the GIL, and two threads preparing one kind at once store equal values.
_prepared: dict[Hashable, Prepared] = {}


def run_matmul(
    a: Any,
    b: Any,
    alpha: float,
    beta: float,
    c: Any,
    accuracy: str,
    out_dtype: str | None,
    asked: Hashable,
    answer: Callable[[Shape, Any], tuple[str, tuple[str, ...] | None]],
) -> Any:
    """``alpha * a @ b + beta * c`` for :func:`tuner.client.matmul`: ``answer`` names the config
    of a shape as asked (``asked``: where and how, ``accuracy`` included), and the vendor
    algorithm it replays, once per kind; C of ``out_dtype`` (None: ``c``'s type, else the input
    type)."""
    key = _kind(a, b, c, (asked, out_dtype))
    prepared = _prepared.get(key)
    if prepared is None:
        return _first_call(key, a, b, alpha, beta, c, accuracy, out_dtype, asked, answer)
    direct = prepared.direct
    if direct is None:
        call = prepare_call(a, b, beta, c, accuracy, out_dtype)
        launch_answer(prepared.name, call, alpha, beta, prepared.algorithm)
        return call.c
    if c is None:
        if beta != 0:
            raise InputError(f"`beta` must be 0 when `c` is None, got {beta!r}")
        c = _empty(prepared.c_shape, prepared.c_dtype)
    direct.launch(a, b, alpha, beta, c, None)
    return c


def _kind(a: Any, b: Any, c: Any, asked: Hashable) -> Hashable:
    """What makes calls alike: every attribute the checks and the launch read; None for
    operands that are not arrays (the checks name them) and before CuPy is loaded."""
    try:
        return (
            type(a),
            a.shape,
            a.strides,
            a.dtype,
            type(b),
            b.shape,
            b.strides,
            b.dtype,
            None if c is None else (type(c), c.shape, c.strides, c.dtype),
            _device(),
            asked,
        )
    except AttributeError:
        return None


def _first_call(
    key: Hashable,
    a: Any,
    b: Any,
    alpha: float,
    beta: float,
    c: Any,
    accuracy: str,
    out_dtype: str | None,
    asked: Hashable,
    answer: Callable[[Shape, Any], tuple[str, tuple[str, ...] | None]],
) -> Any:
    global _device, _empty
    cupy = require_cupy("tuner.matmul")
    _device, _empty = cupy.cuda.runtime.getDevice, cupy.empty
    if key is None:  # the first call of the process: CuPy was not loaded to read the kind
        key = _kind(a, b, c, (asked, out_dtype))
    check_accuracy(accuracy)
    call = prepare_call(a, b, beta, c, accuracy, out_dtype)  # checks every operand, naming it
    refuse_first_call_while_capturing(current_stream_ptr())
    name, algorithm = answer(call.shape, asked)
    direct = None
    in_place = call.a.data.ptr == a.data.ptr and call.b.data.ptr == b.data.ptr
    if in_place and (c is None or call.c is c):  # direct_launch refuses cuBLASLt configs
        direct = direct_launch(name, call.shape, _pitches(call), _packed(call.shape))
    if key is not None:
        if len(_prepared) >= KEPT_CALLS:
            _prepared.pop(next(iter(_prepared)))
        c_shape = (call.shape.m, call.shape.n)
        _prepared[key] = Prepared(name, algorithm, direct, c_shape, call.c.dtype)
    if direct is None:
        launch_answer(name, call, alpha, beta, algorithm)
    else:
        direct.launch(call.a, call.b, alpha, beta, call.c, None)
    return call.c


def _pitches(call: MatmulCall) -> tuple[int, int, int]:
    from tuner.kernels.operand_padding import row_pitch

    return row_pitch(call.a), row_pitch(call.b), row_pitch(call.c)


def _packed(shape: Shape) -> tuple[int, int, int]:
    """The row lengths of A, B and C as ``shape``'s layout stores them."""
    return (
        shape.m if shape.a_transposed else shape.k,
        shape.k if shape.b_transposed else shape.n,
        shape.n,
    )


def _no_cupy_yet() -> Any:
    raise AttributeError("CuPy is not loaded yet")  # makes the first call take _first_call


# Bound to CuPy's own functions by the first call (CuPy is imported lazily).
_device: Callable[[], int] = _no_cupy_yet
_empty: Any = None
