"""The answered kernel launched on torch CUDA tensors, on torch's current stream, without copies.

``tuner.torch`` checks its arguments and reduces every call to 2-D products into a C of the type
it asks for (float32, or the half input type: :func:`prepare_gemm` once per kind,
:meth:`TorchGemm.run` per call). The kernel reads the
tensors' memory directly: its pointer arguments are the tensors' ``data_ptr()`` (a transposed
view starts where the matrix it views does), on the stream torch has current, which CuPy is
handed as a stream object of its own (``tuner.gpu.call_plan.cupy_stream``). Only configs that
need more than their kernel (padded copies, the BF16 split of the emulated families) see the
tensors as CuPy arrays: zero-copy views of the same memory (``cupy.cuda.UnownedMemory`` owned by
the tensor, what CuPy itself makes of a ``__cuda_array_interface__``), built per call, so those
configs cost more host time per call.

BF16 tensors are viewed as ``uint16`` arrays, the bit patterns every kernel reads, whether or not
this CuPy has a bfloat16 dtype.

A ``cublas`` answer (the default cuBLAS call, ``tuner.gpu.default_call``) is prepared like a
kernel: one library call on the tensors' pointers, each operand's row pitch its leading
dimension, so nothing is packed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.answers.best import computed
from tuner.core.shape import Shape
from tuner.gpu.call_plan import (
    DirectLaunch,
    cupy_stream,
    kernel_alone,
    refuse_first_call_while_capturing,
)
from tuner.gpu.default_call import DefaultCallLaunch, default_call_launch
from tuner.gpu.loaded import compiled
from tuner.gpu.matmul import MatmulCall, launch_answer, require_cupy

Prep = Callable[[Any], Any] | None  # what an operand becomes before the launch (None: itself)

# CuPy stream objects kept by handle: making one per call would cost more than the launch.
_streams: dict[int, Any] = {}
KEPT_STREAMS = 64


def _contiguous(tensor: Any) -> Any:
    return tensor.contiguous()


def _contiguous_transposed(tensor: Any) -> Any:
    """A transposed operand's stored matrix (its transpose), packed: the pointer stays that of
    a matrix stored transposed."""
    return tensor.T.contiguous()


class TorchGemm:
    """``c = alpha * a @ b + beta * c`` for 2-D CUDA tensors of one kind (shape, strides, dtype,
    device) and C of ``shape.out``, (M, N) contiguous."""

    __slots__ = ("a_prep", "algorithm", "b_prep", "device", "direct", "name", "shape")

    def __init__(
        self,
        name: str,
        shape: Shape,
        device: int,
        direct: DirectLaunch | DefaultCallLaunch | None,
        a_prep: Prep,
        b_prep: Prep,
        algorithm: tuple[str, ...] | None = None,
    ) -> None:
        self.name = name
        self.algorithm = algorithm  # a vendor config's stored algorithm (launch_answer)
        self.shape = shape
        self.device = device
        self.direct = direct
        self.a_prep = a_prep
        self.b_prep = b_prep

    def run(self, a: Any, b: Any, c: Any, alpha: float = 1.0, beta: float = 0.0) -> None:
        """Launch on torch's current stream of the tensors' GPU (asynchronous)."""
        if self.a_prep is not None:
            a = self.a_prep(a)
        if self.b_prep is not None:
            b = self.b_prep(b)
        stream_ptr = _raw_stream(self.device)
        stream = _streams.get(stream_ptr)
        if stream is None:
            stream = _keep_stream(stream_ptr)
        if self.direct is not None and _current_device() == self.device:
            self.direct.launch(a.data_ptr(), b.data_ptr(), alpha, beta, c.data_ptr(), stream)
            return
        cupy = require_cupy("tuner.torch")
        with cupy.cuda.Device(self.device), stream:
            if self.direct is not None:
                self.direct.launch(a.data_ptr(), b.data_ptr(), alpha, beta, c.data_ptr(), stream)
                return
            shape = self.shape
            a_view = as_cupy(a.T if shape.a_transposed else a)
            b_view = as_cupy(b.T if shape.b_transposed else b)
            call = MatmulCall(shape, a_view, b_view, as_cupy(c))
            launch_answer(self.name, call, alpha, beta, self.algorithm)


def prepare_gemm(
    a: Any,
    b: Any,
    a_transposed: bool,
    b_transposed: bool,
    pitches: tuple[int, int],
    accuracy: str,
    answer: Callable[[Shape], tuple[str, tuple[str, ...] | None]],
    out_dtype: str = "float32",
) -> TorchGemm:
    """The launch of ``a @ b`` (2-D CUDA tensors of one dtype, on one GPU, read in place as
    ``a_transposed``/``b_transposed`` and the stored row ``pitches`` say) into a C of
    ``out_dtype`` (float32, or the inputs' half type: ``tuner.core.shape.OUT_DTYPES``).

    ``answer`` names the config for the shape (and a vendor config's stored algorithm); it is
    asked with the tensors' GPU current. Where no family of the ``accuracy`` class computes the
    layout (float32 in T layouts at ``exact``), the transposed operands are copied to row-major
    on every call, and the shape is NN.
    Operands in wider rows are copied packed on every call where the config reads packed rows.
    """
    global _raw_stream, _current_device
    cupy = require_cupy("tuner.torch")
    _raw_stream, _current_device = _torch_stream_reader(), cupy.cuda.runtime.getDevice

    device = int(a.device.index)
    m, k = (int(x) for x in a.shape)
    n = int(b.shape[1])
    dtype = str(a.dtype).removeprefix("torch.")
    a_prep: Prep = None
    b_prep: Prep = None
    layout = ("T" if a_transposed else "N") + ("T" if b_transposed else "N")
    a_pitch, b_pitch = pitches
    if not computed(dtype, layout, accuracy):
        if a_transposed:
            a_prep, a_transposed, a_pitch = _contiguous, False, k
        if b_transposed:
            b_prep, b_transposed, b_pitch = _contiguous, False, n
        layout = "NN"
    shape = Shape(m, n, k, dtype, layout, out_dtype)
    with cupy.cuda.Device(device):
        refuse_first_call_while_capturing(_raw_stream(device))
        name, algorithm = answer(shape)
        default_call = default_call_launch(name, shape, (a_pitch, b_pitch, n))
        if default_call is not None:  # cuBLAS reads any pitch: nothing to pack
            return TorchGemm(name, shape, device, default_call, a_prep, b_prep)
        if not kernel_alone(name):
            return TorchGemm(name, shape, device, None, a_prep, b_prep, algorithm)
        source = compiled(name)[1]
        packed = (m if a_transposed else k, k if b_transposed else n)
        if not source.leading_dims:
            # The kernel reads packed rows: operands in wider rows are packed per call.
            if a_pitch != packed[0]:
                a_prep = _contiguous_transposed if a_transposed else _contiguous
            if b_pitch != packed[1]:
                b_prep = _contiguous_transposed if b_transposed else _contiguous
            direct = DirectLaunch(name, shape, None, source)
        else:
            direct = DirectLaunch(name, shape, (a_pitch, b_pitch, n), source)
    return TorchGemm(name, shape, device, direct, a_prep, b_prep)


def as_cupy(tensor: Any) -> Any:
    """A zero-copy CuPy view of a 2-D CUDA tensor with a row pitch (BF16 as ``uint16``)."""
    cupy = require_cupy("tuner.torch")
    dtypes = {"float32": cupy.float32, "float16": cupy.float16, "bfloat16": cupy.uint16}
    dtype = dtypes[str(tensor.dtype).removeprefix("torch.")]
    rows, cols = (int(x) for x in tensor.shape)
    row_step, col_step = (int(x) for x in tensor.stride())
    item = int(tensor.element_size())
    extent = ((rows - 1) * row_step + (cols - 1) * col_step + 1) * item
    memory = cupy.cuda.UnownedMemory(tensor.data_ptr(), extent, tensor, int(tensor.device.index))
    return cupy.ndarray(
        (rows, cols),
        dtype,
        cupy.cuda.MemoryPointer(memory, 0),
        strides=(row_step * item, col_step * item),
    )


def _keep_stream(stream_ptr: int) -> Any:
    if len(_streams) >= KEPT_STREAMS:
        _streams.pop(next(iter(_streams)))
    stream = _streams[stream_ptr] = cupy_stream(stream_ptr)
    return stream


def _torch_stream_reader() -> Callable[[int], int]:
    """The reader of torch's current stream handle on a device: torch's raw one (what its
    compiled code calls) where there is one, since ``torch.cuda.current_stream()`` builds a
    Python Stream object on every call."""
    import torch

    raw: Callable[[int], int] | None = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: int(torch.cuda.current_stream(device).cuda_stream)


def _not_prepared(*args: Any) -> int:
    raise RuntimeError("tuner.gpu.torch_launch: prepare_gemm runs before any launch")


# Bound by the first prepare_gemm (torch and CuPy are imported lazily).
_raw_stream: Callable[[int], int] = _not_prepared
_current_device: Callable[[], int] = _not_prepared
