"""``hmma``: FP16/BF16 inputs on the tensor cores with FP32 sums (Ampere-style ``mma.sync``).

A block computes a BM x BN tile of C with WARPS_M x WARPS_N warps; each warp a WM x WN tile as
(WM/16) x (WN/8) ``mma.sync.m16n8k16`` tiles, fed from shared memory by ``ldmatrix``. A and B
reach shared memory through a STAGES-deep ``cp.async`` ring (a stage refilled as soon as its
tile's last fragments are read; fragments double-buffered in registers), each stored as in
global memory (so that every copy is a contiguous 16-byte chunk) with its 16-byte chunks
XOR-swizzled per row;
``ldmatrix.trans`` turns an operand stored along M or N into the fragment the mma wants.
Blocks are numbered in groups of SWIZZLE block rows, so that blocks running at once share
rows of A and columns of B in L2.

The template is compiled per input type, layout and type of C: DTYPE, LAYOUT and OUT are
parameters the shape pins (``Family.pinned``), so a config's name says what it computes (a name
without an ``out`` token writes float32 C, as every config did before C had a type). The sums
and beta * C are FP32; a float16 or bfloat16 C is rounded once, as it is written.

``hmma_splitk`` is the same kernel with K split SPLITK ways over grid z, the slices meeting in
C by the split-K hand-off (as ``splitk`` does for FP32): for output grids too small to fill the
chip, such as skinny, narrow and large-K shapes. Its slices add their FP32 partial sums into C,
so it writes float32 C only: added into a half C, every slice's sum would be rounded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tuner.core.shape import HALF_DTYPES, SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families._base import (
    SPLITK_IN_GRID_Z,
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
    block_limit,
)
from tuner.kernels.families.split import SPLITK, SPLITK_MAX_TILES

HALF_BYTES = 2
CHUNK = 8  # halves in one 16-byte copy (one row of an ldmatrix 8x8 matrix)
# The most FP32 sums a lane may keep: with its A and B fragments of two k16 steps (double
# buffered), the ring's addresses and the copy indices, 128 sums stay under the 255-register
# cap without spills at BK = 32; at BK = 64 (four k16 steps' fragment addresses) 64 do.
MAX_ACCUMULATORS = 128
MAX_ACCUMULATORS_BK64 = 64
DTYPE_CODES = {dtype: code for code, dtype in enumerate(HALF_DTYPES)}  # float16 0, bfloat16 1
LAYOUT_CODES = {layout: code for code, layout in enumerate(SUPPORTED_LAYOUTS)}  # NN 0 .. TT 3
# The type of C, the template's OUT: 0 is float32, the value of every name without an ``out``
# token (``tuner.core.config.IMPLICIT_VALUES``).
OUT_CODES = {"float32": 0, "float16": 1, "bfloat16": 2}
# Every type the half templates write C in (a shape asks for float32 or its input type).
HALF_OUT_DTYPES = tuple(OUT_CODES)
# The shape-pinned parameters of the half families, last in their parameter lists.
HALF_PINNED = ("DTYPE", "LAYOUT", "OUT")


def half_split_k(family: Family, doc: str) -> Family:
    """``family`` (a half-input one) with K split SPLITK ways over grid z, its template's
    SPLITK > 1 blocks (``<name>_splitk.cu.j2`` includes ``<name>.cu.j2``): SPLITK after the
    tile parameters, before the shape-pinned DTYPE, LAYOUT and OUT; the split-K counters in the
    module. It writes float32 C only: the slices add their partial sums into C with atomic adds
    (the split-K hand-off), and in a half C each addition would round the running sum again,
    where a half C must be the FP32 sum rounded once."""
    count = len(HALF_PINNED)
    tiles, pinned = family.params[:-count], family.params[-count:]
    assert tuple(p.name for p in pinned) == HALF_PINNED, family.name
    return replace(
        family,
        name=f"{family.name}_splitk",
        doc=doc,
        params=(*tiles, SPLITK.params[-1], *pinned[:-1], out_param(("float32",))),
        rules=(*family.rules, SPLITK_IN_GRID_Z),
        module_counters=True,
        out_dtypes=("float32",),
    )


def out_param(out_dtypes: tuple[str, ...]) -> Param:
    """OUT, the type C is written in (:data:`OUT_CODES`), pinned by the shape, taking the codes
    of ``out_dtypes``."""
    codes = tuple(OUT_CODES[dtype] for dtype in out_dtypes)
    names = ", ".join(f"{OUT_CODES[dtype]} {dtype}" for dtype in out_dtypes)
    return Param("OUT", codes, f"type of C: {names} (pinned by the shape)")


def whole_chunk_passes(threads: Callable[[Params], int]) -> Rule:
    """The half families' copies (``_half_io.cuh.j2``) move both tiles in passes of one
    16-byte chunk per thread."""
    return Rule(
        "BM*BK/8 and BN*BK/8 must be multiples of the threads: the tiles copy in whole passes "
        "of 16-byte chunks",
        lambda p: (
            (p["BM"] * p["BK"] // CHUNK) % threads(p) == 0
            and (p["BN"] * p["BK"] // CHUNK) % threads(p) == 0
        ),
    )


def hmma_threads(p: Params) -> int:
    return 32 * p["WARPS_M"] * p["WARPS_N"]


def warp_tile(p: Params) -> tuple[int, int]:
    return p["BM"] // p["WARPS_M"], p["BN"] // p["WARPS_N"]


def _accumulators(p: Params) -> int:
    wm, wn = warp_tile(p)
    return (wm // 16) * (wn // 8) * 4


def operand_copies(rows: int, cols: int, threads: int, prefix: str) -> dict[str, int]:
    """How one operand's tile (``rows`` x ``cols`` halves, stored row by row as in global
    memory) is copied into shared memory, as ``_half_io.cuh.j2`` reads it (hmma and wgmma).

    ``<prefix>_TILE_ROWS`` rows of ``<prefix>_LD`` halves, ``<prefix>_CHUNKS`` 16-byte chunks
    each; a thread copies ``<prefix>_COPIES`` chunks of one column per k tile, rows
    ``<prefix>_ROW_STEP`` apart.
    """
    chunks = cols // CHUNK
    return {
        f"{prefix}_TILE_ROWS": rows,
        f"{prefix}_LD": cols,
        f"{prefix}_CHUNKS": chunks,
        f"{prefix}_COPIES": rows * chunks // threads,
        f"{prefix}_ROW_STEP": threads // chunks,
    }


def operand_tile(rows: int, cols: int, threads: int, prefix: str) -> dict[str, int]:
    """hmma's operand tile: its copies (:func:`operand_copies`) and its swizzle, which puts
    chunk ``c`` of row ``r`` at ``c ^ ((r / <prefix>_SWZ_DIV) % <prefix>_SWZ_MOD)``: any 8
    consecutive rows' chunks of one column then fall in 8 distinct 16-byte bank groups (a
    128-byte line holds 8 chunks: rows of fewer chunks share a line, so the XOR changes every
    8/chunks rows), which is what an ldmatrix phase reads.
    """
    chunks = cols // CHUNK
    return {
        **operand_copies(rows, cols, threads, prefix),
        f"{prefix}_SWZ_DIV": max(1, CHUNK // chunks),
        f"{prefix}_SWZ_MOD": min(chunks, CHUNK),
    }


def stored_tiles(p: Params) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(rows are k, rows, columns) of A's and of B's k tile, stored as the operand is in global
    memory: A is stored M x K (NN, NT) or K x M (TN, TT), so its tile's rows are k in the second
    case; B is stored K x N (NN, TN) or N x K (NT, TT), its tile's rows are k in the first."""
    a_krows, b_krows = p["LAYOUT"] // 2, 1 - p["LAYOUT"] % 2
    a_rows, a_cols = (p["BK"], p["BM"]) if a_krows else (p["BM"], p["BK"])
    b_rows, b_cols = (p["BK"], p["BN"]) if b_krows else (p["BN"], p["BK"])
    return (a_krows, a_rows, a_cols), (b_krows, b_rows, b_cols)


