"""A repeated ``tuner.matmul`` call as one kernel launch: what a call of one shape launches,
worked out once and kept.

The first call of a shape asks for the answer, compiles and loads its kernel, and reads the
launch geometry; :class:`DirectLaunch` keeps all of it (the CUDA function, grid, block, dynamic
shared memory, M, N and K as the kernel's ``int`` arguments, each operand's row pitch), so a later
call only converts alpha and beta and launches. Only a config that runs its kernel alone on the
caller's arrays is launched this way (:func:`direct_launch`); a padded config (copies in and back)
and an emulated one (the BF16 split first) keep the general path of
:func:`tuner.gpu.measure.launch`, which costs more host time per call.

The split-K families keep ticket counters in their module (``Family.module_counters``): two of
their launches must not overlap, so each launch site (the CUDA stream and the calling thread) gets
a module of its own, loaded on its first launch (:func:`tuner.gpu.loaded.compiled`). A site's
first launch must not come while its stream is being captured into a CUDA graph (loading a module
is not a stream operation): :meth:`DirectLaunch.function` refuses it with an error that says to
call once on that stream first.
"""

from __future__ import annotations

import threading
from typing import Any

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.gpu.default_call import DefaultCallLaunch, default_call_launch
from tuner.gpu.loaded import compiled
from tuner.gpu.measure import sm_count
from tuner.kernels.families import get_family, parse_config, rewrites_operands


class DirectLaunch:
    """One kernel launch of a config on operands of one shape and row pitches, ready to go.

    Operands are passed as CuPy arrays or as device pointers (Python ints: the kernel's
    pointer arguments are 64-bit, which is what CuPy passes a Python int as); what matters is
    where the stored operand starts, which a transposed view shares with the array it views.
    """

    __slots__ = ("block", "dims", "grid", "name", "pitches", "shape", "shared_mem", "sites")

    def __init__(
        self, name: str, shape: Shape, pitches: tuple[int, int, int] | None, source: Any
    ) -> None:
        import numpy as np

        self.name = name
        self.shape = shape
        geometry = source.launch(shape, sm_count() if source.persistent else None)
        self.grid = tuple(geometry.grid)
        self.block = tuple(geometry.block)
        self.shared_mem = int(geometry.dynamic_smem_bytes)
        self.dims = (np.int32(shape.m), np.int32(shape.n), np.int32(shape.k))
        # The kernel's lda, ldb, ldc (None: it reads packed rows and takes none).
        self.pitches = None if pitches is None else tuple(np.int32(p) for p in pitches)
        # Site -> CUDA function: one entry (site None) unless the family keeps module counters.
        self.sites: dict[Any, Any] = {}
        if not get_family(source.config.family).module_counters:
            self.sites[None] = compiled(name)[0].kernel

    def function(self, stream: Any) -> Any:
        """The CUDA function to launch on ``stream`` (a CuPy stream, or None: the current one)
        from this thread."""
        stream_ptr = current_stream_ptr() if stream is None else int(stream.ptr)
        site = (stream_ptr, threading.get_ident())
        function = self.sites.get(site)
        if function is None:
            _refuse_while_capturing(stream_ptr, self.name)
            function = self.sites[site] = compiled(self.name, site)[0].kernel
        return function

    def launch(self, a: Any, b: Any, alpha: float, beta: float, c: Any, stream: Any) -> None:
        """``c = alpha * a @ b + beta * c`` on ``stream`` (a CuPy stream, or None: the current
        one), asynchronously."""
        import numpy as np

        m, n, k = self.dims
        if self.pitches is None:
            args: tuple[Any, ...] = (m, n, k, np.float32(alpha), a, b, np.float32(beta), c)
        else:
            lda, ldb, ldc = self.pitches
            args = (m, n, k, np.float32(alpha), a, lda, b, ldb, np.float32(beta), c, ldc)
        function = self.sites.get(None)  # one module for every site, unless counters
        if function is None:
            function = self.function(stream)
        function(self.grid, self.block, args, self.shared_mem, stream)


def kernel_alone(name: str) -> bool:
    """Whether config ``name`` runs its kernel alone on the caller's operands: neither padded
    (copies in and back) nor emulated (the BF16 split first), nor the vendor library's, nor one
    that takes tensor maps."""
    family = get_family(parse_config(name).family)
    if family.vendor:
        # The library's: cuBLASLt through tuner.gpu.matmul.launch_answer, the default call
        # through its own prepared call (tuner.gpu.default_call).
        return False
    if family.tensor_maps:
        return False  # its tensor maps go by the driver's launch (tuner.gpu.tensor_maps)
    config = compiled(name)[1].config  # compiled and loaded here, before any capture
    return not config.pad and not rewrites_operands(config)


def direct_launch(
    name: str, shape: Shape, pitches: tuple[int, int, int], packed: tuple[int, int, int]
) -> DirectLaunch | DefaultCallLaunch | None:
    """The direct launch of config ``name`` on ``shape``'s stored operands, whose rows are
    ``pitches`` elements apart (A, B, C as stored) and ``packed`` elements long; None where the
    config needs more than its kernel, or reads packed rows that these operands do not have.
    The default cuBLAS call (``cublas``) is one library call, prepared alike."""
    default_call = default_call_launch(name, shape, pitches)
    if default_call is not None:
        return default_call
    if not kernel_alone(name):
        return None
    source = compiled(name)[1]
    if source.leading_dims:
        return DirectLaunch(name, shape, pitches, source)
    if pitches != packed:
        return None
    return DirectLaunch(name, shape, None, source)


def current_stream_ptr() -> int:
    """The handle of CuPy's current stream."""
    import cupy

    return int(cupy.cuda.get_current_stream().ptr)


def is_capturing(stream_ptr: int) -> bool:
    """Whether the stream is being captured into a CUDA graph (asked on first calls only)."""
    return bool(cupy_stream(stream_ptr).is_capturing())


def cupy_stream(stream_ptr: int) -> Any:
    """A CuPy stream object for a stream someone else made (torch's). CuPy 14 deprecates
    ``ExternalStream`` in favour of ``Stream.from_external`` (for objects that speak the CUDA
    stream protocol); for a raw handle the older class is the direct way, and works as it did."""
    import warnings

    import cupy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(stream_ptr)


def _refuse_while_capturing(stream_ptr: int, name: str) -> None:
    if is_capturing(stream_ptr):
        raise InputError(
            f"config {name} keeps split-K counters in a module of its own per stream and "
            "thread, and this stream's module would be loaded during CUDA graph capture: "
            "call it once with this shape on the capturing stream before capturing"
        )


def refuse_first_call_while_capturing(stream_ptr: int) -> None:
    """An :class:`InputError` when the stream is being captured: a shape's first call looks its
    answer up, compiles and loads, none of which a CUDA graph can hold."""
    if is_capturing(stream_ptr):
        raise InputError(
            "the first call of a shape, dtype and layout cannot be captured in a CUDA graph "
            "(it looks the answer up, compiles and loads the kernel): call it once before "
            "capturing"
        )
