"""What one k tile of one SM costs, per kind of math: four sets of figures (:class:`TileWork`)
for one skeleton (:func:`k_tile_cycles`), the largest of the pipes a tile keeps busy and of the
global-load latency left uncovered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuner.core.shape import Shape
from tuner.kernels.families import Family
from tuner.kernels.families.tma_ws import M_TILE, pingpong, wgmma_rows
from tuner.model.throughput import (
    BURST_LATENCY_FACTOR,
    DMMA_DEPTH,
    SCHEDULERS,
    TMA_STREAM_LATENCY,
    XU_PER_CLK,
    Throughput,
    issue_efficiency,
)

TileCycles = Callable[[int], float]


@dataclass(frozen=True)
class TileWork:
    """What one block does for one k tile, pipe by pipe: the four tile models (one per
    ``CostTraits.math``) differ only in these figures, and :func:`k_tile_cycles` turns any of
    them into the clocks of ``resident`` such blocks on one SM."""

    warps: int
    issue: float  # warp instructions the block issues, at ``issue_rate`` a clock when every
    issue_rate: float  # issue slot is filled (``issue_efficiency`` says how many are)
    smem_bytes: int  # shared-memory traffic
    l2_bytes: int  # the block tiles of A and B, read from L2
    loads_ahead: int  # k tiles whose loads are in flight ahead of the one computed
    latency: int  # clocks from a global load (or a burst of copies) to its data
    macs: int = 0  # multiply-adds on the tensor cores, at ``math_rate`` a clock (FFMA: issue)
    math_rate: float = 1.0
    # Work in flight that one block gives the math pipe (accumulator chains x mma depth): the
    # pipe runs at ``resident * depth / SCHEDULERS / DMMA_DEPTH`` of its rate while that is
    # below 1 (``DMMA_DEPTH``); None for a pipe that any resident block keeps busy.
    depth: int | None = None
    conversions: int = 0  # floats widened to double, at ``XU_PER_CLK`` a clock


def k_tile_cycles(work: TileWork, rates: Throughput) -> TileCycles:
    """Clocks of one k tile of ``resident`` blocks on one SM: the busiest pipe, or the wait for
    the loads where it is longer (:func:`with_latency`)."""

    def cycles(resident: int) -> float:
        math = resident * work.macs / work.math_rate
        if work.depth is not None:
            math /= min(1.0, resident * work.depth / SCHEDULERS / DMMA_DEPTH)
        widen = resident * work.conversions / XU_PER_CLK
        issue = resident * work.issue / work.issue_rate
        issue /= issue_efficiency(resident * work.warps)
        smem = resident * work.smem_bytes / rates.smem_bytes_per_clk
        l2 = resident * work.l2_bytes / rates.l2_bytes_per_clk
        busy = max(math, widen, issue, smem, l2)
        return with_latency(busy, resident, work.loads_ahead, work.latency)

    return cycles


def float4_rows(shape: Shape) -> tuple[bool, bool]:
    """Whether A's rows (K long) and B's rows (N long) are whole float4s: what the float32
    templates' 16-byte (or unchecked) paths need."""
    return shape.k % 4 == 0, shape.n % 4 == 0


def tile_loads(bm: int, bn: int, bk: int, threads: int, shape: Shape) -> float:
    """Global loads (or copies) per thread for one k tile of A and B: 16 bytes each where the
    rows allow it, else one float each (the templates take the 16-byte path only when the row
    length, K for A and N for B, is a multiple of 4)."""
    a_vec, b_vec = float4_rows(shape)
    a_width = 4 if a_vec else 1
    b_width = 4 if b_vec else 1
    return max((bm * bk / a_width + bn * bk / b_width) / threads, 1.0)


