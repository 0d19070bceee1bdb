"""TMA tensor maps for the ``tma_ws`` family, and its launch with them passed by value.

A kernel that moves its operands with the tensor memory accelerator takes, for each of A, B (and
C, for TMA stores), a ``CUtensorMap``: 128 bytes the driver encodes on the host
(``cuTensorMapEncodeTiled``) naming the array's address, its two dimensions and row pitch, the box
one copy moves and the swizzle it has in shared memory. The kernel declares them
``const __grid_constant__`` parameters, so they travel by value in the launch's parameter buffer.

CuPy's ``RawKernel`` call passes arrays and numeric scalars only, so these kernels are launched
with the driver's ``cuLaunchKernel`` on the loaded function (through ctypes, on the current CuPy
stream), which copies each parameter from the pointer given, its size from the function's
parameter table. The driver library is the one CuPy already uses (``libcuda.so.1``).

A persistent grid of clusters is sized by ``cuOccupancyMaxActiveClusters``: a GPC's SMs pair off
into clusters of two only where its SM count allows, so fewer than SMs / 2 clusters may be
resident at once, and a grid of more would leave the surplus waiting for a second turn.

Encoding costs a few microseconds; maps are kept per (address, type, dimensions, pitch, box) so
that repeated launches on the same arrays (timing, a user's loop) do not rebuild them.
"""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.selection import driver_library
from tuner.kernels.families import get_family
from tuner.kernels.families.tma_ws import (
    C_ELEMENT_BYTES,
    K_TILE,
    M_TILE,
    ROW_BYTES,
    box_rows,
    cluster_size,
)
from tuner.kernels.launch_recipe import kernel_parameters
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import KernelSource, Launch

# CUtensorMapDataType by element type, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h).
TMA_TYPES = {"float16": 6, "bfloat16": 9, "float32": 7}
TMA_TYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
OUT_TYPES = {0: "float32", 1: "float16", 2: "bfloat16"}  # C's type by the config's OUT
SWIZZLE_128B = 3
L2_PROMOTION_256B = 3
INTERLEAVE_NONE = 0
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read as zeros
MAP_BYTES = 128
MAP_ALIGN = 64
TMA_ALIGN = 16  # bytes: the base address and the row pitch must be multiples
CACHE_SIZE = 256
NO_MAP = bytes(MAP_BYTES)  # what the kernel gets for C when it stores C directly


