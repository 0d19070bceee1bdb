"""FP32 GEMM on the FP64 tensor cores: ``dmma``, ``dmma_pipelined`` and ``dmma_streamk``. Every
FP32 product is exact in FP64, sums are FP64, and C is rounded to float once (a tile whose k range
several blocks share adds their float-rounded pieces, as split-K does).
"""

from __future__ import annotations

from tuner.kernels.families._base import (
    FLOAT_BYTES,
    SPLITK_IN_GRID_Z,
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
    block_limit,
    float4_row_steps,
    float4_tile_loads,
    whole_warps,
)
from tuner.kernels.families.ladder import (
    TILE_2D_PARAMS,
)
from tuner.kernels.families.split import (
    SPLITK,
    SPLITK_MAX_TILES,
    STREAMK_MAX_BLOCKS,
)
from tuner.kernels.families.warptile import staged_tiles

# --- dmma -----------------------------------------------------------------------------------

# Elements added to each shared-memory row of dmma.cu.j2 (A's rows of BK, B's of BN), by WIDEN.
# Double tiles: a row length of 4 modulo 16 doubles (12 for BK = 8) puts the fragment reads of a
# half-warp (4 rows x 4 columns) in 16 different bank pairs. Float tiles: 4 modulo 8 for A's
# reads (8 rows x 4 columns) and 8 modulo 32 for B's (4 rows x 8 columns) fill the 32 banks.
DMMA_ROW_PADS = {0: (4, 4), 1: (4, 8)}
DOUBLE_BYTES = 8


def _dmma_threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _mma_tiling(p: Params) -> dict[str, int]:
    """What both FP64 tensor-core templates index with: m16 tiles (MT) and n8 tiles (NT) of a
    warp tile, warps along n of the block, the doubles of A and of B one lane holds for one
    mma.sync (``_dmma_mma.cuh.j2``), and the float4 copies of the tiles."""
    return {
        "MT": p["WM"] // 16,
        "NT": p["WN"] // 8,
        "WARPS_N": p["BN"] // p["WN"],
        "A_REGS": p["MK"] // 2,
        "B_REGS": p["MK"] // 4,
        **float4_tile_loads(p, _dmma_threads(p)),
    }


def _staged_c(p: Params, tiling: dict[str, int], smem_bytes: int) -> dict[str, int]:
    """Whether C can go through shared memory where its rows cannot take float4 stores
    (templates/_staged_c.cuh.j2): each warp's WM rows of WN + 1 floats, BM * (BN + WARPS_N)
    floats in all, must fit in the tile buffers the kernel already has."""
    floats = p["BM"] * (p["BN"] + tiling["WARPS_N"])
    return {"STAGED_C": int(floats * FLOAT_BYTES <= smem_bytes)}


def _dmma_derive(p: Params) -> dict[str, int]:
    """Constants of dmma.cu.j2: the padded row lengths of a buffer's As[BM][A_LD] and
    Bs[BK][B_LD] and its size, in elements (doubles, or floats when WIDEN)."""
    a_pad, b_pad = DMMA_ROW_PADS[p["WIDEN"]]
    a_ld, b_ld = p["BK"] + a_pad, p["BN"] + b_pad
    a_elems = p["BM"] * a_ld
    buffer_elems = a_elems + p["BK"] * b_ld
    tiling = _mma_tiling(p)
    element = FLOAT_BYTES if p["WIDEN"] else DOUBLE_BYTES
    return {
        **tiling,
        "A_ROW_PAD": a_pad,
        "A_LD": a_ld,
        "B_LD": b_ld,
        "A_ELEMS": a_elems,
        "BUFFER_ELEMS": buffer_elems,
        "MAX_TILES": SPLITK_MAX_TILES,
        **_staged_c(p, tiling, 2 * buffer_elems * element),
    }


def _dmma_footprint(p: Params) -> Footprint:
    d = _dmma_derive(p)
    element = FLOAT_BYTES if p["WIDEN"] else DOUBLE_BYTES
    loads = d["A_LOADS"] + d["B_LOADS"]
    return Footprint(
        threads=_dmma_threads(p),
        smem_bytes=2 * d["BUFFER_ELEMS"] * element,
        dynamic_smem=True,
        # In 32-bit registers: four FP64 sums per m16n8 tile, the A and B fragments of one mma
        # k step as doubles, and the next k tile's float4s staged.
        accumulators=8 * d["MT"] * d["NT"],
        fragments=d["MT"] * p["MK"] + d["NT"] * p["MK"] // 2 + 4 * loads,
    )