def ffma_work(
    family: Family,
    params: dict[str, int],
    threads: int,
    rates: Throughput,
    warp_size: int,
    shape: Shape,
) -> TileWork:
    """An FP32 FMA family: every thread issues its FMAs, the float4 shared loads of its
    fragments, and its share of the tile's global loads and shared stores; ``fma_lanes / 32``
    warp instructions a clock."""
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    fp = family.footprint(params)
    wm, wn = family.cost.warp_tile_of(params)
    warps = -(-threads // warp_size)
    loads = tile_loads(bm, bn, bk, threads, shape)
    per_thread = bk * (fp.accumulators + fp.fragments / 4) + 2 * loads + 2
    return TileWork(
        warps=warps,
        issue=warps * per_thread,
        issue_rate=rates.fma_lanes / 32,
        smem_bytes=(warps * bk * (wm + wn) + (bm + bn) * bk) * 4,
        l2_bytes=(bm + bn) * bk * 4,
        loads_ahead=family.cost.loads_ahead(params),
        latency=rates.global_latency,
    )


def _fp64_tensor_work(
    family: Family,
    params: dict[str, int],
    threads: int,
    rates: Throughput,
    warp_size: int,
    shape: Shape,
) -> TileWork:
    """A family that multiplies on the FP64 tensor cores: each warp reads its WMxBK slice of A
    and BKxWN slice of B as floats and widens every value (or, with WIDEN = 0, the block widens
    its tiles once as it stores them, and warps read doubles); the DMMA pipe needs work in
    flight (``DMMA_DEPTH``)."""
    bm, bn, bk, mk = params["BM"], params["BN"], params["BK"], params["MK"]
    wm, wn = family.cost.warp_tile_of(params)
    warps = -(-threads // warp_size)
    widened_on_store = params.get("WIDEN", 1) == 0
    element = 8 if widened_on_store else 4
    per_warp_reads = (wm + wn) * bk  # values one warp reads from shared memory per k tile
    mmas = (wm // 16) * (wn // 8) * (bk // mk)
    per_warp = mmas + per_warp_reads * element / (16 * warp_size) + per_warp_reads / warp_size
    copies = tile_loads(bm, bn, bk, threads, shape)
    return TileWork(
        warps=warps,
        issue=warps * per_warp + threads * copies / warp_size,
        issue_rate=SCHEDULERS,
        smem_bytes=warps * per_warp_reads * element + (bm + bn) * bk * element,
        l2_bytes=(bm + bn) * bk * 4,
        loads_ahead=family.cost.loads_ahead(params),
        latency=rates.global_latency,
        macs=bm * bn * bk,
        math_rate=rates.dmma_per_clk,
        depth=warps * (wm // 16) * (wn // 8) * mk,
        conversions=(bm + bn) * bk if widened_on_store else warps * per_warp_reads,
    )


def _half_tensor_work(
    family: Family,
    params: dict[str, int],
    threads: int,
    rates: Throughput,
    warp_size: int,
    shape: Shape,
) -> TileWork:
    """A family that multiplies FP16 or BF16 on the tensor cores by warp: each warp reads its
    WMxBK slice of A and BKxWN slice of B with ldmatrix (four 8x8 matrices a read) and issues
    (WM/16)(WN/8)(BK/16) mma.sync; the block copies its tiles in 16-byte chunks, or in smaller
    pieces where rows are not 16-byte aligned."""
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    wm, wn = family.cost.warp_tile_of(params)
    warps = -(-threads // warp_size)
    mmas = (wm // 16) * (wn // 8) * (bk // 16)
    reads = (wm // 16 + wn // 16) * (bk // 16)
    pieces = _half_copies(bm, bn, bk, threads, shape)
    return TileWork(
        warps=warps,
        issue=warps * (mmas + reads + pieces),
        issue_rate=SCHEDULERS,
        smem_bytes=(warps * (wm + wn) * bk + (bm + bn) * bk) * 2,
        l2_bytes=(bm + bn) * bk * 2,
        loads_ahead=family.cost.loads_ahead(params),
        latency=rates.global_latency,
        macs=bm * bn * bk,
        math_rate=rates.hmma_per_clk,
    )


def _wgmma_work(
    family: Family,
    params: dict[str, int],
    threads: int,
    rates: Throughput,
    warp_size: int,
    shape: Shape,
) -> TileWork:
    """A family that multiplies FP16 or BF16 by warpgroup (``wgmma``): the tensor cores read
    each warpgroup's BM/WG_M rows of A and all of B's tile from shared memory themselves, so
    the warps issue only the tile's copies (as ``hmma``'s) and a few wgmma a k tile."""
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    warps = -(-threads // warp_size)
    # Every thread copies its share of a whole stage ((BM + BN) x 64 halves) in one burst after
    # the k tile's barrier, behind the bursts of the tiles before it: the model's load latency
    # is too short for it. Calibrated on one public-suite shape, BF16 4096^3 on the H100
    # (tries/h100-try-wgmma-first.json): 128x256 tiles ran at 443 TFLOP/s with one k tile
    # copied ahead (STAGES 3) and 528 with two (STAGES 4), 1.19 times the time; with the model's
    # 1536 clocks a k tile (L2-bound), three times the load latency (1800 clocks over one tile
    # ahead) gives 1.17.
    return TileWork(
        warps=warps,
        issue=warps * _half_copies(bm, bn, bk, threads, shape),
        issue_rate=SCHEDULERS,
        smem_bytes=((bm + params["WG_M"] * bn) * bk + (bm + bn) * bk) * 2,
        l2_bytes=(bm + bn) * bk * 2,
        loads_ahead=family.cost.loads_ahead(params),
        latency=BURST_LATENCY_FACTOR * rates.global_latency,
        macs=bm * bn * bk,
        math_rate=rates.wgmma_per_clk or rates.hmma_per_clk,
    )


def _tma_work(
    family: Family,
    params: dict[str, int],
    threads: int,
    rates: Throughput,
    warp_size: int,
    shape: Shape,
) -> TileWork:
    """A family whose tiles arrive by TMA and are multiplied by warpgroup (``tma_ws``): one
    thread issues a few bulk copies a k tile, so the warps issue next to nothing; the tensor
    cores read each consumer's rows of A and all of B's tile from shared memory, which the
    copies wrote; an operand the two blocks of a cluster share (B along M, A along N) is read
    from L2 half by each. The copies are asynchronous and tracked by mbarriers, so their latency
    is spread over the STAGES - 1 tiles in flight, with no burst to wait out; it is the latency
    of a copy while the whole chip streams (``TMA_STREAM_LATENCY``), not an idle load's."""
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    # The consumers that multiply one k tile: all of them, each its rows, or (PINGPONG) the one
    # whose turn it is, all the rows.
    consumers = 1 if pingpong(params) else params["CONSUMERS"]
    a_l2 = bm * bk * 2 // params.get("CN", 1)
    b_l2 = bn * bk * 2 // params.get("CM", 1)
    rows = wgmma_rows(params)  # a short tile (BM 16, 32) still multiplies one m64 tile
    b_reads = rows // M_TILE  # each m64 wgmma at work reads all of B's tile
    return TileWork(
        warps=-(-threads // warp_size),
        issue=consumers * 4 * (bk // 16) + 4,  # the wgmma and the barriers, per warp
        issue_rate=SCHEDULERS,
        smem_bytes=((rows + b_reads * bn) * bk + (bm + bn) * bk) * 2,
        l2_bytes=a_l2 + b_l2,
        loads_ahead=family.cost.loads_ahead(params),
        latency=max(rates.global_latency, TMA_STREAM_LATENCY),
        macs=rows * bn * bk,
        math_rate=rates.wgmma_per_clk or rates.hmma_per_clk,
    )


def _half_copies(bm: int, bn: int, bk: int, threads: int, shape: Shape) -> float:
    """Copy instructions per thread and k tile of a half-input family's A and B tiles."""
    a_ld = shape.m if shape.a_transposed else shape.k
    b_ld = shape.k if shape.b_transposed else shape.n
    return (bm * bk * _pieces_per_chunk(a_ld) + bn * bk * _pieces_per_chunk(b_ld)) / 8 / threads


def _pieces_per_chunk(ld: int) -> int:
    """Copies per 16 bytes of a half-precision row of ``ld`` elements: one cp.async of 16, 8 or
    4 bytes as the row's alignment allows, or 8 two-byte loads and their stores."""
    for width, pieces in ((8, 1), (4, 2), (2, 4)):
        if ld % width == 0:
            return pieces
    return 16


# The tile model of each kind of math (``CostTraits.math``); FFMA for any other.
TILE_MODELS: dict[str, Callable[..., TileWork]] = {
    "ffma": ffma_work,
    "fp64_tensor": _fp64_tensor_work,
    "half_tensor": _half_tensor_work,
    "half_wgmma": _wgmma_work,
    "half_tma": _tma_work,
}


def with_latency(busy: float, resident: int, ahead: int, latency: int) -> float:
    """A k tile's clocks once the wait for its global loads (``latency`` clocks) is counted:
    hidden behind the tiles loaded ahead, or, without any, filled only by the other resident
    blocks' work."""
    if ahead == 0:
        return max(busy, latency + busy / resident)
    return max(busy, latency / ahead)
