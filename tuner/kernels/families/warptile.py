"""Warp-tiled families: a block tile split into warp tiles, warp subtiles and thread tiles;
with one shared buffer and a register prefetch (``warptile``), two buffers (``doublebuf``) or a
``cp.async`` ring (``pipelined``).
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
    float4_row_steps,
    float4_tile_loads,
    float4_tiles,
)

# --- warptile and pipelined ------------------------------------------------------------------


def warp_threads(p: Params) -> int:
    return p["THREADS"]


def _wmiter(p: Params) -> int:
    return (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"])


def warptile_derive(p: Params) -> dict[str, int]:
    """The warp tiling every warp-tiled template indexes with: warp subtiles, warps along n of
    the block, lanes along n of a subtile, a lane's accumulators, and the float4 copies of the
    tiles."""
    wmiter = _wmiter(p)
    wsubn = p["WN"] // p["WNITER"]
    return {
        "WMITER": wmiter,
        "WSUBM": p["WM"] // wmiter,
        "WSUBN": wsubn,
        "WARPS_N": p["BN"] // p["WN"],
        "LANES_N": wsubn // p["TN"],
        "ACC_ROWS": wmiter * p["TM"],  # acc[ACC_ROWS][ACC_COLS]: a lane's values of C
        "ACC_COLS": p["WNITER"] * p["TN"],
        **float4_tile_loads(p, p["THREADS"]),
        **float4_row_steps(p, p["THREADS"]),
    }


def transposed_buffer(p: Params) -> dict[str, int]:
    """One shared buffer of warptile.cu.j2, in floats: As[BK][A_LD] with A transposed (rows of
    BM + A_PAD, so a lane's TM rows of one k step are one float4 read), then Bs[BK][BN]."""
    a_ld = p["BM"] + A_PAD
    a_floats = p["BK"] * a_ld
    return {"A_LD": a_ld, "A_FLOATS": a_floats, "BUFFER_FLOATS": a_floats + p["BK"] * p["BN"]}


def ring_stage(p: Params) -> dict[str, int]:
    """One stage of the cp.async ring of pipelined.cu.j2, in floats: As[BM][A_LD] as in global
    memory (rows of BK + A_PAD, so cp.async copies whole 16-byte chunks), then Bs[BK][BN]."""
    a_ld = p["BK"] + A_PAD
    a_floats = p["BM"] * a_ld
    return {"A_LD": a_ld, "A_FLOATS": a_floats, "STAGE_FLOATS": a_floats + p["BK"] * p["BN"]}


def pipelined_derive(p: Params) -> dict[str, int]:
    """Constants of pipelined.cu.j2. A_HELD: a lane holds A's four k steps of a float4 for all
    its rows and streams B (1), or the reverse (0): the side with fewer values per lane."""
    values = {**warptile_derive(p), **ring_stage(p)}
    return {**values, "A_HELD": int(values["ACC_ROWS"] <= values["ACC_COLS"])}


WARPTILE_PARAMS = (
    Param("BM", (64, 128, 256), "rows of C per block"),
    Param("BN", (64, 128, 256), "columns of C per block"),
    Param("BK", (8, 16, 32), "depth of the k tile staged in shared memory"),
    Param("WM", (32, 64, 128), "rows of C per warp"),
    Param("WN", (32, 64, 128), "columns of C per warp"),
    Param("WNITER", (1, 2, 4), "warp subtiles along n (WMITER along m is derived)"),
    Param("TM", (4, 8), "rows of each thread's register tile per warp subtile"),
    Param("TN", (4, 8), "columns of each thread's register tile per warp subtile"),
    Param("THREADS", (128, 256), "threads per block"),
)
WARPTILE_RULES = (
    Rule(
        "BM must be a multiple of WM: the block is a whole grid of warp tiles",
        lambda p: p["BM"] % p["WM"] == 0,
    ),
    Rule(
        "BN must be a multiple of WN: the block is a whole grid of warp tiles",
        lambda p: p["BN"] % p["WN"] == 0,
    ),
    Rule(
        "(BM/WM)*(BN/WN) must equal THREADS/32: one warp per warp tile",
        lambda p: (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32 == p["THREADS"],
    ),
    Rule(
        "WM*WN must be a multiple of 32*TM*TN*WNITER: WMITER is a whole number",
        lambda p: (p["WM"] * p["WN"]) % (32 * p["TM"] * p["TN"] * p["WNITER"]) == 0,
    ),
    Rule(
        "WN must be a multiple of WNITER: warp subtiles are whole columns",
        lambda p: p["WN"] % p["WNITER"] == 0,
    ),
    Rule(
        "WM must be a multiple of WMITER: warp subtiles are whole rows",
        lambda p: p["WM"] % _wmiter(p) == 0,
    ),
    Rule(
        "WSUBN/TN must divide 32 and WSUBM/TM rows of lanes fill the warp: "
        "the 32 lanes tile a subtile exactly",
        lambda p: (
            (p["WN"] // p["WNITER"]) % p["TN"] == 0
            and 32 % ((p["WN"] // p["WNITER"]) // p["TN"]) == 0
            and (p["WM"] // _wmiter(p)) % p["TM"] == 0
        ),
    ),
    Rule(
        "TN must be a multiple of 4: B fragments are read from shared memory as float4",
        lambda p: p["TN"] % 4 == 0,
    ),
    Rule(
        "TM must be a multiple of 4: A fragments are read from shared memory as float4",
        lambda p: p["TM"] % 4 == 0,
    ),
    *float4_tiles(warp_threads),
)


def warptile_footprint(p: Params, smem_floats: int, dynamic: bool) -> Footprint:
    wmiter = _wmiter(p)
    return Footprint(
        threads=p["THREADS"],
        smem_bytes=smem_floats * FLOAT_BYTES,
        dynamic_smem=dynamic,
        accumulators=wmiter * p["WNITER"] * p["TM"] * p["TN"],
        fragments=wmiter * p["TM"] + p["WNITER"] * p["TN"],
    )


def warptile_register_budget(p: Params) -> int:
    """Registers warptile.cu.j2 budgets per thread when it prefetches the next k tile:
    accumulators, fragments, four per float4 staged, and 40 for addresses and indices."""
    copies = float4_tile_loads(p, p["THREADS"])
    loads = copies["A_LOADS"] + copies["B_LOADS"]
    fp = warptile_footprint(p, 0, dynamic=False)
    return fp.accumulators + fp.fragments + 4 * loads + 40


def warptile_prefetches(p: Params) -> bool:
    """Whether warptile.cu.j2 fetches the next k tile into registers during the current one:
    when its register budget stays below the 255-register cap. The template gets it as PREFETCH."""
    return warptile_register_budget(p) <= 248


def _prefetched_tiles(p: Params) -> int:
    return 1 if warptile_prefetches(p) else 0


def staged_tiles(p: Params) -> int:
    """k tiles a STAGES-deep cp.async ring requests before they are needed."""
    return p["STAGES"] - 1


# The cost model's view: the register-prefetched loop has the next k tile in flight when its
# registers allow (PREFETCH), a cp.async ring STAGES - 1 tiles.
PREFETCHING = CostTraits(loads_ahead=_prefetched_tiles)
STAGED = CostTraits(loads_ahead=staged_tiles)


def buffered_derive(p: Params, buffers: int) -> dict[str, int]:
    """Constants of warptile.cu.j2 with ``buffers`` shared buffers (1: static, 2: dynamic)."""
    prefetch = int(warptile_prefetches(p))
    return {**warptile_derive(p), **transposed_buffer(p), "BUFFERS": buffers, "PREFETCH": prefetch}


WARPTILE = Family(
    name="warptile",
    doc="Block tile -> warp tiles (WMxWN) -> WMITERxWNITER warp subtiles -> TMxTN thread tiles.",
    params=WARPTILE_PARAMS,
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(p, transposed_buffer(p)["BUFFER_FLOATS"], dynamic=False),
    derive=lambda p: buffered_derive(p, buffers=1),
    cost=PREFETCHING,
)

DOUBLEBUF = Family(
    name="doublebuf",
    doc="warptile with two shared-memory buffers (dynamic): the next k tile is stored into one "
    "while the other is read, so a k tile needs one barrier instead of two.",
    params=WARPTILE_PARAMS,
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(
        p, 2 * transposed_buffer(p)["BUFFER_FLOATS"], dynamic=True
    ),
    derive=lambda p: buffered_derive(p, buffers=2),
    cost=PREFETCHING,
)

PIPELINED = Family(
    name="pipelined",
    doc="warptile with STAGES shared-memory buffers filled ahead of use by cp.async.",
    params=(*WARPTILE_PARAMS, Param("STAGES", (2, 3, 4), "shared-memory buffers in flight")),
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(
        p, p["STAGES"] * ring_stage(p)["STAGE_FLOATS"], dynamic=True
    ),
    derive=pipelined_derive,
    cost=STAGED,
)
