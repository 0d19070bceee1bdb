"""Warp-tiled families: a block tile split into warp tiles, warp subtiles and thread tiles;
with one shared buffer and a register prefetch (``warptile``), two buffers (``doublebuf``) or a
``cp.async`` ring (``pipelined``).
"""

from __future__ import annotations

from tuner.families._base import (
    A_PAD,
    FLOAT_BYTES,
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
    float4_tiles,
)

# --- warptile and pipelined ------------------------------------------------------------------


def warp_threads(p: Params) -> int:
    return p["THREADS"]


def _wmiter(p: Params) -> int:
    return (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"])


def warptile_derive(p: Params) -> dict[str, int]:
    wmiter = _wmiter(p)
    return {
        "WMITER": wmiter,
        "WSUBM": p["WM"] // wmiter,
        "WSUBN": p["WN"] // p["WNITER"],
        "A_PAD": A_PAD,
    }


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


def _warptile_buffer_floats(p: Params) -> int:
    """Floats of one shared-memory buffer of warptile.cu.j2: As[BK][BM+A_PAD] and Bs[BK][BN]."""
    return p["BK"] * (p["BM"] + A_PAD) + p["BK"] * p["BN"]


def warptile_register_budget(p: Params) -> int:
    """Registers warptile.cu.j2 budgets per thread when it prefetches the next k tile:
    accumulators, fragments, four per float4 staged, and 40 for addresses and indices."""
    loads = (p["BM"] + p["BN"]) * p["BK"] // (4 * p["THREADS"])
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

WARPTILE = Family(
    name="warptile",
    doc="Block tile -> warp tiles (WMxWN) -> WMITERxWNITER warp subtiles -> TMxTN thread tiles.",
    params=WARPTILE_PARAMS,
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(p, _warptile_buffer_floats(p), dynamic=False),
    derive=lambda p: {**warptile_derive(p), "BUFFERS": 1, "PREFETCH": int(warptile_prefetches(p))},
    cost=PREFETCHING,
)

DOUBLEBUF = Family(
    name="doublebuf",
    doc="warptile with two shared-memory buffers (dynamic): the next k tile is stored into one "
    "while the other is read, so a k tile needs one barrier instead of two.",
    params=WARPTILE_PARAMS,
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(p, 2 * _warptile_buffer_floats(p), dynamic=True),
    derive=lambda p: {**warptile_derive(p), "BUFFERS": 2, "PREFETCH": int(warptile_prefetches(p))},
    cost=PREFETCHING,
)

PIPELINED = Family(
    name="pipelined",
    doc="warptile with STAGES shared-memory buffers filled ahead of use by cp.async.",
    params=(*WARPTILE_PARAMS, Param("STAGES", (2, 3, 4), "shared-memory buffers in flight")),
    rules=WARPTILE_RULES,
    threads=warp_threads,
    footprint=lambda p: warptile_footprint(
        p, p["STAGES"] * (p["BM"] * (p["BK"] + A_PAD) + p["BK"] * p["BN"]), dynamic=True
    ),
    derive=warptile_derive,
    cost=STAGED,
)