# Block and warp tiles and the mma depth, shared by dmma and dmma_pipelined.
_DMMA_TILE_PARAMS = (
    *TILE_2D_PARAMS[:3],  # BM, BN, BK
    Param("WM", (16, 32, 64), "rows of C per warp (m16 tiles of the mma)"),
    Param("WN", (16, 32, 64), "columns of C per warp (n8 tiles of the mma)"),
    Param("MK", (4, 8, 16), "k depth of one mma.sync (m16n8k4, m16n8k8 or m16n8k16)"),
)
# 1 (no split), splitk's values, and 33 and 66: an output grid of 4, 8 or 16 tiles split 33 or 66
# ways fills whole waves of the H100's 132 SMs (4 x 33) at one to four blocks per SM.
_DMMA_SPLITK = Param(
    "SPLITK", tuple(sorted({1, 33, 66, *SPLITK.params[-1].values})), SPLITK.params[-1].doc
)
# The cp.async ring's depth, shared by dmma_pipelined and dmma_streamk.
_DMMA_STAGES = Param("STAGES", (2, 3, 4), "shared-memory buffers in flight")
_DMMA_MINBLOCKS = Param(
    "MINBLOCKS",
    (1, 2, 3, 4),
    "blocks per SM the compiler must leave registers for (__launch_bounds__)",
)

DMMA = Family(
    name="dmma",
    doc="FP32 GEMM on the FP64 tensor cores: float tiles widened to double before the shared "
    "store or as fragments are read (WIDEN), mma.sync m16n8kMK in FP64 (exact products, FP64 "
    "sums), one rounding of C to float; two shared buffers with the next k tile fetched into "
    "registers; K split over grid z as warptile_splitk when SPLITK > 1.",
    params=(
        *_DMMA_TILE_PARAMS,
        _DMMA_SPLITK,
        _DMMA_MINBLOCKS,
        Param(
            "WIDEN",
            (0, 1),
            "0: tiles widened to double before the shared store; 1: kept as float in shared "
            "memory and widened as fragments are read",
        ),
    ),
    rules=(
        Rule(
            "BM must be a multiple of WM and BN of WN: the block is a whole grid of warp tiles",
            lambda p: p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0,
        ),
        whole_warps(_dmma_threads),
        block_limit(_dmma_threads),
        Rule(
            "BK must be a multiple of MK: a k tile is whole mma steps",
            lambda p: p["BK"] % p["MK"] == 0,
        ),
        Rule(
            "BM*BK and BN*BK must be multiples of 4*threads: the tiles load in whole float4 passes",
            lambda p: (
                (p["BM"] * p["BK"]) % (4 * _dmma_threads(p)) == 0
                and (p["BN"] * p["BK"]) % (4 * _dmma_threads(p)) == 0
            ),
        ),
        SPLITK_IN_GRID_Z,
    ),
    threads=_dmma_threads,
    footprint=_dmma_footprint,
    derive=_dmma_derive,
    module_counters=True,
    leading_dims=True,
    # two shared buffers, the next k tile fetched into registers during the current one
    cost=CostTraits(math="fp64_tensor", loads_ahead=lambda p: 1),
    min_arch=90,  # mma.sync.m16n8k{4,8,16}.f64 (ptxas: "requires .target sm_90 or higher")
)

# --- dmma_pipelined -------------------------------------------------------------------------

# Floats added to each A row of a dmma_pipelined stage, by BK: row lengths of 8, 16 and 36 floats
# put the vector fragment reads of a phase (two rows, four lanes' k ranges) in distinct banks.
# B's rows are not padded; their chunks are XOR-swizzled (templates/dmma_pipelined.cu.j2).
DMMA_PIPELINED_A_PADS = {8: 0, 16: 0, 32: 4}


def _dmma_pipelined_derive(p: Params) -> dict[str, int]:
    """Constants of dmma_pipelined.cu.j2. A stage is As[BM][A_LD] then Bs[BK][BN], in floats.
    A lane's k run in a tile is KQ long, read VW at a time in VGROUPS vector groups; its B
    fragment columns are read BVW at a time; one mma step covers STEP_K of a lane's k."""
    a_ld = p["BK"] + DMMA_PIPELINED_A_PADS[p["BK"]]
    a_floats = p["BM"] * a_ld
    tiling = _mma_tiling(p)
    kq = p["BK"] // 4
    vw = min(kq, 4)
    stage_floats = a_floats + p["BK"] * p["BN"]
    return {
        **tiling,
        **float4_row_steps(p, _dmma_threads(p)),
        "A_LD": a_ld,
        "A_FLOATS": a_floats,
        "STAGE_FLOATS": stage_floats,
        "KQ": kq,
        "VW": vw,
        "VGROUPS": kq // vw,
        "BVW": min(tiling["NT"], 4),
        "STEP_K": p["MK"] // 4,
        "MAX_TILES": SPLITK_MAX_TILES,
        "STREAMK": 0,
        **_staged_c(p, tiling, p["STAGES"] * stage_floats * FLOAT_BYTES),
    }


