"""How the input types live in CuPy arrays, and cuBLAS's GEMM on any of them.

float32 and float16 are CuPy dtypes. bfloat16 is one only where CuPy knows it (a ``bfloat16``
dtype from ml_dtypes); everywhere else the tuner holds BF16 values as their 16-bit patterns
in ``uint16`` arrays, which is all a kernel reads. The conversions here round to nearest even.

``gemm`` is the cuBLAS reference of every shape: one ``cublasGemmEx`` on the stored operands
(row-major, either of them transposed) into a C of the shape's ``out_dtype`` (float32, or
float16 / bfloat16 rounded once from the FP32 result, as the kernels write it), with FP32 sums
(``CUBLAS_COMPUTE_32F``: never TF32, which only ``..._FAST_TF32`` would allow).
"""

from __future__ import annotations

from typing import Any

from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_DTYPES, Shape

# cudaDataType_t and cublasComputeType_t (library_types.h, cublas_api.h).
CUDA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14}
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1


def dtype_name(array: Any) -> str:
    """The input type an array holds, by the tuner's names (``uint16`` is not one: raw bits do
    not say whether they are FP16 or BF16)."""
    return str(getattr(array, "dtype", ""))


def from_float32(values: Any, dtype: str) -> Any:
    """``values`` (float32 CuPy array) rounded to ``dtype``: float32 and float16 as CuPy arrays
    of that dtype, bfloat16 as its bit patterns in a uint16 array. Rounds to nearest even; a
    contiguous array in one pass of ``templates/half_convert.cu``."""
    import cupy as cp

    if dtype == "float32":
        return values
    if _convertible(values, "float32"):
        if dtype == "float16":
            return _converted(values, "round_to_f16", cp.float16)
        return _converted(values, "round_to_bf16", cp.uint16)
    if dtype == "float16":
        return values.astype(cp.float16)
    bits = values.view(cp.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # to nearest even (no NaN inputs here)
    return rounded.astype(cp.uint16)


def nan_filled(rows: int, cols: int, dtype: str) -> Any:
    """A rows x cols array of ``dtype`` (stored as :func:`from_float32` stores it) holding NaN
    everywhere: a C that a kernel must overwrite without reading.

    Every byte 0xFF: all ones is a NaN in float32, FP16 and BF16 alike (the exponent all ones,
    the fraction not zero), and a memset needs no kernel compiled (``cupy.full`` compiles one
    with CuPy's headers on first use, about a second on an empty cache)."""
    import cupy as cp

    stored = {"bfloat16": cp.uint16, "float16": cp.float16}.get(dtype, cp.float32)
    array = cp.empty((rows, cols), dtype=stored)
    array.data.memset_async(NAN_BYTE, array.nbytes)
    return array


NAN_BYTE = 0xFF  # see nan_filled


def to_float32(stored: Any, dtype: str) -> Any:
    """The float32 values of an array made by :func:`from_float32` (exact: every FP16 and BF16
    value is a float32), as a new array; a contiguous one by one copy or one pass of
    ``templates/half_convert.cu``."""
    import cupy as cp

    if dtype == "float32" and _convertible(stored, "float32"):
        return device_copy(stored)
    if dtype == "float16" and _convertible(stored, "float16"):
        return _converted(stored, "widen_f16", cp.float32)
    if dtype == "bfloat16" and _convertible(stored, "uint16", "bfloat16"):
        return _converted(stored, "widen_bf16", cp.float32)
    if dtype != "bfloat16":
        return stored.astype(cp.float32)
    return (stored.view(cp.uint16).astype(cp.uint32) << 16).view(cp.float32)


def device_copy(array: Any) -> Any:
    """A copy of a C-contiguous array by one device-to-device memcpy (``ndarray.copy`` compiles
    an element-wise kernel with CuPy's headers on first use)."""
    import cupy as cp

    copy = cp.empty_like(array)
    copy.data.copy_from_device_async(array.data, array.nbytes)
    return copy


# Conversions by the kernels of templates/half_convert.cu: CuPy's astype and its bit operations
# compile with CuPy's headers on first use (2.0 s for a first BF16 shape's operands on the lent
# H200 with an empty cache, h200-start-parts-2026-11-29-7739c55.json).
CONVERT_THREADS = 256
CONVERT_MAX_BLOCKS = 1024


def _convertible(array: Any, *dtypes: str) -> bool:
    return str(array.dtype) in dtypes and bool(array.flags.c_contiguous)


def _converted(array: Any, kernel: str, dtype: Any) -> Any:
    import cupy as cp

    from tuner.gpu.plain_kernels import grid_stride_blocks, plain_kernel

    out = cp.empty(array.shape, dtype=dtype)
    if array.size:
        blocks = grid_stride_blocks(array.size, CONVERT_THREADS, CONVERT_MAX_BLOCKS)
        launch = plain_kernel("half_convert.cu", kernel)
        launch((blocks,), (CONVERT_THREADS,), (array, out, cp.uint64(array.size)))
    return out


def gemm(shape: Shape, alpha: float, a: Any, b: Any, beta: float, c: Any) -> None:
    """``c = alpha * op(a) @ op(b) + beta * c`` by one cuBLAS call, in place: ``a`` and ``b``
    stored as ``shape.layout`` says (A M x K or K x M, B K x N or N x K, row-major), ``c`` a
    row-major M x N array of ``shape.out_dtype`` (as :func:`from_float32` stores it). alpha,
    beta and the sums are FP32 whatever C is (``CUBLAS_COMPUTE_32F`` scales in float).

    cuBLAS is column-major: it computes the row-major M x N C as its N x M C^T = op(B)^T
    op(A)^T, B first. A row-major array read column-major is its transpose, so an operand stored
    as used (A M x K, B K x N) is already op(X)^T (cuBLAS ``N``), and one stored transposed needs
    cuBLAS ``T``.
    """
    import numpy as np
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas

    if shape.dtype not in CUDA_TYPES:
        raise InputError(f"no cuBLAS type for dtype {shape.dtype!r}")
    kind = CUDA_TYPES[shape.dtype]
    m, n, k = shape.m, shape.n, shape.k
    one_alpha = np.array(alpha, dtype=np.float32)
    one_beta = np.array(beta, dtype=np.float32)
    cublas.gemmEx(
        cuda.device.get_cublas_handle(),
        cublas.CUBLAS_OP_T if shape.b_transposed else cublas.CUBLAS_OP_N,
        cublas.CUBLAS_OP_T if shape.a_transposed else cublas.CUBLAS_OP_N,
        n,
        m,
        k,
        one_alpha.ctypes.data,
        b.data.ptr,
        kind,
        k if shape.b_transposed else n,
        a.data.ptr,
        kind,
        m if shape.a_transposed else k,
        one_beta.ctypes.data,
        c.data.ptr,
        CUDA_TYPES[shape.out],
        n,
        CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT,
    )


def describe(array: Any) -> str:
    """What an argument is, for error messages: its type, and a CuPy/NumPy array's shape and
    dtype."""
    shape = getattr(array, "shape", None)
    dtype = getattr(array, "dtype", None)
    return f"{type(array).__name__}" + (f" {shape} {dtype}" if shape is not None else "")


def operand(name: str, array: Any) -> tuple[Any, bool]:
    """What a kernel reads for operand ``name``: a C-contiguous array, and whether it holds the
    operand transposed. A transposed view of a C-contiguous array (``w.T``) is read in place,
    as layout ``T``; any other strides are copied once into a C-contiguous array.

    Raises:
        InputError: naming ``name``, unless it is a 2-D CuPy array of a supported dtype.
    """
    import cupy

    if (
        not isinstance(array, cupy.ndarray)
        or array.ndim != 2
        or dtype_name(array) not in SUPPORTED_DTYPES
    ):
        raise InputError(
            f"`{name}` must be a 2-D cupy array of {', '.join(SUPPORTED_DTYPES)}, "
            f"got {describe(array)}"
        )
    if array.flags.c_contiguous:
        return array, False
    if array.T.flags.c_contiguous:
        return array.T, True
    return cupy.ascontiguousarray(array), False
