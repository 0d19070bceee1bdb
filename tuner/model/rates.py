"""How fast a device is at what GEMM kernels do: the inputs of the cost model.

Measured once per device by quick probes (``tuner.gpu.probes``: FP32 FMA rate, FP64 tensor-core
rate, DRAM bandwidth, launch overhead) and stored with the device; where nothing was measured, an
architecture's figures from this table (datasheet-class numbers per SM and clock, scaled by the
device's SM count), and where the architecture is unknown, nothing: the model then ranks by its
structure alone and the study leans on its own measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.kernels.resources import DeviceLimits

# A device's FP64 tensor cores are worth searching when they reach at least this share of its
# FP32 FMA rate: the FP64-tensor-core families do one FP64 tensor-core operation per FP32 one an
# FFMA kernel does, so below half the FFMA rate they cannot come near an FFMA kernel.
FAST_FP64_TENSOR_SHARE = 0.5


@dataclass(frozen=True)
class DeviceRates:
    """Whole-device throughputs, and where they come from."""

    ffma_tflops: float  # FP32 fused multiply-adds, 2 flops each
    fp64_tensor_tflops: float  # FP64 tensor-core mma (DMMA), 2 flops per multiply-add
    dram_tb_s: float  # device memory, 1 TB = 1e12 bytes
    launch_us: float  # one kernel launch, back to back
    source: str  # "probed on <device> at <time>" or "table for <arch>"


@dataclass(frozen=True)
class ArchFigures:
    """Per-SM figures of an architecture at its boost clock (not measured by this project)."""

    clock_ghz: float
    ffma_per_clk: int  # FP32 FMA lanes per SM
    dmma_per_clk: float  # FP64 multiply-adds per SM and clock on the tensor cores (or FP64 units)
    dram_tb_s_per_sm: float  # datasheet bandwidth / SM count of the reference part
    # FP16/BF16 multiply-adds with FP32 sums per SM and clock on the tensor cores (dense)
    hmma_per_clk: float = 512.0

    def tflops(self, per_clk: float, sm_count: int) -> float:
        """Whole-device rate of a unit doing ``per_clk`` multiply-adds per SM and clock."""
        return per_clk * sm_count * self.clock_ghz * 1e9 * 2 / 1e12

    @property
    def fp64_tensor_share(self) -> float:
        """FP64 tensor-core throughput as a share of FP32 FMA throughput."""
        return self.dmma_per_clk / self.ffma_per_clk


# Datasheet figures (dense): A100 SXM (108 SMs, 1.41 GHz, FP64 tensor 19.5 TFLOP/s = FP32 FMA,
# 2.0 TB/s); GA10x sm_86 (RTX A6000: 84 SMs; FP64, DMMA included, at 1/64 of FP32); AD10x sm_89
# (L40S: 142 SMs, 0.86 TB/s, FP64 at 1/64); H100 SXM (132 SMs, 1.98 GHz, FP64 tensor 66.9
# TFLOP/s = FP32 FMA, 3.35 TB/s; the lent H100 measured 63.7 FFMA); GB20x sm_120 (RTX 5090:
# 170 SMs, 1.79 TB/s, FP64 at 1/64). FP16/BF16 tensor cores with FP32 sums, dense: A100 312
# TFLOP/s (1024 a clock per SM), H100 SXM 989 TFLOP/s at 1.83 GHz (2048), RTX A6000 155 and L40S
# 362 (512), RTX 5090 210 (256).
ARCH_FIGURES: dict[str, ArchFigures] = {
    "sm_80": ArchFigures(1.41, 64, 64.0, 2.0 / 108, hmma_per_clk=1024.0),
    "sm_86": ArchFigures(1.80, 128, 2.0, 0.77 / 84),
    "sm_89": ArchFigures(2.52, 128, 2.0, 0.86 / 142),
    "sm_90": ArchFigures(1.98, 128, 128.0, 3.35 / 132, hmma_per_clk=2048.0),
    "sm_120": ArchFigures(2.41, 128, 2.0, 1.79 / 170, hmma_per_clk=256.0),
}
TABLE_LAUNCH_US = 3.0


def table_rates(device: DeviceLimits) -> DeviceRates | None:
    """Rates of ``device`` from its architecture's figures; None for an unknown architecture."""
    figures = ARCH_FIGURES.get(device.arch)
    if figures is None:
        return None
    return DeviceRates(
        ffma_tflops=figures.tflops(figures.ffma_per_clk, device.sm_count),
        fp64_tensor_tflops=figures.tflops(figures.dmma_per_clk, device.sm_count),
        dram_tb_s=figures.dram_tb_s_per_sm * device.sm_count,
        launch_us=TABLE_LAUNCH_US,
        source=f"table for {device.arch} (datasheet figures, {device.sm_count} SMs)",
    )