def hmma_derive(p: Params) -> dict[str, int]:
    """Constants of hmma.cu.j2: the warp tiling, each operand's tile in shared memory (stored
    as in global memory, so its rows are k where the operand's k is its slow index) and the
    ring's stage."""
    wm, wn = warp_tile(p)
    threads = hmma_threads(p)
    (a_krows, a_rows, a_cols), (b_krows, b_rows, b_cols) = stored_tiles(p)
    a_halves = p["BM"] * p["BK"]
    return {
        "WM": wm,
        "WN": wn,
        "MT": wm // 16,  # m16 tiles per warp
        "NT": wn // 8,  # n8 tiles per warp
        "A_KROWS": a_krows,
        "B_KROWS": b_krows,
        **operand_tile(a_rows, a_cols, threads, "A"),
        **operand_tile(b_rows, b_cols, threads, "B"),
        "A_HALVES": a_halves,
        "STAGE_HALVES": a_halves + p["BN"] * p["BK"],
        "SPLITK": p.get("SPLITK", 1),
        "MAX_TILES": SPLITK_MAX_TILES,
    }


def hmma_footprint(p: Params) -> Footprint:
    wm, wn = warp_tile(p)
    return Footprint(
        threads=hmma_threads(p),
        smem_bytes=p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * HALF_BYTES,
        dynamic_smem=True,
        accumulators=_accumulators(p),
        # 32-bit registers of one k16 step's fragments: four per m16 tile of A, two per n8 of B.
        fragments=(wm // 16) * 4 + (wn // 8) * 2,
    )


def hmma_pinned(shape: Shape) -> dict[str, int]:
    return {
        "DTYPE": DTYPE_CODES.get(shape.dtype, 0),
        "LAYOUT": LAYOUT_CODES.get(shape.layout, 0),
        "OUT": OUT_CODES.get(shape.out, 0),
    }


def _staged(p: Params) -> int:
    """k tiles in flight: a stage is refilled once its tile's last fragments are read, before
    that tile's last k16 step, so all STAGES stages hold tiles loaded ahead."""
    return p["STAGES"]


HMMA_PARAMS = (
    Param("BM", (64, 128, 256), "rows of C per block"),
    Param("BN", (64, 128, 256), "columns of C per block"),
    Param("BK", (32, 64), "depth of the k tile staged in shared memory"),
    Param("WARPS_M", (1, 2, 4), "warps along m (a warp computes BM/WARPS_M rows)"),
    Param("WARPS_N", (1, 2, 4), "warps along n (a warp computes BN/WARPS_N columns)"),
    Param("STAGES", (2, 3, 4, 5), "shared-memory buffers of the cp.async ring"),
    Param("SWIZZLE", (1, 4, 8), "block rows numbered together, for L2 reuse (1: row by row)"),
    Param("DTYPE", (0, 1), "input type: 0 float16, 1 bfloat16 (pinned by the shape)"),
    Param("LAYOUT", (0, 1, 2, 3), "0 NN, 1 NT, 2 TN, 3 TT (pinned by the shape)"),
    out_param(HALF_OUT_DTYPES),
)

HMMA_RULES = (
    Rule(
        "BM/WARPS_M must be a multiple of 16: a warp computes whole m16 mma tiles",
        lambda p: (p["BM"] // p["WARPS_M"]) % 16 == 0 and p["BM"] % p["WARPS_M"] == 0,
    ),
    Rule(
        "BN/WARPS_N must be a multiple of 16: a warp loads B for two n8 mma tiles per ldmatrix",
        lambda p: (p["BN"] // p["WARPS_N"]) % 16 == 0 and p["BN"] % p["WARPS_N"] == 0,
    ),
    whole_chunk_passes(hmma_threads),
    Rule(
        f"a lane may keep at most {MAX_ACCUMULATORS} FP32 sums ((WM/16)*(WN/8)*4): more spill",
        lambda p: _accumulators(p) <= MAX_ACCUMULATORS,
    ),
    Rule(
        f"with BK = 64 a lane may keep at most {MAX_ACCUMULATORS_BK64} FP32 sums: 128 beside "
        "four k16 steps' fragment addresses spill",
        lambda p: p["BK"] != 64 or _accumulators(p) <= MAX_ACCUMULATORS_BK64,
    ),
    block_limit(hmma_threads),
)

HMMA = Family(
    name="hmma",
    doc="FP16/BF16 inputs, FP32 sums: mma.sync.m16n8k16 per warp tile, ldmatrix from swizzled "
    "shared tiles filled by a STAGES-deep cp.async ring, blocks grouped for L2.",
    params=HMMA_PARAMS,
    rules=HMMA_RULES,
    threads=hmma_threads,
    footprint=hmma_footprint,
    derive=hmma_derive,
    cost=CostTraits(math="half_tensor", loads_ahead=_staged, warp_tile=warp_tile),
    leading_dims=True,
    min_arch=80,  # mma.sync.m16n8k16 with bf16 inputs, ldmatrix and cp.async: sm_80
    dtypes=HALF_DTYPES,
    layouts=SUPPORTED_LAYOUTS,
    out_dtypes=HALF_OUT_DTYPES,
    pinned=hmma_pinned,
)

HMMA_SPLITK = half_split_k(
    HMMA,
    "hmma with K split over SPLITK blocks per output tile (grid z), reduced in C in ticket "
    "order; for output grids too small to fill the chip.",
)
