"""``wgmma``: FP16/BF16 inputs on Hopper's warpgroup tensor-core instructions, FP32 sums.

A block of WG_M warpgroups (128 threads each) computes a BM x BN tile of C; each warpgroup
MT = BM / WG_M / 64 tiles of 64 rows, one ``wgmma.mma_async.m64nBNk16`` per m64 tile and k16
step, both operands read by the tensor cores from shared memory through descriptors. A and B
reach shared memory through a STAGES-deep ``cp.async`` ring (the copies are ``hmma``'s), each
k tile of 64 stored in the 128-byte swizzled layout the descriptors name, along K or along M/N
as the operand lies in global memory (the instruction's transpose flags say which). The
products of one k tile run while the next ones are waited for and copied.

``wgmma`` needs the architecture-specific target ``sm_90a`` (``Family.arch_specific``) and runs
on sm_90 only (``Family.max_arch``): later chips drop the instruction.

``wgmma_splitk`` is the same kernel with K split SPLITK ways over grid z, the slices meeting in
C by the split-K hand-off, as ``hmma_splitk`` does.
"""

from __future__ import annotations

from tuner.core.shape import HALF_DTYPES, SUPPORTED_LAYOUTS
from tuner.kernels.families._base import (
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
)
from tuner.kernels.families.hmma import (
    CHUNK,
    HALF_BYTES,
    HALF_OUT_DTYPES,
    HMMA_PARAMS,
    half_split_k,
    hmma_pinned,
    operand_copies,
    stored_tiles,
    whole_chunk_passes,
)
from tuner.kernels.families.split import SPLITK_MAX_TILES

WARPGROUP = 128  # threads of one warpgroup
M_TILE = 64  # rows of one wgmma
K_TILE = 64  # halves of one 128-byte swizzled row: the k tile
ROW_BYTES = 128
# Shared memory past the ring: the ring starts at the first 1024-byte boundary (the swizzle
# atoms must), which may be up to this far into the block's dynamic shared memory.
ALIGN_SPARE = 1024
# Floats added to each row of a warp's C region when C goes through shared memory (rows of
# BN + 8: the float2 writes of a warp's 8 rows x 4 lanes fall in distinct bank pairs).
C_STAGE_PAD = 8
# The most FP32 sums a thread may keep: 128 (m64n256, or two m64n128) leaves registers for the
# copy indices and descriptors under the 255 cap.
MAX_ACCUMULATORS = 128


def wgmma_threads(p: Params) -> int:
    return WARPGROUP * p["WG_M"]


def m64_tiles(p: Params) -> int:
    """m64 tiles each warpgroup computes."""
    return p["BM"] // p["WG_M"] // M_TILE


def _accumulators(p: Params) -> int:
    return m64_tiles(p) * p["BN"] // 2


def stage_bytes(p: Params) -> int:
    return (p["BM"] + p["BN"]) * p["BK"] * HALF_BYTES


def wgmma_derive(p: Params) -> dict[str, int]:
    """Constants of wgmma.cu.j2: each operand's tile as its copies see it (rows along the
    operand's contiguous dimension, as hmma's) and the bytes of one column of 64 m or n in the
    swizzled layout (MN-major tiles are stored column by column)."""
    threads = wgmma_threads(p)
    # A tile whose rows are k is the operand stored along M or N: MN-major for the wgmma.
    (a_mn, a_rows, a_cols), (b_mn, b_rows, b_cols) = stored_tiles(p)
    return {
        "MT": m64_tiles(p),
        "A_MN_MAJOR": a_mn,
        "B_MN_MAJOR": b_mn,
        **operand_copies(a_rows, a_cols, threads, "A"),
        **operand_copies(b_rows, b_cols, threads, "B"),
        "A_COLUMN_BYTES": a_rows * ROW_BYTES,
        "B_COLUMN_BYTES": b_rows * ROW_BYTES,
        "STAGE_BYTES": stage_bytes(p),
        "C_STAGE_PAD": C_STAGE_PAD,
        "SPLITK": p.get("SPLITK", 1),
        "MAX_TILES": SPLITK_MAX_TILES,
    }


