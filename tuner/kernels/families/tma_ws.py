"""``tma_ws``: FP16/BF16 inputs on Hopper with TMA loads, warp specialisation and persistent tiles.

A block is one producer warpgroup and CONSUMERS consumer warpgroups (128 threads each). One
producer thread copies A's and B's k tiles (64 deep) into a STAGES-deep ring of shared memory with
the tensor memory accelerator (``cp.async.bulk.tensor``), each stage guarded by a "full" and an
"empty" mbarrier; the consumers multiply each k tile with ``wgmma.mma_async.m64nBNk16`` from
shared memory, consumer c computing BM/CONSUMERS rows of the block's BM x BN tile, and write C
from their sums. ``setmaxnreg`` gives the producer's registers to the consumers. The grid is at
most one block per SM; each block walks output tiles (GROUP block rows or columns banded together,
RASTER says which) until none is left, the producer loading the next tile while the consumers
write the last.

The kernel takes two tensor maps (``CUtensorMap``, built on the host by ``tuner.gpu.tensor_maps``)
in place of A's and B's pointers: ``Family.tensor_maps``. TMA needs each operand's rows 16 bytes
apart by a multiple and its base 16-byte aligned, so a shape whose stored rows are not whole
8-half vectors is wasteful here (:func:`tma_ws_waste`); its padded config (``_pad8``) runs it on
copies with padded rows (and ``tuner.gpu.measure.launch`` copies a misaligned view of an aligned
shape the same way). Out-of-bounds boxes are zero-filled, so any M, N and K work.

TAIL 1 (float32 C, no cluster) gives the last partial round of tiles to every block evenly, as
stream-K does: a grid of one block per SM walks its whole tiles of the full rounds, then an even
share of the remaining tiles' k tiles (so a block may begin or end inside a tile). The pieces
of a tile meet in C by the split-K hand-off (``templates/_splitk_handoff.cuh.j2``): the first
to arrive stores alpha * sum + beta * C, the later ones add alpha * sum by float32 atomics. With
fewer tiles than SMs every tile is so shared, which splits K for shapes too small to fill the
chip.

SPLIT > 1 (no cluster, no TAIL) cuts K into SPLIT even pieces per output tile, for shapes with
fewer tiles than SMs: the grid walks tiles x SPLIT pieces, piece p of every tile before piece
p + 1 of any, so the blocks at work at once read the same k range as a band of whole tiles does.
The pieces of a tile meet in float32 sums kept in the kernel's module: the first to arrive
stores its sums there, the middle ones add theirs, and the last adds them to its own and writes
C as a whole tile does, so a half C is rounded once from the FP32 sum. (The TAIL above, whose
blocks work at different k offsets of different tiles, ran at 0.36-1.05x of whole tiles on the
H100; why was not measured.)

PINGPONG 1 (two consumers, whole tiles: no TAIL, no SPLIT) has the consumers take the block's
tiles in turn, each a whole BM x BN tile, so that one writes its C while the other multiplies
the next: where the other configs' tensor cores wait for every tile's epilogue, these wait for
none but the last. A consumer then holds all BM/64 m64 tiles' sums.

DTYPE and LAYOUT are pinned by the shape as for ``hmma``; OUT (C's element type: 0 float32,
1 float16, 2 bfloat16) by the shape's output type where it has one, else 0.
"""

from __future__ import annotations

from tuner.core.shape import HALF_DTYPES, SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families._base import (
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
    SmCount,
)
from tuner.kernels.families.hmma import (
    HALF_BYTES,
    HALF_OUT_DTYPES,
    HMMA_PARAMS,
    hmma_pinned,
    stored_tiles,
)

