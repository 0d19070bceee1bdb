"""TMA tensor maps for the ``tma_ws`` family, and its launch with them passed by value.

A kernel that reads its operands with the tensor memory accelerator takes, for each of A and B,
a ``CUtensorMap``: 128 bytes the driver encodes on the host (``cuTensorMapEncodeTiled``) naming
the array's address, its two dimensions and row pitch, the box one copy moves and the swizzle it
is stored with in shared memory. The kernel declares them ``const __grid_constant__`` parameters,
so they travel by value in the launch's parameter buffer.

CuPy's ``RawKernel`` call passes arrays and numeric scalars only, so these kernels are launched
with the driver's ``cuLaunchKernel`` on the loaded function (through ctypes, on the current
stream), which copies each parameter from the pointer given as the function's parameter table
says. The driver library is the one CuPy already uses (``libcuda.so.1``).

Encoding costs a few microseconds; maps are kept per (address, type, dimensions, pitch, box) so
that repeated launches on the same arrays (timing, a user's loop) do not rebuild them.
"""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from typing import Any

from tuner.core.shape import Shape
from tuner.kernels.families.tma_ws import K_TILE, box_rows
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import Launch, KernelSource

# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h).
TMA_TYPES = {"float16": 6, "bfloat16": 9}
SWIZZLE_128B = 3
L2_PROMOTION_256B = 3
INTERLEAVE_NONE = 0
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read as zeros
MAP_BYTES = 128
MAP_ALIGN = 64
TMA_ALIGN = 16  # bytes: the base address and the row pitch must be multiples
HALF_BYTES = 2
CACHE_SIZE = 256


class TensorMapError(RuntimeError):
    """The driver refused to encode a tensor map (its CUresult is in the message)."""


@functools.cache
def _driver() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    encode = lib.cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    encode.argtypes = [
        ctypes.c_void_p,  # CUtensorMap* (64-byte aligned)
        ctypes.c_int,  # data type
        ctypes.c_uint32,  # rank
        ctypes.c_void_p,  # global address
        u64p,  # dimensions, innermost first
        u64p,  # strides of the outer dimensions, in bytes
        u32p,  # box dimensions
        u32p,  # element strides
        ctypes.c_int,  # interleave
        ctypes.c_int,  # swizzle
        ctypes.c_int,  # L2 promotion
        ctypes.c_int,  # out-of-bounds fill
    ]
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    # CUfunction; grid x, y, z; block x, y, z; dynamic shared bytes; CUstream; void** params;
    # void** extra.
    launch.argtypes = [ctypes.c_void_p, *([ctypes.c_uint] * 7), *([ctypes.c_void_p] * 3)]
    return lib


_maps: OrderedDict[tuple[int, ...], bytes] = OrderedDict()


def encode_map(address: int, dtype: str, cols: int, rows: int, pitch: int, box: tuple[int, int]) -> bytes:
    """The 128 bytes of a tensor map over a row-major ``rows`` x ``cols`` matrix of ``dtype``
    halves at ``address`` whose rows are ``pitch`` elements apart, copied in boxes of
    ``box`` = (columns, rows), stored 128-byte swizzled, zeros outside the matrix.

    Raises:
        ValueError: the address or the row pitch is not a multiple of 16 bytes (TMA's unit), or
            the dtype is not a half type.
        TensorMapError: the driver refused the map.
    """
    if dtype not in TMA_TYPES:
        raise ValueError(f"tensor maps are made for float16 or bfloat16 operands, not {dtype}")
    if address % TMA_ALIGN or (pitch * HALF_BYTES) % TMA_ALIGN:
        raise ValueError(
            f"TMA reads an operand only from a 16-byte aligned base with rows a multiple of 16 "
            f"bytes apart: got address {address:#x} and a row pitch of {pitch} halves (use the "
            "config's _pad8 variant, which copies such operands)"
        )
    key = (address, TMA_TYPES[dtype], cols, rows, pitch, *box)
    found = _maps.get(key)
    if found is not None:
        _maps.move_to_end(key)
        return found
    raw = ctypes.create_string_buffer(MAP_BYTES + MAP_ALIGN)
    at = (ctypes.addressof(raw) + MAP_ALIGN - 1) // MAP_ALIGN * MAP_ALIGN
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(pitch * HALF_BYTES)
    box_dims = (ctypes.c_uint32 * 2)(*box)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    status = _driver().cuTensorMapEncodeTiled(
        at,
        TMA_TYPES[dtype],
        2,
        address,
        dims,
        strides,
        box_dims,
        steps,
        INTERLEAVE_NONE,
        SWIZZLE_128B,
        L2_PROMOTION_256B,
        OOB_FILL_ZERO,
    )
    if status != 0:
        raise TensorMapError(
            f"cuTensorMapEncodeTiled returned CUresult {status} for a {rows} x {cols} {dtype} "
            f"matrix (pitch {pitch}) in boxes of {box}"
        )
    encoded = ctypes.string_at(at, MAP_BYTES)
    _maps[key] = encoded
    if len(_maps) > CACHE_SIZE:
        _maps.popitem(last=False)
    return encoded


def operand_map(array: Any, dtype: str, box: tuple[int, int]) -> bytes:
    """The tensor map of a stored operand (a 2-D CuPy array of halves, rows contiguous)."""
    rows, cols = array.shape
    pitch = row_pitch(array)
    if rows == 1:  # one row: any pitch will do, so give TMA one it accepts
        pitch = -(-cols // 8) * 8
    return encode_map(int(array.data.ptr), dtype, cols, rows, pitch, box)


def operand_maps(source: KernelSource, shape: Shape, a: Any, b: Any) -> tuple[bytes, bytes]:
    """A's and B's tensor maps for ``source``'s tiles: a K-major operand in boxes of 64 k by
    BM (or BN) rows, an MN-major one in boxes of 64 m (or n) by 64 k."""
    params = source.config.as_dict()
    a_rows, b_rows = box_rows(params, shape.layout)
    return (
        operand_map(a, shape.dtype, (K_TILE, a_rows)),
        operand_map(b, shape.dtype, (K_TILE, b_rows)),
    )


def function_handle(kernel: Any) -> int:
    """The ``CUfunction`` of a loaded CuPy kernel (``RawKernel``)."""
    return int(kernel.kernel.ptr)


def launch_with_maps(
    kernel: Any,
    geo: Launch,
    shape: Shape,
    alpha: float,
    maps: tuple[bytes, bytes],
    beta: float,
    c: Any,
    ldc: int,
) -> None:
    """Launch a tensor-map kernel ``(M, N, K, alpha, a_map, b_map, beta, C, ldc)`` on the
    current CuPy stream (asynchronous)."""
    import cupy

    values = [
        ctypes.c_int32(shape.m),
        ctypes.c_int32(shape.n),
        ctypes.c_int32(shape.k),
        ctypes.c_float(alpha),
        (ctypes.c_uint8 * MAP_BYTES).from_buffer_copy(maps[0]),
        (ctypes.c_uint8 * MAP_BYTES).from_buffer_copy(maps[1]),
        ctypes.c_float(beta),
        ctypes.c_void_p(int(c.data.ptr)),
        ctypes.c_int32(ldc),
    ]
    table = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    stream = cupy.cuda.get_current_stream().ptr
    status = _driver().cuLaunchKernel(
        function_handle(kernel),
        *geo.grid,
        *geo.block,
        geo.dynamic_smem_bytes,
        stream,
        ctypes.addressof(table),
        None,
    )
    if status != 0:
        raise RuntimeError(f"cuLaunchKernel returned CUresult {status} for {shape.label()}")
