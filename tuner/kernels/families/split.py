"""Warp-tiled families that split K across blocks: ``splitk`` and ``warptile_splitk`` (grid z),
and ``streamk`` (a persistent grid sharing the last wave's k tiles). Their pieces meet in C
through the split-K hand-off (``templates/_splitk_handoff.cuh.j2``).
"""

from __future__ import annotations

from dataclasses import replace

from tuner.kernels.families._base import (
    SPLITK_IN_GRID_Z,
    Family,
    Param,
    Params,
    Rule,
    with_values,
)
from tuner.kernels.families.warptile import (
    PIPELINED,
    PREFETCHING,
    STAGED,
    WARPTILE,
    WARPTILE_PARAMS,
    WARPTILE_RULES,
    buffered_derive,
    pipelined_derive,
    transposed_buffer,
    warp_threads,
    warptile_derive,
    warptile_prefetches,
    warptile_register_budget,
)

# --- splitk ---------------------------------------------------------------------------------

# Output tiles that the split-K counters can serve: the templates declare three module-scope
# arrays of this many unsigned ints (tickets handed out, ticket 0's C written, blocks finished,
# per output tile; templates/_splitk_handoff.cuh.j2). A launch whose grid has more tiles than
# this does not split (slice 0 does all of K), so such shapes drop these configs as not useful
# (``tuner.kernels.space.splitk_waste``).
SPLITK_MAX_TILES = 16384


# Stated for the families whose blocks can have 64 threads; warptile's values (128 or 256
# threads, BK <= 32, BN <= 256) always satisfy it.
_ONE_COLUMN_PER_THREAD = Rule(
    "THREADS must be a multiple of BK/4 and of BN/4: each thread copies the same "
    "16-byte column of the A and B tiles in every pass",
    lambda p: p["THREADS"] % (p["BK"] // 4) == 0 and p["THREADS"] % (p["BN"] // 4) == 0,
)

SPLITK = Family(
    name="splitk",
    doc="pipelined with K split over SPLITK blocks per output tile (grid z), reduced in C "
    "in ticket order; for output grids too small to fill the chip.",
    params=(
        # Small block tiles (down to one warp row of 16) and small blocks: the grids this family
        # serves are small, and skinny M (16) wants many blocks streaming B.
        Param("BM", (16, 32, 64, 128), "rows of C per block"),
        Param("BN", (64, 128, 256), "columns of C per block"),
        Param("BK", (16, 32, 64), "depth of the k tile staged in shared memory"),
        Param("WM", (16, 32, 64), "rows of C per warp"),
        Param("WN", (32, 64), "columns of C per warp"),
        Param("WNITER", (1, 2), "warp subtiles along n (WMITER along m is derived)"),
        Param("TM", (4, 8), "rows of each thread's register tile per warp subtile"),
        Param("TN", (4, 8), "columns of each thread's register tile per warp subtile"),
        Param("THREADS", (64, 128), "threads per block"),
        # A slice's k range is short, so its loads must be in flight early: 3 or 4 stages.
        Param("STAGES", (3, 4), "shared-memory buffers in flight"),
        Param(
            "SPLITK",
            (2, 3, 4, 6, 8, 12, 16, 24, 32, 64),
            "slices of K per output tile: blocks along grid z, each over a contiguous k range",
        ),
    ),
    rules=(
        *WARPTILE_RULES,
        _ONE_COLUMN_PER_THREAD,
        SPLITK_IN_GRID_Z,
    ),
    threads=warp_threads,
    footprint=PIPELINED.footprint,
    derive=lambda p: {**pipelined_derive(p), "MAX_TILES": SPLITK_MAX_TILES},
    module_counters=True,
    cost=STAGED,
)

# --- warptile_splitk -------------------------------------------------------------------------


WARPTILE_SPLITK = Family(
    name="warptile_splitk",
    doc="warptile (register-prefetched main loop) with K split over SPLITK blocks per output "
    "tile (grid z), reduced in C as splitk does; for output grids too small to fill the chip.",
    params=(
        *with_values(WARPTILE_PARAMS, BM=(32, 64, 128, 256), THREADS=(64, 128, 256)),
        SPLITK.params[-1],
    ),
    rules=SPLITK.rules,
    threads=warp_threads,
    footprint=WARPTILE.footprint,
    derive=lambda p: {**buffered_derive(p, buffers=1), "MAX_TILES": SPLITK_MAX_TILES},
    module_counters=True,
    cost=PREFETCHING,
)

# --- streamk --------------------------------------------------------------------------------

# Blocks of a persistent grid at most. The ticket counters of templates/streamk.cu.j2 are twice as
# many: fewer stream-K tiles than blocks, then one staggered first tile per block.
STREAMK_MAX_BLOCKS = 1024


def _streamk_max_registers(p: Params) -> int:
    """streamk's register cap (``__maxnreg__``): warptile's budget, at least 168 (NVRTC spilled
    the 128x128 tile of 256 threads under its budget of 144), and no more than SMBLOCKS blocks
    per SM leave (a multiple of 8). Left to itself the compiler took 249 registers for the
    128x256 tile where warptile takes 216, and its k loop issued less often (Nsight Compute at
    4096^3: issue active 0.78 against 0.83)."""
    per_sm = 65536 // (p["THREADS"] * p["SMBLOCKS"])
    return min(max(warptile_register_budget(p), 168), per_sm, 255) // 8 * 8


def persistent_blocks(p: Params, sm_count: int) -> int:
    """Blocks in a persistent grid of ``streamk``: SMBLOCKS per SM, at most STREAMK_MAX_BLOCKS."""
    return min(sm_count * p["SMBLOCKS"], STREAMK_MAX_BLOCKS)


STREAMK = Family(
    name="streamk",
    doc="warptile's main loop in a persistent grid (SMBLOCKS blocks per SM): whole output tiles "
    "in data-parallel waves, then the k tiles of the last partial wave's tiles shared evenly "
    "over all blocks (stream-K), their pieces summed in C as splitk does; the next tile's loads "
    "overlap the finished tile's stores.",
    params=(
        *with_values(WARPTILE_PARAMS, BM=(32, 64, 128, 256), THREADS=(64, 128, 256)),
        Param("SMBLOCKS", (1, 2, 3, 4), "blocks per SM in the persistent grid"),
        Param(
            "STAGGER",
            (0, 1),
            "1: each block starts its first tile part-way through K (spread evenly over the "
            "blocks) and finishes it last, so blocks write C at different times",
        ),
    ),
    rules=(
        *WARPTILE_RULES,
        _ONE_COLUMN_PER_THREAD,
        Rule(
            "the next k tile must fit in registers beside the accumulators (register prefetch): "
            "accumulators + fragments + 4 * float4 loads per thread + 40 <= 248",
            warptile_prefetches,
        ),
    ),
    threads=warp_threads,
    footprint=WARPTILE.footprint,
    derive=lambda p: {
        **warptile_derive(p),
        "A_LD": transposed_buffer(p)["A_LD"],
        "MAX_TILES": 2 * STREAMK_MAX_BLOCKS,  # stream-K tiles, then staggered first tiles
        "MAX_REGISTERS": _streamk_max_registers(p),
    },
    module_counters=True,
    cost=replace(PREFETCHING, schedule="persistent"),
)
