"""The default cuBLAS call run like a kernel (family ``cublas``): what ``cupy.matmul`` and
``torch.matmul`` users get, measured beside our kernels and cuBLASLt's algorithms.

The call is ``cublasSgemm`` for float32 NN (what CuPy calls, and the float32 reference of
``tuner.gpu.measure``) and ``cublasGemmEx`` for every other input type, layout and type of C, with
FP32 sums (``CUBLAS_COMPUTE_32F``, never TF32) and ``CUBLAS_GEMM_DEFAULT``: cuBLAS picks the
algorithm itself, so there is nothing to store or replay but the call's name.

Row-major operands go in as the column-major product C^T = op(B)^T op(A)^T, each operand's row
pitch as its leading dimension, so views of wider rows run in place. cuBLAS's own wrappers in
CuPy set the handle's stream to CuPy's current stream on every call: a launch on another stream
(torch's) makes that stream current around the call.

:class:`DefaultCall` stands where a loaded kernel stands in ``tuner.gpu.measure.launch``;
:class:`DefaultCallLaunch` is the prepared call of ``tuner.matmul`` and ``tuner.torch``
(pointers in, one library call out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.gpu.half_arrays import CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, CUDA_TYPES
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import KernelSource

LIBRARY = "cublas"
SGEMM = "cublasSgemm"
GEMM_EX = "cublasGemmEx"


def default_call_launch(
    name: str, shape: Shape, pitches: tuple[int, int, int]
) -> DefaultCallLaunch | None:
    """The prepared default call of config ``name`` on operands ``pitches`` elements apart;
    None unless ``name`` is the default call on the caller's arrays (``cublas``: a padded one
    copies, and takes the general path)."""
    config = parse_config(name)
    if get_family(config.family).vendor != LIBRARY or config.pad:
        return None
    return DefaultCallLaunch(name, shape, pitches)


def call_name(shape: Shape) -> str:
    """Which cuBLAS function the default call of ``shape`` is."""
    return SGEMM if shape.is_default_kind else GEMM_EX


@dataclass
class DefaultCall:
    """The default call of a ``cublas`` config; remembers which function ran last, for the
    identity a measurement stores."""

    config: Config
    _last: str | None = field(default=None)

    def identity(self) -> dict[str, Any]:
        """What a measurement stores: the library, its version and the function called."""
        identity: dict[str, Any] = {"library": LIBRARY, "version": cublas_version()}
        if self._last is not None:
            identity["call"] = self._last
        return identity


def cublas_version() -> int:
    """cuBLAS's version number (major*10000 + minor*100 + patch) of CuPy's handle."""
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas

    return int(cublas.getVersion(cuda.device.get_cublas_handle()))


def run_default_call(
    kernel: DefaultCall,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """The default call on these CuPy arrays (rows contiguous, any pitch), on the current stream
    (asynchronous)."""
    pitches = (row_pitch(a), row_pitch(b), row_pitch(c))
    default_gemm(shape, pitches, alpha, int(a.data.ptr), int(b.data.ptr), beta, int(c.data.ptr))
    kernel._last = call_name(shape)


def default_gemm(
    shape: Shape,
    pitches: tuple[int, int, int],
    alpha: float,
    a_ptr: int,
    b_ptr: int,
    beta: float,
    c_ptr: int,
) -> None:
    """``C = alpha * op(A) @ op(B) + beta * C`` by the default call, on CuPy's current stream:
    A, B and C stored row-major as ``shape``'s layout says, rows ``pitches`` elements apart."""
    import numpy as np
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas

    lda, ldb, ldc = pitches
    one_alpha = np.array(alpha, dtype=np.float32)
    one_beta = np.array(beta, dtype=np.float32)
    op_b = cublas.CUBLAS_OP_T if shape.b_transposed else cublas.CUBLAS_OP_N
    op_a = cublas.CUBLAS_OP_T if shape.a_transposed else cublas.CUBLAS_OP_N
    handle = cuda.device.get_cublas_handle()
    m, n, k = shape.m, shape.n, shape.k
    if shape.is_default_kind:
        cublas.sgemm(
            handle, op_b, op_a, n, m, k, one_alpha.ctypes.data, b_ptr, ldb, a_ptr, lda,
            one_beta.ctypes.data, c_ptr, ldc,
        )  # fmt: skip
        return
    kind = CUDA_TYPES[shape.dtype]
    cublas.gemmEx(
        handle, op_b, op_a, n, m, k, one_alpha.ctypes.data, b_ptr, kind, ldb, a_ptr, kind, lda,
        one_beta.ctypes.data, c_ptr, CUDA_TYPES[shape.out], ldc, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT,
    )  # fmt: skip


class DefaultCallLaunch:
    """The default call of one shape and row pitches, ready: what a repeated ``tuner.matmul`` or
    ``tuner.torch`` call of a ``cublas`` answer runs (operands as CuPy arrays or device
    pointers, as ``tuner.gpu.call_plan.DirectLaunch`` takes them)."""

    __slots__ = ("name", "pitches", "shape")

    def __init__(self, name: str, shape: Shape, pitches: tuple[int, int, int]) -> None:
        self.name = name
        self.shape = shape
        self.pitches = pitches

    def launch(self, a: Any, b: Any, alpha: float, beta: float, c: Any, stream: Any) -> None:
        """``c = alpha * a @ b + beta * c`` on ``stream`` (a CuPy stream, or None: the current
        one), asynchronously."""
        ptrs = tuple(x if isinstance(x, int) else int(x.data.ptr) for x in (a, b, c))
        if stream is None:
            default_gemm(self.shape, self.pitches, alpha, ptrs[0], ptrs[1], beta, ptrs[2])
            return
        with stream:
            default_gemm(self.shape, self.pitches, alpha, ptrs[0], ptrs[1], beta, ptrs[2])
