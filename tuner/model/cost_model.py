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
  math below are four sets of figures (:class:`TileWork`) for one skeleton (``tile_cycles``):
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
  the k tiles, plus the hand-off and atomic adds of its stream-K tiles; a persistent grid of
  whole tiles (``tma_ws``) lasts as long as its busiest block's tiles, whose tiles arrive by TMA
  (``"half_tma"``: no copy instructions, no burst, a shared operand read from L2 half by each
  block of a cluster);
* a streaming family (``skinny``) has a model of its own, ``_stream_estimate``;
* the vendor library (``cublaslt``, ``"library"``) is taken to run at the chip's peak: the
  larger of the FLOPs at its fastest unit for the input type (FFMA for float32, the half tensor
  cores otherwise) and the least traffic at DRAM bandwidth (``_library_estimate``). Its
  measurement, not this figure, decides; the figure only places it early among the candidates
  a model-ranked search tries.

Cycles become milliseconds at the clock the rates imply (the FFMA rate over the FMA lanes),
plus one launch. The model does not see ``doublebuf``'s one barrier less per k tile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

from tuner.core.config import Config
from tuner.core.shape import ELEMENT_BYTES, Shape
from tuner.kernels.candidate import Candidate, build_candidate
from tuner.kernels.families import SPLITK_MAX_TILES, get_family, persistent_blocks
from tuner.kernels.families.tma_ws import split_pieces, tiles_blocks
from tuner.kernels.operand_padding import PaddingPlan, padded_product, plan_padding
from tuner.kernels.resources import DeviceLimits, ResourceCheck, occupancy
from tuner.model.rates import DeviceRates
from tuner.model.roofline import min_bytes
from tuner.model.throughput import (
    REDUCTIONS_PER_CLK,
    SCHEDULERS,
    SKINNY_CHECKED_LOAD_ISSUE,
    SKINNY_LOAD_ISSUE,
    SPLIT_MEET_CYCLES,
    Throughput,
    throughput,
)
from tuner.model.tile_work import (
    TILE_MODELS,
    TileCycles,
    ffma_work,
    float4_rows,
    k_tile_cycles,
)


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
    if family.cost.math == "library":
        return _library_estimate(shape, device, unit)
    if family.cost.schedule == "stream":
        return _stream_estimate(candidate, shape, device, unit)
    params = config.as_dict()
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    g = _grid(candidate, shape, device)
    tile_work = TILE_MODELS.get(family.cost.math, ffma_work)
    work = tile_work(family, params, g.check.threads, unit, device.warp_size, shape)
    tile_cycles = k_tile_cycles(work, unit)
    all_k_tiles = -(-shape.k // bk)
    if family.cost.schedule == "persistent":
        return _persistent_estimate(config, shape, device, unit, g.tiles, all_k_tiles, tile_cycles)
    if family.cost.schedule == "tiles":
        return _tiles_estimate(config, shape, device, unit, g.tiles, all_k_tiles, tile_cycles)
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


def _library_estimate(shape: Shape, device: DeviceLimits, unit: Throughput) -> Estimate:
    """A vendor library's kernel on ``shape`` at the chip's peak: its multiply-adds at the
    fastest unit for the input type, or its least DRAM traffic, whichever takes longer."""
    if shape.dtype == "float32":
        per_clk = float(unit.fma_lanes)
    else:
        per_clk = unit.wgmma_per_clk or unit.hmma_per_clk
    math = shape.m * shape.n * shape.k / (per_clk * device.sm_count)
    memory = min_bytes(shape) / unit.dram_bytes_per_clk
    cycles = max(math, memory)
    return Estimate(
        cycles=cycles,
        ms=cycles / (unit.clock_ghz * 1e6) + unit.launch_us / 1e3,
        blocks=device.sm_count,
        blocks_per_sm=1,
        waves=1.0,
        wave_efficiency=1.0,
        edge_efficiency=1.0,
    )


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


def _tiles_estimate(
    config: Config,
    shape: Shape,
    device: DeviceLimits,
    unit: Throughput,
    tiles: int,
    k_tiles: int,
    tile_cycles: TileCycles,
) -> Estimate:
    """``tma_ws``: one block per SM (at most one per tile, in whole clusters) walking whole
    output tiles, so the launch lasts as long as the block with the most tiles: ``ceil(tiles /
    blocks)`` tiles of every k tile, one block per SM. The tile a block writes while the next
    one's loads are in flight costs nothing extra here. TAIL 1 (the stream-K tail) is counted
    as the same rounds plus one hand-off (two global latencies) where a tile is cut: its even
    share of the last round's k tiles could be up to a round shorter, but on the H100 it ran
    slower for 13 of 16 configs and shapes, at 0.36-1.05x of whole tiles
    (benchmarks/results/h100-hopper-tail-2026-11-28.json; not yet explained: blocks at
    different k offsets of different tiles may share no operand tile in L2), so the model
    ranks it below whole tiles. SPLIT > 1 walks tiles x SPLIT pieces of ``1/SPLIT`` of the k
    tiles in as many rounds as the grid needs, plus the meeting: one hand-off, the SPLIT-2 middle
    pieces' 16-byte reductions (the first piece stores), the last piece's read of the slot at one
    SM's L2 rate, and ``SPLIT_MEET_CYCLES``, fitted on measured splits."""
    params = config.as_dict()
    blocks = tiles_blocks(params, shape, device.sm_count)
    units = split_pieces(params, shape) if params.get("SPLIT", 1) > 1 else tiles
    parts = units // max(tiles, 1)
    rounds = -(-units // min(blocks, max(units, 1)))
    cycles = rounds * -(-k_tiles // parts) * tile_cycles(1)
    if params.get("TAIL", 0) and tiles % blocks:
        cycles += 2 * unit.global_latency
    if parts > 1:
        slot = params["BM"] * params["BN"] * 4  # the tile's float32 sums
        adds = (parts - 2) * tiles * slot / 16 / REDUCTIONS_PER_CLK  # the middle pieces'
        cycles += 2 * unit.global_latency + adds + SPLIT_MEET_CYCLES + slot / unit.l2_bytes_per_clk
    return Estimate.of(cycles, blocks, 1, (params["BM"], params["BN"]), shape, device, unit)


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