class TensorMapError(RuntimeError):
    """The driver refused to encode a tensor map (its CUresult is in the message)."""


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h), for the occupancy query."""

    _fields_ = [
        ("gridDimX", ctypes.c_uint),
        ("gridDimY", ctypes.c_uint),
        ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint),
        ("blockDimY", ctypes.c_uint),
        ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p),
        ("numAttrs", ctypes.c_uint),
    ]


@functools.cache
def _driver() -> ctypes.CDLL:
    lib = driver_library()
    encode = lib.cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    # CUtensorMap* (64-byte aligned), data type, rank, global address, dimensions (innermost
    # first), strides of the outer dimensions in bytes, box, element strides, interleave,
    # swizzle, L2 promotion, out-of-bounds fill.
    encode.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]
    encode.argtypes += [u64p, u64p, u32p, u32p, *([ctypes.c_int] * 4)]
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    # CUfunction; grid x, y, z; block x, y, z; dynamic shared bytes; CUstream; void** params;
    # void** extra.
    launch.argtypes = [ctypes.c_void_p, *([ctypes.c_uint] * 7), *([ctypes.c_void_p] * 3)]
    clusters = lib.cuOccupancyMaxActiveClusters
    clusters.restype = ctypes.c_int
    clusters.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_void_p]
    return lib


_maps: OrderedDict[tuple[int, ...], bytes] = OrderedDict()


def encode_map(
    address: int, dtype: str, cols: int, rows: int, pitch: int, box: tuple[int, int]
) -> bytes:
    """The 128 bytes of a tensor map over a row-major ``rows`` x ``cols`` matrix of ``dtype``
    at ``address`` whose rows are ``pitch`` elements apart, moved in boxes of ``box`` =
    (columns, rows) stored 128-byte swizzled, zeros read outside the matrix.

    Raises:
        ValueError: the address or the row pitch is not a multiple of 16 bytes (TMA's unit),
            or the dtype has no tensor-map type here.
        TensorMapError: the driver refused the map.
    """
    if dtype not in TMA_TYPES:
        raise ValueError(f"tensor maps are made for {', '.join(TMA_TYPES)} arrays, not {dtype}")
    size = TMA_TYPE_BYTES[dtype]
    if address % TMA_ALIGN or (pitch * size) % TMA_ALIGN:
        raise ValueError(
            f"TMA reads an operand only from a 16-byte aligned base with rows a multiple of 16 "
            f"bytes apart: got address {address:#x} and a row pitch of {pitch} {dtype} elements "
            "(use the config's _pad8 variant, which copies such operands)"
        )
    key = (address, TMA_TYPES[dtype], cols, rows, pitch, *box)
    found = _maps.get(key)
    if found is not None:
        _maps.move_to_end(key)
        return found
    raw = ctypes.create_string_buffer(MAP_BYTES + MAP_ALIGN)
    at = (ctypes.addressof(raw) + MAP_ALIGN - 1) // MAP_ALIGN * MAP_ALIGN
    status = _driver().cuTensorMapEncodeTiled(
        at,
        TMA_TYPES[dtype],
        2,
        address,
        (ctypes.c_uint64 * 2)(cols, rows),
        (ctypes.c_uint64 * 1)(pitch * size),
        (ctypes.c_uint32 * 2)(*box),
        (ctypes.c_uint32 * 2)(1, 1),
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


def array_map(array: Any, dtype: str, box: tuple[int, int]) -> bytes:
    """The tensor map of a 2-D CuPy array (rows contiguous) holding ``dtype`` values."""
    rows, cols = array.shape
    pitch = row_pitch(array)
    if rows == 1:  # one row: any pitch will do, so give TMA one it accepts
        per_vector = TMA_ALIGN // TMA_TYPE_BYTES[dtype]
        pitch = -(-cols // per_vector) * per_vector
    return encode_map(int(array.data.ptr), dtype, cols, rows, pitch, box)


def operand_maps(source: KernelSource, shape: Shape, a: Any, b: Any) -> tuple[bytes, bytes]:
    """A's and B's tensor maps for ``source``'s tiles: a K-major operand in boxes of 64 k by
    BM (or BN) rows, an MN-major one in boxes of 64 m (or n) by 64 k; halved for an operand
    the blocks of a cluster share (``box_rows``)."""
    a_rows, b_rows = box_rows(source.config.as_dict(), shape.layout)
    return (
        array_map(a, shape.dtype, (K_TILE, a_rows)),
        array_map(b, shape.dtype, (K_TILE, b_rows)),
    )


def c_store_map(source: KernelSource, beta: float, c: Any) -> bytes | None:
    """C's tensor map for the TMA-store epilogue (EPI 1), or None where the kernel stores C
    directly: EPI 0, beta != 0 (C is read), or C's base or row pitch off 16 bytes."""
    params = source.config.as_dict()
    if params.get("EPI", 0) != 1 or beta != 0.0:
        return None
    out = OUT_TYPES[params["OUT"]]
    pitch = row_pitch(c)
    if int(c.data.ptr) % TMA_ALIGN or (pitch * TMA_TYPE_BYTES[out]) % TMA_ALIGN:
        return None
    return array_map(c, out, (ROW_BYTES // C_ELEMENT_BYTES[params["OUT"]], M_TILE))


def function_handle(kernel: Any) -> int:
    """The ``CUfunction`` of a loaded CuPy kernel (``RawKernel``)."""
    return int(kernel.kernel.ptr)


@functools.cache
def _active_clusters(function: int, size: int, threads: int, smem: int, sm_count: int) -> int:
    config = _LaunchConfig(size * max(1, sm_count // size), 1, 1, threads, 1, 1, smem)
    count = ctypes.c_int(0)
    status = _driver().cuOccupancyMaxActiveClusters(
        ctypes.byref(count), function, ctypes.addressof(config)
    )
    if status != 0 or count.value < 1:
        return max(1, sm_count // size)
    return int(count.value)


def block_slots(kernel: Any, source: KernelSource, sm_count: int) -> int:
    """Blocks that can run at once, one per SM: ``sm_count``, or for clusters of several
    blocks, the resident clusters times their size."""
    size = cluster_size(source.config.as_dict())
    if size == 1:
        return sm_count
    clusters = _active_clusters(
        function_handle(kernel), size, source.threads, source.dynamic_smem_bytes, sm_count
    )
    return clusters * size


def launch_tma(
    kernel: Any,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
    sm_count: int,
) -> None:
    """Launch a tensor-map kernel ``(M, N, K, alpha, a_map, b_map, beta, C, ldc, c_map,
    c_tma)`` on the current CuPy stream (asynchronous), its persistent grid sized for
    ``sm_count`` SMs."""
    import cupy

    geo: Launch = source.launch(shape, block_slots(kernel, source, sm_count))
    a_map, b_map = operand_maps(source, shape, a, b)
    c_map = c_store_map(source, beta, c)
    by_name: dict[str, ctypes._SimpleCData[Any] | ctypes.Array[ctypes.c_uint8]] = {
        "M": ctypes.c_int32(shape.m),
        "N": ctypes.c_int32(shape.n),
        "K": ctypes.c_int32(shape.k),
        "alpha": ctypes.c_float(alpha),
        "a_map": (ctypes.c_uint8 * MAP_BYTES).from_buffer_copy(a_map),
        "b_map": (ctypes.c_uint8 * MAP_BYTES).from_buffer_copy(b_map),
        "beta": ctypes.c_float(beta),
        "C": ctypes.c_void_p(int(c.data.ptr)),
        "ldc": ctypes.c_int32(row_pitch(c)),
        "c_map": (ctypes.c_uint8 * MAP_BYTES).from_buffer_copy(c_map or NO_MAP),
        "c_tma": ctypes.c_int32(0 if c_map is None else 1),
    }
    # In the order of the one table the API's launch recipe reads too (launch_kernel's rule).
    family = get_family(source.config.family)
    values = [by_name[p.name] for p in kernel_parameters(family, shape.dtype)]
    table = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    status = _driver().cuLaunchKernel(
        function_handle(kernel),
        *geo.grid,
        *geo.block,
        geo.dynamic_smem_bytes,
        cupy.cuda.get_current_stream().ptr,
        ctypes.addressof(table),
        None,
    )
    if status != 0:
        raise RuntimeError(f"cuLaunchKernel returned CUresult {status} for {shape.label()}")
