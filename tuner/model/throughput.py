"""The model's view of an SM: per-clock rates of its pipes, and the figures the model is built on.

An architecture's structure (lanes, bandwidths, latencies) is published; a device's clock, FP64
tensor rate, DRAM bandwidth and launch time come from its probed or tabled rates
(:class:`tuner.model.rates.DeviceRates`). Each figure says where it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tuner.kernels.resources import DeviceLimits
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

# tma_ws with SPLIT > 1: what the meeting of a tile's pieces costs the launch beyond its
# reductions, in SM clocks, plus one slot of the tile's float32 sums read at one SM's L2 rate (the
# last piece's read). Fitted on the H200 ladder rows of the four aligned suite shapes with fewer
# tiles than SMs (the smallest term whose picks there were best among 0-24000 clocks; the
# held-out rows of the same files were only scored, not fitted:
# benchmarks/results/h200-tma-ws-split-2026-11-29b.json, notebook).
SPLIT_MEET_CYCLES = 10000

# tma_ws: clocks from a TMA copy's issue to its bytes in shared memory while every SM streams from
# device memory (queues included), far above an idle load's ``global_latency``. A ring of STAGES
# keeps STAGES - 1 copies ahead, so a k tile cannot come faster than this over STAGES - 1: deeper
# rings stream faster where few rows make the launch a read of B. Chosen among 0-6000 on the H200
# ladder rows of 2026-11-29 (configs at STAGES 4-12; picks per shape 0.952 -> 0.971 of the
# measured best, pairs ordered right 1174 -> 1241 of 1465) and the earlier ladder files (picks
# 0.989 -> 0.986, pairs 3743 -> 3839 of 4266; 4000 did better on the new rows, worse on these).
# Scored afterwards, not chosen on: held-out decode rows, picks 0.948 -> 0.980
# (benchmarks/results/cpu-ladder-model-stream-latency-*-2026-11-29.json, notebook).
TMA_STREAM_LATENCY = 3000

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