def staged_c_bytes(p: Params) -> int:
    """Shared memory the C epilogue through shared memory uses: 16 rows of BN + C_STAGE_PAD
    floats per warp. It fits in the ring for every config the rules allow (BM >= 64 WG_M and
    STAGES >= 3 make the ring at least 3 * 128 (64 WG_M + BN) bytes)."""
    return wgmma_threads(p) // 32 * 16 * (p["BN"] + C_STAGE_PAD) * 4


def wgmma_footprint(p: Params) -> Footprint:
    # The tensor cores read A and B from shared memory: no fragments in registers, but each
    # thread keeps the 64-bit source address of every chunk it copies a k tile.
    copies = (p["BM"] + p["BN"]) * p["BK"] // CHUNK // wgmma_threads(p)
    return Footprint(
        threads=wgmma_threads(p),
        smem_bytes=p["STAGES"] * stage_bytes(p) + ALIGN_SPARE,
        dynamic_smem=True,
        accumulators=_accumulators(p),
        fragments=2 * copies,
    )


def _loads_ahead(p: Params) -> int:
    """k tiles copied ahead of the one multiplied: the ring keeps one stage for the tile the
    previous wgmma group may still read."""
    return p["STAGES"] - 2


def _warp_tile(p: Params) -> tuple[int, int]:
    """Rows and columns of C one warp holds: 16 rows of each of its warpgroup's m64 tiles."""
    return m64_tiles(p) * 16, p["BN"]


WGMMA_PARAMS = (
    Param("BM", (64, 128, 256), "rows of C per block"),
    Param("BN", (64, 128, 256), "columns of C per block (the wgmma's N)"),
    Param("BK", (K_TILE,), "depth of the k tile: one 128-byte swizzled row of halves"),
    Param("WG_M", (1, 2), "warpgroups along m (each computes BM/WG_M rows)"),
    Param("STAGES", (3, 4, 5, 6), "shared-memory buffers of the cp.async ring"),
    *HMMA_PARAMS[-4:],  # SWIZZLE, DTYPE, LAYOUT, OUT: hmma's block order and shape-pinned kinds
)

WGMMA_RULES = (
    Rule(
        "BK must be 64: a k tile is one 128-byte swizzled row of halves",
        lambda p: p["BK"] == K_TILE,
    ),
    Rule(
        "BM/WG_M must be a multiple of 64: a warpgroup computes whole m64 wgmma tiles",
        lambda p: p["BM"] % (p["WG_M"] * M_TILE) == 0,
    ),
    Rule(
        "BN must be a multiple of 64: a tile stored along N is whole 128-byte columns",
        lambda p: p["BN"] % 64 == 0 and 8 <= p["BN"] <= 256,
    ),
    whole_chunk_passes(wgmma_threads),
    Rule(
        f"a thread may keep at most {MAX_ACCUMULATORS} FP32 sums (BM/WG_M/64 * BN/2): more spill",
        lambda p: _accumulators(p) <= MAX_ACCUMULATORS,
    ),
    Rule(
        "STAGES must be at least 3: one stage for the tile a wgmma group may still read, one "
        "multiplied, one or more copied ahead",
        lambda p: p["STAGES"] >= 3,
    ),
)

WGMMA = Family(
    name="wgmma",
    doc="FP16/BF16 inputs, FP32 sums on Hopper: wgmma.mma_async m64nBNk16 per warpgroup from "
    "128-byte swizzled shared tiles filled by a STAGES-deep cp.async ring (sm_90a).",
    params=WGMMA_PARAMS,
    rules=WGMMA_RULES,
    threads=wgmma_threads,
    footprint=wgmma_footprint,
    derive=wgmma_derive,
    cost=CostTraits(math="half_wgmma", loads_ahead=_loads_ahead, warp_tile=_warp_tile),
    leading_dims=True,
    min_arch=90,
    max_arch=90,
    arch_specific=True,
    dtypes=HALF_DTYPES,
    layouts=SUPPORTED_LAYOUTS,
    out_dtypes=HALF_OUT_DTYPES,
    pinned=hmma_pinned,
)

WGMMA_SPLITK = half_split_k(
    WGMMA,
    "wgmma with K split over SPLITK blocks per output tile (grid z), reduced in C in ticket "
    "order; for output grids too small to fill the chip.",
)