WARPGROUP = 128  # threads of one warpgroup
M_TILE = 64  # rows of one wgmma
K_TILE = 64  # halves of one 128-byte swizzled row: the k tile and the width of a TMA box
ROW_BYTES = 128
BOX_MAX = 256  # TMA's largest box side, in elements
# The ring starts at the first 1024-byte boundary of the dynamic shared memory (the swizzle
# atoms must), which may be up to this far in; two 8-byte mbarriers per stage follow it.
ALIGN_SPARE = 1024
BARRIER_BYTES = 16
# Shared memory one block may have on sm_90 (227 KB).
SMEM_LIMIT = 232448
# The most FP32 sums a consumer thread keeps: m64n256 (or two m64n128) fits the registers
# setmaxnreg gives it.
MAX_ACCUMULATORS = 128
# setmaxnreg targets (multiples of 8): the producer keeps what one thread issuing copies needs;
# the consumers take the rest of the SM's 65536 registers (one block per SM).
PRODUCER_REGS = 40
CONSUMER_REGS = {1: 240, 2: 232}
VECTOR_HALVES = 8  # halves in 16 bytes: TMA's unit of row pitch and base alignment
C_ELEMENT_BYTES = {0: 4, 1: 2, 2: 2}  # by OUT
PIECE_BYTES = 64 * ROW_BYTES  # a piece of C stored by TMA: 64 rows of 128 bytes
# The hand-off's counters (TAIL 1): one triple per tile of the last partial round, fewer than
# the blocks of the grid (one per SM), so this bounds the SMs a device may have.
TAIL_MAX_TILES = 1024
# The hand-off's ticket (TAIL 1, SPLIT > 1): a word of dynamic shared memory after the barriers.
TICKET_BYTES = 4
# SPLIT > 1: output tiles whose pieces can meet (a slot of BM x BN float32 sums and three
# counters each, in the module: 20 MiB of slots for 128 x 256 tiles). A shape with more tiles
# does not split (piece 0 does all of K), and the space drops its split configs; a shape that
# needs a split has fewer tiles than SMs.
SPLIT_MAX_TILES = 160


def tma_ws_threads(p: Params) -> int:
    return WARPGROUP * (p["CONSUMERS"] + 1)


def pingpong(p: Params) -> bool:
    """Whether the consumers take whole tiles in turn (PINGPONG 1) instead of sharing each
    tile's rows: one writes its C while the other multiplies."""
    return p.get("PINGPONG", 0) == 1


