"""Where a GEMM sits on the roofline: the best rate its arithmetic intensity allows.

A shape needs ``2MNK`` flops and must move at least its operands through HBM once. The benchmark
runs with ``beta = 0``, so C is only written, never read: the minimum traffic is
``e(MK + KN) + c MN`` bytes, ``e`` the bytes of one input and ``c`` of one element of C (4 for
float32, 2 for float16 and bfloat16). The bound is ``min(compute ceiling, intensity x
bandwidth)``; the compute ceiling is the FFMA rate for float32 inputs and the dense FP16/BF16
tensor-core rate for half inputs. A shape whose intensity is under the ridge point (ceiling /
bandwidth) is memory-bound.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from tuner.core.shape import HALF_DTYPES, Shape

FLOAT_BYTES = 4
INPUT_BYTES = {"float32": FLOAT_BYTES, **{dtype: 2 for dtype in HALF_DTYPES}}
BYTES_MODEL = (
    "4(MK + KN + MN) bytes: A and B read once, C written once (beta = 0, so C is not read)"
)
HALF_BYTES_MODEL = (
    "2(MK + KN) + cMN bytes: half A and B read once, C written once (c = 4 for a float32 C, 2 "
    "for a half C; beta = 0, so C is not read)"
)


@dataclass(frozen=True)
class Ceilings:
    """The two roofs of a device, with where each number comes from."""

    ffma_tflops: float
    ffma_source: str
    bandwidth_tb_s: float  # 1 TB = 1e12 bytes
    bandwidth_source: str
    half_tflops: float | None = None  # dense FP16/BF16 tensor cores, FP32 sums; None: unknown
    half_source: str = ""

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (flop/byte) where the two roofs meet."""
        return self.ffma_tflops / self.bandwidth_tb_s

    def with_bandwidth(self, tb_s: float, source: str) -> Ceilings:
        if not tb_s > 0:
            raise ValueError(f"bandwidth must be > 0 TB/s, got {tb_s}")
        return replace(self, bandwidth_tb_s=tb_s, bandwidth_source=source)

    def compute_tflops(self, dtype: str) -> float | None:
        """The compute roof for inputs of ``dtype``: FFMA for float32, the half-precision tensor
        cores for float16 and bfloat16 (None where this device's figure is not known)."""
        return self.half_tflops if dtype in HALF_DTYPES else self.ffma_tflops

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "ridge_flop_per_byte": self.ridge,
            "bytes_model": BYTES_MODEL,
            "half_bytes_model": HALF_BYTES_MODEL,
        }


H100_SXM = Ceilings(
    ffma_tflops=63.7,
    ffma_source="measured on the lent H100 (a pure-FMA kernel, 8 independent chains per "
    "thread; datasheet 66.9): shared/bench/README.md",
    bandwidth_tb_s=3.35,
    bandwidth_source="NVIDIA H100 SXM5 80GB HBM3 datasheet",
    half_tflops=989.5,
    half_source="NVIDIA H100 SXM5 datasheet, dense FP16/BF16 tensor-core rate (half the 1979 "
    "quoted with sparsity); not measured here",
)
H200 = Ceilings(
    ffma_tflops=63.2,
    ffma_source="measured on the lent H200 (benchmarks/ffma_ceiling.py: 8 independent FMA chains "
    "per thread, median of 20 launches; datasheet 67): benchmarks/results/h200-ffma.json",
    bandwidth_tb_s=4.8,
    bandwidth_source="NVIDIA H200 SXM 141GB HBM3e datasheet",
    half_tflops=989.5,
    half_source="NVIDIA H200 SXM datasheet, dense FP16/BF16 tensor-core rate (half the 1979 "
    "quoted with sparsity); not measured here",
)

# Device name as CUDA reports it -> its roofs; other devices get no roofline rather than a guess.
KNOWN_CEILINGS: dict[str, Ceilings] = {"NVIDIA H100 80GB HBM3": H100_SXM, "NVIDIA H200": H200}


def ceilings_for(device_name: str) -> Ceilings | None:
    return KNOWN_CEILINGS.get(device_name)


@dataclass(frozen=True)
class Roofline:
    """One shape against the roofs of one device."""

    flops: int
    min_bytes: int
    intensity: float  # flop/byte
    bound_tflops: float
    limit: str  # "compute" or "memory"

    def percent(self, tflops: float | None) -> float | None:
        """An achieved rate as % of the bound."""
        return None if tflops is None else 100.0 * tflops / self.bound_tflops

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_bytes(shape: Shape) -> int:
    """HBM traffic no kernel can avoid with beta = 0 (see the module docstring)."""
    m, n, k = shape.m, shape.n, shape.k
    return INPUT_BYTES[shape.dtype] * (m * k + k * n) + INPUT_BYTES[shape.out] * m * n


def roofline(shape: Shape, ceilings: Ceilings) -> Roofline:
    """The shape's bound on this device (check :meth:`Ceilings.compute_tflops` first: a dtype
    whose compute roof is not known has none, rather than a guessed one)."""
    compute = ceilings.compute_tflops(shape.dtype)
    if compute is None:
        raise ValueError(f"no compute roof for {shape.dtype} inputs on this device")
    flops, traffic = shape.flops, min_bytes(shape)
    intensity = flops / traffic
    memory_tflops = intensity * ceilings.bandwidth_tb_s  # flop/B x 1e12 B/s = TFLOP/s
    if memory_tflops < compute:
        return Roofline(flops, traffic, intensity, memory_tflops, "memory")
    return Roofline(flops, traffic, intensity, compute, "compute")
