"""The first rungs of the SGEMM ladder: shared-memory tiling, 1-D and 2-D block tiles, and
float4 loads. Kept for teaching and comparison; the default search uses the warp-tiled families.
"""

from __future__ import annotations

from tuner.kernels.families._base import (
    A_PAD,
    FLOAT_BYTES,
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
    block_limit,
    float4_tile_loads,
    float4_tiles,
    whole_warps,
    with_values,
)

# --- smem_tiling -----------------------------------------------------------------------------


def _smem_threads(p: Params) -> int:
    return p["BM"] * p["BN"]


# The cost model's view of a warp: 32 thread tiles laid out along n.
LADDER_COST = CostTraits(warp_tile=lambda p: (p.get("TM", 1), 32 * p.get("TN", 1)))

SMEM_TILING = Family(
    name="smem_tiling",
    doc="Stage a BMxBK tile of A and a BKxBN tile of B in shared memory; one C value per thread.",
    params=(
        Param("BM", (8, 16, 32, 64), "rows of C per block"),
        Param("BN", (8, 16, 32, 64), "columns of C per block"),
        Param("BK", (8, 16, 32, 64), "depth of the k tile staged in shared memory"),
    ),
    rules=(whole_warps(_smem_threads), block_limit(_smem_threads)),
    threads=_smem_threads,
    footprint=lambda p: Footprint(
        threads=_smem_threads(p),
        smem_bytes=(p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=1,
        fragments=1,
    ),
    cost=LADDER_COST,
)

# --- blocktile_1d ----------------------------------------------------------------------------


def _1d_threads(p: Params) -> int:
    return p["BM"] * p["BN"] // p["TM"]


def scalar_tile_loads(p: Params, threads: int) -> dict[str, int]:
    """How the ``threads`` of a block copy the BMxBK tile of A and the BKxBN tile of B one float
    at a time: floats per tile, passes over it (the last may be partial) and the unroll depth of
    each copy loop: at most 4, because fully unrolled, many passes hoist one 64-bit address each
    out of the k loop and spill."""
    a_tile, b_tile = p["BM"] * p["BK"], p["BK"] * p["BN"]
    a_passes = (a_tile + threads - 1) // threads
    b_passes = (b_tile + threads - 1) // threads
    return {
        "A_TILE": a_tile,
        "B_TILE": b_tile,
        "A_PASSES": a_passes,
        "B_PASSES": b_passes,
        "A_UNROLL": min(a_passes, 4),
        "B_UNROLL": min(b_passes, 4),
    }


BLOCKTILE_1D = Family(
    name="blocktile_1d",
    doc="Each thread computes a column of TM results of C, reusing one B value from a register.",
    params=(
        Param("BM", (32, 64, 128), "rows of C per block"),
        Param("BN", (32, 64, 128), "columns of C per block"),
        Param("BK", (4, 8, 16, 32), "depth of the k tile staged in shared memory"),
        Param("TM", (4, 8, 16, 32), "rows of C per thread"),
    ),
    rules=(
        Rule(
            "BM must be a multiple of TM: each thread owns TM whole rows",
            lambda p: p["BM"] % p["TM"] == 0,
        ),
        whole_warps(_1d_threads),
        block_limit(_1d_threads),
    ),
    threads=_1d_threads,
    footprint=lambda p: Footprint(
        threads=_1d_threads(p),
        smem_bytes=(p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=p["TM"],
        fragments=1,
    ),
    derive=lambda p: scalar_tile_loads(p, _1d_threads(p)),
    cost=LADDER_COST,
)

# --- blocktile_2d and vectorized -------------------------------------------------------------


def _2d_threads(p: Params) -> int:
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


TILE_2D_PARAMS = (
    Param("BM", (32, 64, 128, 256), "rows of C per block"),
    Param("BN", (32, 64, 128, 256), "columns of C per block"),
    Param("BK", (8, 16, 32), "depth of the k tile staged in shared memory"),
    Param("TM", (4, 8, 16), "rows of the TMxTN register tile of each thread"),
    Param("TN", (4, 8, 16), "columns of the TMxTN register tile of each thread"),
)
_2D_RULES = (
    Rule(
        "BM must be a multiple of TM: threads tile the block's rows exactly",
        lambda p: p["BM"] % p["TM"] == 0,
    ),
    Rule(
        "BN must be a multiple of TN: threads tile the block's columns exactly",
        lambda p: p["BN"] % p["TN"] == 0,
    ),
    whole_warps(_2d_threads),
    block_limit(_2d_threads),
)


def _2d_footprint(p: Params, smem_floats: int) -> Footprint:
    return Footprint(
        threads=_2d_threads(p),
        smem_bytes=smem_floats * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=p["TM"] * p["TN"],
        fragments=p["TM"] + p["TN"],
    )


BLOCKTILE_2D = Family(
    name="blocktile_2d",
    doc="Each thread computes a TMxTN tile of C as outer products of register fragments.",
    params=TILE_2D_PARAMS,
    rules=_2D_RULES,
    threads=_2d_threads,
    footprint=lambda p: _2d_footprint(p, p["BM"] * p["BK"] + p["BK"] * p["BN"]),
    derive=lambda p: scalar_tile_loads(p, _2d_threads(p)),
    cost=LADDER_COST,
)


def _vectorized_derive(p: Params) -> dict[str, int]:
    # A is stored transposed, As[BK][BM + A_PAD]: padded rows of the tile's BM values.
    return {"A_LD": p["BM"] + A_PAD, **float4_tile_loads(p, _2d_threads(p))}


VECTORIZED = Family(
    name="vectorized",
    doc="blocktile_2d with float4 global and shared loads; A stored transposed in shared memory.",
    # TM and TN 4 or 8: fragments are read from shared memory as float4.
    params=with_values(TILE_2D_PARAMS, TM=(4, 8), TN=(4, 8)),
    rules=(
        *_2D_RULES,
        Rule(
            "TM must be a multiple of 4: A fragments are read from shared memory as float4",
            lambda p: p["TM"] % 4 == 0,
        ),
        Rule(
            "TN must be a multiple of 4: B fragments are read from shared memory as float4",
            lambda p: p["TN"] % 4 == 0,
        ),
        *float4_tiles(_2d_threads),
    ),
    threads=_2d_threads,
    footprint=lambda p: _2d_footprint(
        p, p["BK"] * _vectorized_derive(p)["A_LD"] + p["BK"] * p["BN"]
    ),
    derive=_vectorized_derive,
    cost=LADDER_COST,
)
