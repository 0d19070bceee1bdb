"""An analytic cost model of every family, to rank candidates before measuring them.

The model knows a candidate (``tuner.kernels.candidate``: a config with the resource check its
space made and, padded, the plan of its copies), the shape, the device's limits and its rates
(:class:`tuner.model.rates.DeviceRates`: probed on the device, or an architecture's table). It
estimates a kernel's time in SM clock cycles:

* the grid is ``ceil(M/BM) * ceil(N/BN)`` output tiles (padding at the matrix edges is paid in
  full) times SPLITK blocks per tile, each over ``1/SPLITK`` of the k tiles;
* ``r`` blocks share an SM (the occupancy of the candidate's resource check, or fewer when the
  grid is small); the grid runs in full waves of ``SMs * r`` blocks and a last, partial wave
  whose blocks share their SMs with fewer others (wave quantization);
* one k tile of one SM costs the largest of the pipes it keeps busy, and of the global-load
  latency divided by the k tiles loaded ahead (``CostTraits.loads_ahead``); the four kinds of
  math below are four sets of figures (:class:`TileWork`) for one skeleton (``_tile_cycles``):
  - FFMA families: instruction issue (FMAs, float4 shared loads of the fragments, the tile's
    global loads and shared stores; ``fma_lanes / 32`` warp instructions a clock, scaled by the
    share of issue slots the resident warps fill, ``issue_efficiency``), shared-memory bandwidth
    and L2 bandwidth for the block tiles;
  - FP64-tensor-core families (``CostTraits.math == "fp64_tensor"``): the DMMA pipe (the
    device's FP64 tensor rate), the conversion unit widening every float a warp reads to double
    (``XU_PER_CLK``), the issue of the mma, shared-load, conversion and copy instructions,
    shared-memory and L2 bandwidth;
  - FP16/BF16 tensor-core families (``"half_tensor"``): the mma.sync rate of the architecture
    (``Throughput.hmma_per_clk``, a table figure: no probe measures it yet), the issue of mma,
    ldmatrix and copy instructions, shared-memory and L2 bandwidth at two bytes a value; by
    warpgroup (``"half_wgmma"``): the wgmma rate (``Throughput.wgmma_per_clk``, a table figure),
    the issue of the copies alone, and the same bandwidths;
* split-K adds, per wave, one hand-off (about two global-memory latencies) and the atomic adds
  of the SPLITK-1 later slices into C (one 16-byte reduction per four values,
  ``REDUCTIONS_PER_CLK`` chip-wide);
* a persistent grid (``streamk``) runs every block for the whole launch over an equal share of
  the k tiles, plus the hand-off and atomic adds of its stream-K tiles;
* a streaming family (``skinny``) has a model of its own, ``_stream_estimate``.

Cycles become milliseconds at the clock the rates imply (the FFMA rate over the FMA lanes),
plus one launch. The model does not see ``doublebuf``'s one barrier less per k tile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from tuner.core.config import Config
from tuner.core.shape import ELEMENT_BYTES, Shape
from tuner.kernels.candidate import Candidate, build_candidate
from tuner.kernels.families import SPLITK_MAX_TILES, Family, get_family, persistent_blocks
from tuner.kernels.operand_padding import PaddingPlan, padded_product, plan_padding
from tuner.kernels.resources import DeviceLimits, ResourceCheck, occupancy
from tuner.model.rates import DeviceRates, table_rates


@dataclass(frozen=True)
class Throughput:
    """Per-SM rates at the SM clock, the units the model counts in."""

    clock_ghz: float
    fma_lanes: int  # FP32 FMA lanes per SM (warp instructions a clock = fma_lanes / 32)
    dmma_per_clk: float  # FP64 multiply-adds per SM and clock on the tensor cores
    smem_bytes_per_clk: int  # shared-memory bandwidth per SM
    # L2 -> SM bandwidth per SM: about 5.5 TB/s of L2 hits chip-wide on an H100 and 4.8 on an
    # A100 in published microbenchmarks, 21-31 bytes per SM and clock; 32 here.
    l2_bytes_per_clk: int
    global_latency: int  # clocks from a global load to its data (L2 hit / DRAM mix)
    dram_bytes_per_clk: float  # device-memory bandwidth of the whole chip, per SM clock
    launch_us: float = 3.0
    # FP16/BF16 multiply-adds with FP32 sums per SM and clock by mma.sync: the A100's dense
    # 312 TFLOP/s (1024); on the H100 mma.sync, not wgmma, is taken at the same 1024, about half
    # of what wgmma reaches; GA10x and AD10x at half the A100's rate with FP32 sums.
    hmma_per_clk: float = 1024.0
    # The same by wgmma (Hopper's warpgroup mma, operands from shared memory): the H100's dense
    # 989 TFLOP/s at 1.83 GHz over 132 SMs is 2048; 0 where the instruction does not exist.
    wgmma_per_clk: float = 0.0


# The structure of an architecture's SM (published figures, not measured by this project); the
# rates (clock, DMMA, DRAM) come from ``DeviceRates`` when a device has them.
STRUCTURE: dict[str, Throughput] = {
    "sm_80": Throughput(1.41, 64, 64.0, 128, 32, 600, 1400),
    "sm_86": Throughput(1.80, 128, 2.0, 128, 32, 600, 550, hmma_per_clk=512.0),
    "sm_89": Throughput(2.52, 128, 2.0, 128, 32, 600, 400, hmma_per_clk=512.0),
    "sm_90": Throughput(1.98, 128, 128.0, 128, 32, 600, 1690, wgmma_per_clk=2048.0),
}

# How many load latencies a wgmma k tile's copies take to land (``_wgmma_tile``).
BURST_LATENCY_FACTOR = 3

# 16-byte atomic reductions into C that L2 completes per SM clock, chip-wide (an assumption of
# this model, not a measured figure).
REDUCTIONS_PER_CLK = 64

# Conversions from float to double per SM and clock (the CUDA programming guide's table of
# arithmetic throughput: 16 on sm_80 and sm_90).
XU_PER_CLK = 16

# The FP64 tensor pipe needs work in flight: every mma of an accumulator chain (one m16n8 tile
# of a warp) waits for the one before, so each scheduler must hold chains x MK (the k depth of
# one mma) of at least DMMA_DEPTH to keep the pipe busy; with less it runs at that share of its
# rate. Set from measurements, as WARP_READY, BURST_LATENCY_FACTOR and the two skinny load costs
# below are (the other figures are published or assumed): on the H100's 4096^3 dmma_pipelined
# sweep with MK = 4, 32x64 warp tiles at 8 warps per SM (32 chains a scheduler) and 32x32 tiles
# at 16 warps (32) ran within 3 % of each other, 32x32 at 12 warps (24 chains) 20 % slower and
# at 8 warps (16) 30 % slower.
DMMA_DEPTH = 128

# Schedulers (SM sub-partitions) per SM, each issuing one warp instruction a clock, and the chance
# that one warp of the k loop has an instruction ready in a given clock: one warp per scheduler
# issues 90 % of the clocks, two 99 %. WARP_READY is set from measurements: of 0.7, 0.8 and
# 0.9, 0.9 agreed best with the H100 sweep tables overall.
SCHEDULERS = 4
WARP_READY = 0.9

# Instructions that one load of ``skinny``'s unchecked loop costs beside itself: address
# arithmetic (nvcc 13.0 for sm_90 put 4.5 to 4.7 non-FMA instructions per load in the loop
# bodies of three configs; the checked loop, which only ragged edges run, about 16).
SKINNY_LOAD_ISSUE = 5
# skinny's unchecked loop needs rows of whole float4s (K for A, N for B); on any other shape
# every chunk takes the checked loop, which reads a float4 as four checked 4-byte loads at about
# 16 instructions each. On the H100 the study of 33x4096x4093 measured seven skinny configs at
# 2.6 to 7.9 TFLOP/s that the model, charging the unchecked loop, put at 26 to 30; charging
# this puts them at 6 to 8.
SKINNY_CHECKED_LOAD_ISSUE = 4 * 16


def throughput(device: DeviceLimits, rates: DeviceRates | None = None) -> Throughput:
    """The model's per-SM rates for ``device``: its architecture's structure, with the clock,
    DMMA rate, DRAM bandwidth and launch time of ``rates`` (default: the architecture's
    table; an unknown architecture is modelled as sm_90)."""
    base = STRUCTURE.get(device.arch, STRUCTURE["sm_90"])
    rates = rates or table_rates(device)
    if rates is None:
        return base
    clock_hz = rates.ffma_tflops * 1e12 / (2 * base.fma_lanes * device.sm_count)
    return replace(
        base,
        clock_ghz=clock_hz / 1e9,
        dmma_per_clk=rates.fp64_tensor_tflops * 1e12 / (2 * device.sm_count * clock_hz),
        dram_bytes_per_clk=rates.dram_tb_s * 1e12 / clock_hz,
        launch_us=rates.launch_us,
    )


def issue_efficiency(warps: int) -> float:
    """Share of the SM's issue slots that ``warps`` resident warps fill: a scheduler without a
    warp issues nothing, and one with w warps misses a clock only when none of them is ready."""
    active = min(SCHEDULERS, max(warps, 1))
    per_scheduler = max(warps, 1) / active
    ready = 1.0 - float((1.0 - WARP_READY) ** per_scheduler)
    return active / SCHEDULERS * ready


@dataclass(frozen=True)
class Estimate:
    """The model's view of one config on one shape."""

    cycles: float
    ms: float  # cycles at the device's clock, plus one launch
    blocks: int  # output tiles x SPLITK
    blocks_per_sm: int  # resident blocks per SM in a full wave
    waves: float  # blocks / (SMs * blocks_per_sm)
    wave_efficiency: float  # waves / ceil(waves)
    edge_efficiency: float  # useful M*N / padded M*N

    @classmethod
    def of(
        cls,
        cycles: float,
        blocks: int,
        per_sm: int,
        tile: tuple[int, int],
        shape: Shape,
        device: DeviceLimits,
        rates: Throughput,
    ) -> Estimate:
        """An estimate of ``cycles`` for ``blocks`` blocks of ``tile`` (BM, BN), ``per_sm`` of
        them resident per SM."""
        waves = blocks / (device.sm_count * per_sm)
        tiles = -(-shape.m // tile[0]) * -(-shape.n // tile[1])
        return cls(
            cycles=cycles,
            ms=cycles / (rates.clock_ghz * 1e6) + rates.launch_us / 1e3,
            blocks=blocks,
            blocks_per_sm=per_sm,
            waves=waves,
            wave_efficiency=waves / -(-blocks // (device.sm_count * per_sm)),
            edge_efficiency=(shape.m * shape.n) / (tiles * tile[0] * tile[1]),
        )


@dataclass(frozen=True)
class _Grid:
    """How a config's blocks meet the chip: shared by every schedule."""

    check: ResourceCheck
    tiles: int  # output tiles
    split: int  # SPLITK blocks per tile (1 when the grid has more tiles than ticket counters)
    blocks: int
    per_sm: int  # resident blocks per SM the resources allow
    r_full: int  # resident blocks per SM in a full wave of this grid


def resident_blocks(config: Config, device: DeviceLimits, check: ResourceCheck) -> int:
    """Blocks of ``config`` per SM: the static estimate, or what ``__launch_bounds__`` asks the
    compiler to make room for (MINBLOCKS: registers are capped to fit that many, so only
    threads and shared memory can stop them)."""
    wanted = get_family(config.family).launch_bound_blocks(config.as_dict())
    per_sm = check.occupancy.blocks_per_sm
    if wanted > per_sm:
        capped = device.regs_per_sm // (wanted * check.threads)
        fits = occupancy(check.threads, min(check.est_registers, capped), check.smem_bytes, device)
        per_sm = max(per_sm, min(wanted, fits.blocks_per_sm))
    return max(per_sm, 1)


def _grid(candidate: Candidate, shape: Shape, device: DeviceLimits) -> _Grid:
    config, check = candidate.config, candidate.check
    params = config.as_dict()
    tiles = -(-shape.m // params["BM"]) * -(-shape.n // params["BN"])
    # The kernel splits only when every tile has its ticket counters (see templates/splitk).
    split = params.get("SPLITK", 1) if tiles <= SPLITK_MAX_TILES else 1
    blocks = tiles * split
    per_sm = resident_blocks(config, device, check)
    return _Grid(check, tiles, split, blocks, per_sm, min(per_sm, -(-blocks // device.sm_count)))


TileCycles = Callable[[int], float]


@dataclass(frozen=True)
class TileWork:
    """What one block does for one k tile, pipe by pipe: the four tile models (one per
    ``CostTraits.math``) differ only in these figures, and :func:`_tile_cycles` turns any of
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


def _tile_cycles(work: TileWork, rates: Throughput) -> TileCycles:
    """Clocks of one k tile of ``resident`` blocks on one SM: the busiest pipe, or the wait for
    the loads where it is longer (:func:`_with_latency`)."""

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
        return _with_latency(busy, resident, work.loads_ahead, work.latency)

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


def _ffma_work(
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
    "ffma": _ffma_work,
    "fp64_tensor": _fp64_tensor_work,
    "half_tensor": _half_tensor_work,
    "half_wgmma": _wgmma_work,
}


def _with_latency(busy: float, resident: int, ahead: int, latency: int) -> float:
    """A k tile's clocks once the wait for its global loads (``latency`` clocks) is counted:
    hidden behind the tiles loaded ahead, or, without any, filled only by the other resident
    blocks' work."""
    if ahead == 0:
        return max(busy, latency + busy / resident)
    return max(busy, latency / ahead)


def estimate(
    subject: Candidate | Config,
    shape: Shape,
    device: DeviceLimits,
    rates: DeviceRates | None = None,
) -> Estimate:
    """Estimated time of a candidate (or of a config, built into one here) on ``shape`` (lower
    is better): its kernel on the product the family's kernel computes (``Family.run_shape``),
    with the copies of padded operands, and for a family that rewrites the operands first
    (FP32 split into BF16 parts), that pass too."""
    candidate = subject
    if not isinstance(candidate, Candidate):
        candidate = build_candidate(candidate, shape, device)
    family = get_family(candidate.family)
    unit = throughput(device, rates)
    if candidate.padding is not None:
        return _with_padded_operands(candidate, candidate.padding, shape, device, unit)
    run = family.run_shape(shape)
    kernel = _kernel_estimate(candidate, run, device, unit)
    if not family.rewrites_operands:
        return kernel
    return _with_operand_rewrite(kernel, shape, run, unit)


def padding_copies_ms(
    shape: Shape, leading_dims: bool, device: DeviceLimits, rates: DeviceRates | None = None
) -> float:
    """Estimated time of a padded launch's copies of ``shape`` (bases on 16 bytes, beta = 0):
    :func:`copies_ms` of its plan."""
    return copies_ms(plan_padding(shape, leading_dims=leading_dims), device, rates)


def copies_ms(plan: PaddingPlan, device: DeviceLimits, rates: DeviceRates | None = None) -> float:
    """Estimated time of the copies of ``plan`` (``tuner.kernels.operand_padding.plan_padding``):
    their bytes read and written at the DRAM's bandwidth, one launch each. On the H100 this was
    within 3 µs of the measured cost of the copies on six of eleven odd shapes, and further off
    on the other five."""
    return _copies_ms(plan, throughput(device, rates))


def _copies_ms(plan: PaddingPlan, unit: Throughput) -> float:
    launches = sum((plan.copy_a, plan.copy_b, plan.copy_c))
    cycles = plan.bytes_moved / unit.dram_bytes_per_clk
    return cycles / (unit.clock_ghz * 1e6) + launches * unit.launch_us / 1e3


def _with_padded_operands(
    candidate: Candidate, plan: PaddingPlan, shape: Shape, device: DeviceLimits, unit: Throughput
) -> Estimate:
    """A padded candidate (``_pad4``, ``_pad8``): its kernel on rows of whole 16-byte vectors
    (the padded product, ``padded_product``; a family with leading dimensions runs the caller's
    dimensions on wider rows, which the padded product stands for within a vector per row), then
    the copies of its ``plan``."""
    family = get_family(candidate.family)
    run = padded_product(shape)
    kernel = _kernel_estimate(candidate.direct(), family.run_shape(run), device, unit)
    copies = _copies_ms(plan, unit)
    cycles = copies * unit.clock_ghz * 1e6
    return replace(kernel, cycles=kernel.cycles + cycles, ms=kernel.ms + copies)


def _with_operand_rewrite(kernel: Estimate, shape: Shape, run: Shape, unit: Throughput) -> Estimate:
    """``kernel`` after a pass that reads A and B of ``shape`` and writes them as ``run``'s
    operands, at the DRAM's bandwidth, one launch each."""
    read = ELEMENT_BYTES[shape.dtype] * (shape.m * shape.k + shape.k * shape.n)
    written = ELEMENT_BYTES[run.dtype] * (run.m * run.k + run.k * run.n)
    cycles = (read + written) / unit.dram_bytes_per_clk
    ms = cycles / (unit.clock_ghz * 1e6) + 2 * unit.launch_us / 1e3
    return replace(kernel, cycles=kernel.cycles + cycles, ms=kernel.ms + ms)


def _kernel_estimate(
    candidate: Candidate, shape: Shape, device: DeviceLimits, unit: Throughput
) -> Estimate:
    """Estimated time of ``candidate``'s kernel on ``shape``."""
    config = candidate.config
    family = get_family(config.family)
    if family.cost.schedule == "stream":
        return _stream_estimate(candidate, shape, device, unit)
    params = config.as_dict()
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    g = _grid(candidate, shape, device)
    tile_work = TILE_MODELS.get(family.cost.math, _ffma_work)
    work = tile_work(family, params, g.check.threads, unit, device.warp_size, shape)
    tile_cycles = _tile_cycles(work, unit)
    all_k_tiles = -(-shape.k // bk)
    if family.cost.schedule == "persistent":
        return _persistent_estimate(config, shape, device, unit, g.tiles, all_k_tiles, tile_cycles)
    k_tiles = -(-all_k_tiles // g.split)  # k tiles of the longest slice
    full_waves, rest = divmod(g.blocks, device.sm_count * g.r_full)
    cycles = full_waves * k_tiles * tile_cycles(g.r_full)
    if rest:
        r_last = -(-rest // device.sm_count)
        cycles += k_tiles * tile_cycles(r_last)
    if g.split > 1:  # the first slice's hand-off, then the later slices' atomic adds into C
        handoff = 2 * unit.global_latency
        adds = (g.split - 1) * g.tiles * bm * bn / 4 / REDUCTIONS_PER_CLK
        cycles += (full_waves + (1 if rest else 0)) * handoff + adds
    return Estimate.of(cycles, g.blocks, g.r_full, (bm, bn), shape, device, unit)


def _persistent_estimate(
    config: Config,
    shape: Shape,
    device: DeviceLimits,
    unit: Throughput,
    tiles: int,
    k_tiles: int,
    tile_cycles: TileCycles,
) -> Estimate:
    """``streamk``: SMBLOCKS blocks on every SM for the whole launch, each running an equal
    share of all k tiles (to one); the ``tiles % blocks`` stream-K tiles are cut into pieces
    (about ``blocks / stream-K tiles`` each), all but one of which add into C."""
    params = config.as_dict()
    per_sm = params["SMBLOCKS"]
    blocks = persistent_blocks(params, device.sm_count)
    resident = min(per_sm, -(-blocks // device.sm_count))
    cycles = -(-tiles * k_tiles // blocks) * tile_cycles(resident)
    sk_tiles = tiles % blocks
    if sk_tiles:
        pieces = min(-(-blocks // sk_tiles) + 1, k_tiles)
        adds = (pieces - 1) * sk_tiles * params["BM"] * params["BN"] / 4 / REDUCTIONS_PER_CLK
        cycles += 2 * unit.global_latency + adds
    return Estimate.of(cycles, blocks, resident, (params["BM"], params["BN"]), shape, device, unit)


def _stream_estimate(
    candidate: Candidate, shape: Shape, device: DeviceLimits, rates: Throughput
) -> Estimate:
    """``skinny``: no shared-memory tiles; B streams from memory once per block row.

    Time is the largest of: reading every byte once from DRAM (and B again from L2 for each
    further block row; at most the L2 bandwidth of each SM with a block), scaled up when the
    resident lanes keep too few bytes in flight to cover the latency; and issuing the FMAs and
    loads of the padded product; and each lane's chain of chunks (``chain`` below). Split-K
    adds the atomic adds of the later slices into C (one 16-byte reduction per four values) and
    one hand-off latency."""
    p = candidate.config.as_dict()
    bm, bn = p["BM"], p["BN"]
    g = _grid(candidate, shape, device)
    row_blocks, col_blocks = -(-shape.m // bm), -(-shape.n // bn)
    dram = 4 * (shape.k * shape.n + shape.m * shape.k + shape.m * shape.n)
    l2 = 4 * shape.k * shape.n * (row_blocks - 1)
    active_sms = min(device.sm_count, g.blocks)  # each SM pulls at most its L2 bandwidth
    memory = max(
        dram / rates.dram_bytes_per_clk, (dram + l2) / (active_sms * rates.l2_bytes_per_clk)
    )
    resident = min(g.blocks, device.sm_count * g.per_sm)
    in_flight = resident * g.check.threads * p["KU"] * p["TN"] * 4  # bytes requested, chip-wide
    needed = rates.global_latency * rates.dram_bytes_per_clk  # Little's law at full bandwidth
    memory *= max(1.0, needed / max(in_flight, 1))
    # Per block row, k and lane: BM*TN FMAs, TN/4 loads of B, BM loads of A (a quarter as
    # many when chunks of 4 k are read as float4, half as many as float2).
    a_loads = bm / 4 if p["KU"] % 4 == 0 else bm / 2 if p["KU"] == 2 else bm
    per_lane_k = bm * p["TN"] + p["TN"] / 4 + a_loads
    lanes = row_blocks * col_blocks * bn / p["TN"]
    arithmetic = lanes * shape.k * per_lane_k / (device.sm_count * rates.fma_lanes)
    # Each lane runs its chunks one after another: it requests B (and A), waits, then issues the
    # chunk's FMAs and load instructions while its scheduler's other warps take turns. Few warps
    # per scheduler leave the wait exposed; many make the scheduler's issue the bound. (The
    # template requests the next chunk of B before computing the current one; charging the
    # latency and the chunk's issue in sequence still ranked the 55 configs measured on the H200
    # better than overlapping them: Spearman 0.72 against 0.53.)
    waves = -(-g.blocks // (device.sm_count * g.per_sm))
    per_scheduler = resident * (g.check.threads / device.warp_size) / (device.sm_count * SCHEDULERS)
    b_loads = p["KU"] * p["TN"] / 4
    load_issue = SKINNY_LOAD_ISSUE if all(float4_rows(shape)) else SKINNY_CHECKED_LOAD_ISSUE
    chunk = bm * p["KU"] * p["TN"] + load_issue * (a_loads * p["KU"] + b_loads)
    chunks = -(-shape.k // (p["KU"] * p["LK"] * g.split))
    chain = waves * chunks * max(chunk * max(per_scheduler, 1.0), rates.global_latency + chunk)
    reductions = (g.split - 1) * g.tiles * bm * bn / 4 / REDUCTIONS_PER_CLK
    cycles = max(memory, arithmetic, chain) + reductions
    cycles += rates.global_latency if g.split > 1 else 0
    return Estimate.of(cycles, g.blocks, g.r_full, (bm, bn), shape, device, rates)


Ranked = TypeVar("Ranked", Candidate, Config)


def rank(
    subjects: list[Ranked], shape: Shape, device: DeviceLimits, rates: DeviceRates | None = None
) -> list[Ranked]:
    """Candidates (or configs) from the fastest estimate to the slowest (ties by name, so
    deterministic)."""
    return sorted(subjects, key=lambda c: (estimate(c, shape, device, rates).cycles, c.name))