def _dmma_pipelined_footprint(p: Params) -> Footprint:
    d = _dmma_pipelined_derive(p)
    mt, nt, vw = d["MT"], d["NT"], d["VW"]
    return Footprint(
        threads=_dmma_threads(p),
        smem_bytes=p["STAGES"] * d["STAGE_FLOATS"] * FLOAT_BYTES,
        dynamic_smem=True,
        accumulators=8 * mt * nt,
        # In 32-bit registers: the A floats of one vector group (2*MT rows of VW), one mma step's
        # A fragments as doubles and the B fragments of two n8 tiles (B is widened as it is
        # used); cp.async needs no staging registers. With the overhead this is under nvcc's
        # count by a median of 10 % (at most 34 %) over the H100 sweep rows: it prunes leniently,
        # and compiling finds the spills.
        fragments=mt * 2 * vw + mt * p["MK"] + p["MK"],
    )


DMMA_PIPELINED = Family(
    name="dmma_pipelined",
    doc="dmma (FP32 GEMM on the FP64 tensor cores, one rounding of C) with float tiles in a "
    "STAGES-deep cp.async ring, vector fragment reads along a permuted k and n, and float4 C "
    "stores; K split over grid z as dmma when SPLITK > 1.",
    params=(
        *_DMMA_TILE_PARAMS,
        _DMMA_STAGES,
        _DMMA_SPLITK,
        _DMMA_MINBLOCKS,
    ),
    rules=DMMA.rules,
    threads=_dmma_threads,
    footprint=_dmma_pipelined_footprint,
    derive=_dmma_pipelined_derive,
    module_counters=True,
    leading_dims=True,
    cost=CostTraits(math="fp64_tensor", loads_ahead=staged_tiles),
    min_arch=90,
    # nvcc 13.0 for sm_90 spilled every one of 52 configs whose estimate exceeds 1.29 times the
    # MINBLOCKS cap, while 3 of 18 between 1.2 and 1.29 did not spill
    # (benchmarks/results/nvcc-launch-bound-spills.json; benchmarks/spill_probe.py), and every
    # one of the 304 rows of the H100 sweeps (NVRTC) between 1.29 and 1.5 was pruned for spills.
    # dmma keeps the default: 2 of its 28 above 1.29 compiled without spills.
    launch_bound_slack=1.29,
)

# --- dmma_streamk ---------------------------------------------------------------------------


def _dmma_streamk_derive(p: Params) -> dict[str, int]:
    """dmma_pipelined.cu.j2's constants in its stream-K mode: no grid z (SPLITK 1), the launch
    bound of SMBLOCKS blocks per SM (MINBLOCKS), and a counter triple per block of the largest
    persistent grid (fewer tiles than blocks are shared)."""
    return {
        **_dmma_pipelined_derive(p),
        "SPLITK": 1,
        "MINBLOCKS": p["SMBLOCKS"],
        "STREAMK": 1,
        "MAX_TILES": STREAMK_MAX_BLOCKS,
    }


DMMA_STREAMK = Family(
    name="dmma_streamk",
    doc="dmma_pipelined's block (FP64 tensor cores, cp.async ring) in a persistent grid of "
    "SMBLOCKS blocks per SM: whole output tiles in data-parallel waves, then the k tiles of the "
    "last partial wave's tiles shared evenly over all blocks (stream-K), their pieces summed in "
    "C as split-K does; no wave runs part full.",
    params=(
        *_DMMA_TILE_PARAMS,
        _DMMA_STAGES,
        Param(
            "SMBLOCKS",
            (1, 2, 3, 4),
            "blocks per SM in the persistent grid (also the launch bound the compiler leaves "
            "registers for)",
        ),
    ),
    rules=tuple(rule for rule in DMMA.rules if rule is not SPLITK_IN_GRID_Z),
    threads=_dmma_threads,
    footprint=_dmma_pipelined_footprint,
    derive=_dmma_streamk_derive,
    template_name="dmma_pipelined.cu.j2",
    module_counters=True,
    leading_dims=True,
    cost=CostTraits(math="fp64_tensor", loads_ahead=staged_tiles, schedule="persistent"),
    min_arch=90,
    launch_bound_slack=DMMA_PIPELINED.launch_bound_slack,
    launch_bound_blocks=lambda p: p["SMBLOCKS"],
)
