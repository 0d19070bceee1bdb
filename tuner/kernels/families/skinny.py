"""``skinny``: few rows of C, B streamed from memory into registers (no shared-memory tiles)."""

from __future__ import annotations

from tuner.core.shape import Shape
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
    whole_warps,
)
from tuner.kernels.families.split import SPLITK_MAX_TILES

# --- skinny ---------------------------------------------------------------------------------

# A streaming kernel reads B once per block row; past this many block rows a tiled family,
# which shares B tiles across more rows, moves fewer bytes.
SKINNY_MAX_ROW_BLOCKS = 8


def _skinny_threads(p: Params) -> int:
    return p["BN"] * p["LK"] // p["TN"]


def _skinny_waste(p: Params, shape: Shape) -> str | None:
    row_blocks = -(-shape.m // p["BM"])
    if row_blocks > SKINNY_MAX_ROW_BLOCKS:
        return (
            f"BM={p['BM']} gives {row_blocks} block rows for M={shape.m}: B would be streamed "
            f"from memory more than {SKINNY_MAX_ROW_BLOCKS} times"
        )
    return None


SKINNY = Family(
    name="skinny",
    doc="Few rows of C: lanes stream B from global memory into registers (no shared-memory "
    "tiles), LK lanes per column split k and meet by shuffles, blocks split K (grid z) and "
    "meet in C by atomic adds; for small M, where reading B bounds the time.",
    params=(
        Param("BM", (1, 2, 4, 8, 16, 32), "rows of C per block (all held by every lane)"),
        Param("BN", (32, 64, 128, 256, 512), "columns of C per block"),
        Param("TN", (4, 8), "columns per lane, read from B as float4"),
        Param("LK", (1, 2, 4, 8, 16, 32), "lanes of a warp along k (32/LK along n)"),
        Param("KU", (1, 2, 4, 8), "consecutive k per lane and step: B loads in flight"),
        Param(
            "SPLITK",
            (1, 2, 4, 8, 16, 32, 64),
            "slices of K per output tile: blocks along grid z, summed in C",
        ),
    ),
    rules=(
        Rule(
            "TN must be a multiple of 4: B is read as float4",
            lambda p: p["TN"] % 4 == 0,
        ),
        Rule(
            "BN must be a multiple of (32/LK)*TN: warps cover whole column strips",
            lambda p: p["BN"] % ((32 // p["LK"]) * p["TN"]) == 0,
        ),
        whole_warps(_skinny_threads),
        block_limit(_skinny_threads),
        SPLITK_IN_GRID_Z,
    ),
    threads=_skinny_threads,
    footprint=lambda p: Footprint(
        threads=_skinny_threads(p),
        smem_bytes=FLOAT_BYTES if p["SPLITK"] > 1 else 0,  # the block's split-K ticket
        dynamic_smem=False,
        accumulators=p["BM"] * p["TN"],
        fragments=2 * p["KU"] * p["TN"] + p["KU"],  # B of this chunk and the next, A
    ),
    # LANES_N: a warp's lanes along n (LK along k).
    derive=lambda p: {"LANES_N": 32 // p["LK"], "MAX_TILES": SPLITK_MAX_TILES},
    k_step=lambda p: p["KU"] * p["LK"],
    waste=_skinny_waste,
    module_counters=True,
    cost=CostTraits(schedule="stream"),
)