def m64_tiles(p: Params) -> int:
    """m64 tiles each consumer warpgroup computes (one for a short tile: BM < 64): its share of
    the tile's rows, or all of them where the consumers take whole tiles in turn."""
    sharing = 1 if pingpong(p) else p["CONSUMERS"]
    return max(1, p["BM"] // sharing // M_TILE)


def short_tile(p: Params) -> bool:
    """A tile of fewer rows than one wgmma's 64 (BM 16 or 32): its rows are the first BM of one
    m64 tile, whose other rows multiply whatever the stage holds after A's BM rows (B's tile)
    and are never stored or met. A stage then holds BM rows of A instead of 64, so a ring of the
    same shared memory keeps more of B in flight where few rows make the launch a read of B."""
    return p["BM"] < M_TILE


def wgmma_rows(p: Params) -> int:
    """Rows the consumers' m64 wgmma tiles cover: BM, or 64 for a short tile, whose rows past BM
    are multiplied too (and never stored). A SPLIT slot keeps them all: each thread's place in
    it is that of its m64 rows."""
    return max(p["BM"], M_TILE)


def _accumulators(p: Params) -> int:
    return m64_tiles(p) * p["BN"] // 2


def stage_bytes(p: Params) -> int:
    return (p["BM"] + p["BN"]) * p["BK"] * HALF_BYTES


def c_stage_bytes(p: Params) -> int:
    """Shared memory of the TMA-store epilogue (EPI 1): two pieces of 64 rows x 128 bytes of C
    per consumer."""
    return p["CONSUMERS"] * 2 * PIECE_BYTES if p["EPI"] == 1 else 0


def smem_bytes(p: Params) -> int:
    """Dynamic shared memory of the block: the ring, its barriers, the C pieces of EPI 1, the
    alignment spare and, where TAIL is 1 or SPLIT > 1, the hand-off's ticket."""
    ticket = TICKET_BYTES if p.get("TAIL", 0) or p.get("SPLIT", 1) > 1 else 0
    return p["STAGES"] * (stage_bytes(p) + BARRIER_BYTES) + c_stage_bytes(p) + ALIGN_SPARE + ticket


def tma_ws_derive(p: Params) -> dict[str, int]:
    """Constants of tma_ws.cu.j2: whether each operand's tile is stored along M or N (as
    wgmma's, from the layout), the bytes of one column of 64 m or n of an MN-major tile, and the
    register targets of setmaxnreg."""
    (a_mn, _, _), (b_mn, _, _) = stored_tiles(p)
    return {
        "MT": m64_tiles(p),
        "A_MN_MAJOR": a_mn,
        "B_MN_MAJOR": b_mn,
        "A_COLUMN_BYTES": p["BK"] * ROW_BYTES,
        "B_COLUMN_BYTES": p["BK"] * ROW_BYTES,
        "STAGE_BYTES": stage_bytes(p),
        "PRODUCER_REGS": PRODUCER_REGS,
        "C_BYTES": C_ELEMENT_BYTES[p["OUT"]],
        "PIECE_COLS": ROW_BYTES // C_ELEMENT_BYTES[p["OUT"]],
        "PIECE_BYTES": PIECE_BYTES,
        "C_STAGE_BYTES": c_stage_bytes(p),
        "CONSUMER_REGS": CONSUMER_REGS[p["CONSUMERS"]],
        "MAX_TILES": TAIL_MAX_TILES,
        "SPLIT_MAX_TILES": SPLIT_MAX_TILES,
        "SLOT_ROWS": wgmma_rows(p),
    }


def tma_ws_footprint(p: Params) -> Footprint:
    # The tensor cores read A and B from shared memory and one producer thread issues the
    # copies: the consumers' registers are their sums and a few addresses.
    return Footprint(
        threads=tma_ws_threads(p),
        smem_bytes=smem_bytes(p),
        dynamic_smem=True,
        accumulators=_accumulators(p),
        fragments=0,
    )


def box_rows(p: Params, layout: str) -> tuple[int, int]:
    """The rows of A's and of B's TMA box (its other side is 64 k or 64 m/n): a K-major
    operand is one box of BM (or BN) rows of 64 k, an MN-major one boxes of 64 rows of k. An
    operand two blocks of a cluster share (A along N, B along M) is loaded half by each: half
    the rows of either box."""
    a_rows = K_TILE if layout[0] == "T" else p["BM"]
    b_rows = p["BN"] if layout[1] == "T" else K_TILE
    return a_rows // p["CN"], b_rows // p["CM"]


def stored_row_lengths(shape: Shape) -> tuple[int, int]:
    """Halves in a row of A and of B as the layout stores them (packed)."""
    a = shape.m if shape.a_transposed else shape.k
    b = shape.k if shape.b_transposed else shape.n
    return a, b


def short_tile_waste(p: Params, shape: Shape) -> str | None:
    """A short tile where M is over BM: each of its row tiles reads all of B again (on the H200,
    48 rows in 16- or 32-row tiles ran at 0.56-0.86x cuBLAS where 64-row tiles ran at
    0.96-0.99x: benchmarks/results/h200-tma-ws-short-probes-2026-11-29.json)."""
    if p.get("BM", M_TILE) < M_TILE and shape.m > p["BM"]:  # also called with the pins alone
        return (
            f"BM={p['BM']} tiles read all of B once per {p['BM']} rows: for M={shape.m} a "
            "taller tile reads it fewer times"
        )
    return None


def tma_ws_waste(p: Params, shape: Shape) -> str | None:
    """A short tile where M is over BM (:func:`short_tile_waste`), or a shape whose stored rows
    are not whole 16-byte vectors: TMA cannot read it in place (its row pitch must be a multiple
    of 16 bytes); the padded config (``_pad8``) runs it."""
    short = short_tile_waste(p, shape)
    if short is not None:
        return short
    a, b = stored_row_lengths(shape)
    if a % VECTOR_HALVES or b % VECTOR_HALVES:
        return (
            f"TMA needs rows of whole 16-byte vectors: A's rows hold {a}, B's {b} halves "
            f"(a multiple of {VECTOR_HALVES} is needed; the _pad{VECTOR_HALVES} config copies them)"
        )
    return None


def _loads_ahead(p: Params) -> int:
    """k tiles loaded ahead of the one multiplied: the ring's stages but the one the last
    released wgmma group may still read."""
    return p["STAGES"] - 1


def _warp_tile(p: Params) -> tuple[int, int]:
    """Rows and columns of C one warp holds: 16 rows of each of its warpgroup's m64 tiles."""
    return m64_tiles(p) * 16, p["BN"]


TMA_WS_PARAMS = (
    Param(
        "BM",
        (16, 32, 64, 128, 256),
        "rows of C per output tile (64: one consumer of one m64 row; 16, 32: its first rows)",
    ),
    Param("BN", (64, 128, 192, 256), "columns of C per output tile (the wgmma's N)"),
    Param("BK", (K_TILE,), "depth of the k tile: one 128-byte swizzled row of halves"),
    Param("CONSUMERS", (1, 2), "consumer warpgroups (each computes BM/CONSUMERS rows)"),
    Param(
        "PINGPONG",
        (0, 1),
        "1: the two consumers take whole tiles in turn, one writing C while the other multiplies",
    ),
    Param("STAGES", (3, 4, 5, 6, 8, 12, 16), "shared-memory stages of the TMA ring"),
    Param("GROUP", (1, 8, 16), "block rows (or columns) banded together in the tile order"),
    Param("RASTER", (0, 1), "tile order: 0 bands of block rows, 1 bands of block columns"),
    Param("EPI", (0, 1), "epilogue: 0 stores from the sums, 1 through shared memory by TMA"),
    Param("CM", (1, 2), "blocks of a cluster along M (they share B's tiles by TMA multicast)"),
    Param("CN", (1, 2), "blocks of a cluster along N (they share A's tiles by TMA multicast)"),
    Param("TAIL", (0, 1), "1: the last partial round of tiles shared over every block (stream-K)"),
    Param(
        "SPLIT",
        (1, 2, 3, 4, 6, 8, 16, 32),
        "even pieces of K per output tile, meeting in float32 sums (1: whole K)",
    ),
    *HMMA_PARAMS[-3:],  # DTYPE, LAYOUT, OUT: the kinds the shape pins, as hmma's
)

TMA_WS_RULES = (
    Rule(
        "BK must be 64: a k tile is one 128-byte swizzled row of halves",
        lambda p: p["BK"] == K_TILE,
    ),
    Rule(
        "PINGPONG 1 needs two consumers: they take the tiles in turn",
        lambda p: p["PINGPONG"] == 0 or p["CONSUMERS"] == 2,
    ),
    Rule(
        "BM/CONSUMERS must be a multiple of 64 (BM with PINGPONG 1: a consumer computes whole "
        "m64 wgmma tiles), or BM 16 or 32 with one consumer (a short tile: the first rows of one "
        "m64 tile)",
        lambda p: (
            p["BM"] % ((1 if p["PINGPONG"] else p["CONSUMERS"]) * M_TILE) == 0
            if not short_tile(p)
            else p["BM"] in (16, 32) and p["CONSUMERS"] == 1
        ),
    ),
    Rule(
        f"BM must be 16, 32 or a multiple of 64 up to {BOX_MAX} and BN a multiple of 64 up to "
        f"{BOX_MAX}: a tile is whole 128-byte columns of 64 (BM rows of 64 k for a short tile) "
        "and one TMA box at most",
        lambda p: (
            (p["BM"] in (16, 32) or (p["BM"] % 64 == 0 and 64 <= p["BM"] <= BOX_MAX))
            and p["BN"] % 64 == 0
            and 64 <= p["BN"] <= BOX_MAX
        ),
    ),
    Rule(
        "a short tile (BM 16 or 32) needs a cluster of one block, EPI 0 and TAIL 0 (their "
        "boxes and hand-offs are whole m64 tiles)",
        lambda p: not short_tile(p) or (cluster_size(p) == 1 and p["EPI"] == 0 and p["TAIL"] == 0),
    ),
    Rule(
        f"a consumer thread may keep at most {MAX_ACCUMULATORS} FP32 sums "
        "(BM/CONSUMERS/64 * BN/2, BM/64 * BN/2 with PINGPONG 1): more spill",
        # PINGPONG by subscript first: the rule walk must not decide it before PINGPONG is set.
        lambda p: p["PINGPONG"] in (0, 1) and _accumulators(p) <= MAX_ACCUMULATORS,
    ),
    Rule(
        "STAGES must be at least 2: one stage multiplied while the next is loaded",
        lambda p: p["STAGES"] >= 2,
    ),
    Rule(
        f"the block must fit in {SMEM_LIMIT} bytes of shared memory: STAGES * ((BM + BN) * 128 "
        f"+ {BARRIER_BYTES}), the C pieces of EPI 1 and {ALIGN_SPARE} for alignment",
        lambda p: smem_bytes(p) <= SMEM_LIMIT,
    ),
    Rule(
        "CONSUMERS must be 1 or 2: the registers setmaxnreg hands out are sized for them",
        lambda p: p["CONSUMERS"] in CONSUMER_REGS,
    ),
    Rule(
        "a cluster is 1x1, 2x1 or 1x2 blocks (CM, CN in 1, 2; CM * CN at most 2)",
        lambda p: p["CM"] in (1, 2) and p["CN"] in (1, 2) and p["CM"] * p["CN"] <= 2,
    ),
    Rule("EPI must be 0 (direct stores) or 1 (TMA stores)", lambda p: p["EPI"] in (0, 1)),
    Rule("GROUP must be at least 1", lambda p: p["GROUP"] >= 1),
    Rule("RASTER must be 0 (bands of rows) or 1 (of columns)", lambda p: p["RASTER"] in (0, 1)),
    Rule("OUT must be 0 (float32), 1 (float16) or 2 (bfloat16)", lambda p: p["OUT"] in (0, 1, 2)),
    Rule("TAIL must be 0 (whole tiles) or 1 (a stream-K tail)", lambda p: p["TAIL"] in (0, 1)),
    Rule(
        "TAIL 1 needs float32 C (OUT 0): the pieces of a tile meet by float32 atomic adds",
        lambda p: p["TAIL"] == 0 or p["OUT"] == 0,
    ),
    Rule(
        "TAIL 1 needs a cluster of one block (CM = CN = 1): the blocks of a cluster load "
        "their tiles' k tiles together, which pieces of different lengths would not",
        lambda p: p["TAIL"] == 0 or cluster_size(p) == 1,
    ),
    Rule(
        "SPLIT > 1 needs a cluster of one block (CM = CN = 1) and TAIL 0: a tile's pieces are "
        "whole tiles' k ranges, met in one slot per tile",
        lambda p: p["SPLIT"] == 1 or (cluster_size(p) == 1 and p["TAIL"] == 0),
    ),
    Rule(
        "PINGPONG 1 needs TAIL 0 and SPLIT 1: each consumer's tiles are whole tiles",
        lambda p: p["PINGPONG"] == 0 or (p["TAIL"] == 0 and p["SPLIT"] == 1),
    ),
    # Last: it reads the layout, pinned by the shape and assigned last by the rule walk, and a
    # rule still undecided on a prefix keeps every later one from pruning it.
    Rule(
        "a short tile (BM 16 or 32) needs A stored along K (layout NN or NT: its box is BM rows "
        "of 64 k)",
        lambda p: not short_tile(p) or not stored_tiles(p)[0][0],
    ),
)


def cluster_size(p: Params) -> int:
    return p["CM"] * p["CN"]


def tiles_blocks(p: Params, shape: Shape, sm_count: int) -> int:
    """Blocks of the persistent grid: one per SM in whole clusters, or one per output tile
    (whole clusters of them) when fewer; with TAIL 1 one per SM always (the tiles past the full
    rounds, or all of them, are shared over every block); with SPLIT > 1 one per piece of a
    tile, SPLIT per tile where the tiles have slots (:func:`split_pieces`), at most one per SM."""
    if p.get("TAIL", 0):
        return sm_count
    if p.get("SPLIT", 1) > 1:
        return max(1, min(split_pieces(p, shape), sm_count))
    size = cluster_size(p)
    return size * max(1, min(_super_tiles(p, shape), sm_count // size))


def one_round_order_waste(p: Params, shape: Shape, device: SmCount) -> str | None:
    """Where the grid has a block for every piece of work (one round), GROUP and RASTER only
    choose which block takes which tile of a set that all run at once: every such config is the
    same kernel's work as its GROUP 1, RASTER 0 twin, which alone is kept. (A 40-candidate BF16
    NT study of 256x256x65536 on the H200 measured 30 SPLIT 32 configs of one 128x128 tile, 15 of
    them twins of another in all but GROUP or RASTER.)"""
    if p["GROUP"] == 1 and p["RASTER"] == 0:
        return None
    units = split_pieces(p, shape) if p.get("SPLIT", 1) > 1 else _super_tiles(p, shape)
    if units * cluster_size(p) > tiles_blocks(p, shape, device.sm_count):
        return None
    return (
        f"one round: every tile runs at once on the {device.sm_count} SMs, so GROUP and RASTER "
        "change nothing (GROUP 1, RASTER 0 is kept)"
    )


def single_tile_pingpong_waste(p: Params, shape: Shape, device: SmCount) -> str | None:
    """PINGPONG 1 with fewer tiles than two a block: a block with one tile has nothing for its
    second consumer, so it runs as the one-consumer config of the same tile would (which the
    space keeps); PINGPONG is kept where every block takes two tiles or more."""
    if not pingpong(p):
        return None
    tiles = _super_tiles(p, shape) * cluster_size(p)
    blocks = tiles_blocks(p, shape, device.sm_count)
    if tiles >= 2 * blocks:
        return None
    return (
        f"PINGPONG 1 with {tiles} tiles for {blocks} blocks on {device.sm_count} SMs: fewer "
        "than two a block, so second consumers idle (CONSUMERS 1 runs the same tiles)"
    )


def tma_ws_device_waste(p: Params, shape: Shape, device: SmCount) -> str | None:
    """The device's reasons: one round's tile order (:func:`one_round_order_waste`), or two
    consumers taking turns where there are fewer tiles than two a block
    (:func:`single_tile_pingpong_waste`)."""
    return one_round_order_waste(p, shape, device) or single_tile_pingpong_waste(p, shape, device)


def _super_tiles(p: Params, shape: Shape) -> int:
    """Tiles of CM x CN blocks' tiles, one per cluster at a time."""
    return -(-shape.m // (p["BM"] * p["CM"])) * -(-shape.n // (p["BN"] * p["CN"]))


def split_pieces(p: Params, shape: Shape) -> int:
    """Pieces the grid walks with SPLIT: tiles x SPLIT, or the tiles alone where there are more
    than the slots the kernel keeps (then it does not split)."""
    tiles = -(-shape.m // p["BM"]) * -(-shape.n // p["BN"])
    return tiles * p["SPLIT"] if tiles <= SPLIT_MAX_TILES else tiles


TMA_WS = Family(
    name="tma_ws",
    doc="FP16/BF16 inputs, FP32 sums on Hopper: TMA loads into a STAGES-deep mbarrier ring by a "
    "producer warpgroup, wgmma m64nBNk16 by 1-2 consumer warpgroups, persistent tiles in a "
    "grouped order (sm_90a).",
    params=TMA_WS_PARAMS,
    rules=TMA_WS_RULES,
    threads=tma_ws_threads,
    footprint=tma_ws_footprint,
    derive=tma_ws_derive,
    waste=tma_ws_waste,
    device_waste=tma_ws_device_waste,
    # A short tile answering a shape of more rows would read B once per BM rows of it.
    answer_waste=short_tile_waste,
    cost=CostTraits(
        schedule="tiles", math="half_tma", loads_ahead=_loads_ahead, warp_tile=_warp_tile
    ),
    # TAIL 1 keeps the hand-off's counters in its module; the flag is the family's, so every
    # tma_ws config gets a module per stream (a little memory where TAIL is 0).
    module_counters=True,
    leading_dims=True,
    tensor_maps=True,
    split_param="SPLIT",
    split_max_tiles=SPLIT_MAX_TILES,
    split_blocks_per_sm=1,
    min_arch=90,
    max_arch=90,
    arch_specific=True,
    dtypes=HALF_DTYPES,
    layouts=SUPPORTED_LAYOUTS,
    out_dtypes=HALF_OUT_DTYPES,
    pinned=hmma_pinned,
    launch_bound_blocks=lambda p: 1,
)
