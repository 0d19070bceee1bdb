"""Quick probes of a device's rates, run once per device and stored with it.

* FP32 FMA rate: independent FMA chains per thread (``FFMA_SOURCE``), as the roofline's
  measured compute roof (``benchmarks/ffma_ceiling.py`` runs the same kernel);
* FP64 tensor-core rate: independent ``mma.sync.m16n8k16`` accumulators of doubles per warp
  (the instruction family of ``dmma`` and ``dmma_pipelined``, which needs sm_90);
* DRAM bandwidth: a device-to-device copy of ``COPY_BYTES`` (read and written once);
* launch overhead: back-to-back launches of an empty kernel.

Each takes well under a second. Runs in the GPU worker process (``tuner.gpu.requests``). The
kernels compile straight to cubins (``tuner.gpu.plain_kernels``) and the seeds are drawn on the
host: nothing here compiles with CuPy's headers, which on an empty CuPy cache cost the probe
7.2 s on the lent H200 (``h200-start-parts-2026-11-29-7940d2f.json``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from tuner.gpu.plain_kernels import code_kernel
from tuner.model.rates import DeviceRates

THREADS = 256
FFMA_CHAINS = 8
FFMA_ITERATIONS = 4096
FFMA_BLOCKS_PER_SM = 8
DMMA_CHAINS = 4
DMMA_ITERATIONS = 2048
DMMA_BLOCKS_PER_SM = 4
COPY_BYTES = 1 << 29
EMPTY_LAUNCHES = 200
RUNS = 10

FFMA_SOURCE = f"""
extern "C" __global__ void __launch_bounds__({THREADS})
ffma_chains(const float* __restrict__ seed, float* __restrict__ out) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x[{FFMA_CHAINS}];
    #pragma unroll
    for (int c = 0; c < {FFMA_CHAINS}; ++c) x[c] = seed[(t + c) & 1023];
    const float a = seed[1024], b = seed[1025];
    for (int i = 0; i < {FFMA_ITERATIONS}; ++i) {{
        #pragma unroll
        for (int c = 0; c < {FFMA_CHAINS}; ++c) x[c] = fmaf(x[c], a, b);
    }}
    float s = 0.0f;
    #pragma unroll
    for (int c = 0; c < {FFMA_CHAINS}; ++c) s += x[c];
    out[t] = s;
}}
"""

DMMA_SOURCE = f"""
extern "C" __global__ void __launch_bounds__({THREADS})
dmma_chains(const double* __restrict__ seed, double* __restrict__ out) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    double a[8], b[4], c[{DMMA_CHAINS}][4];
    #pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = seed[(t + i) & 1023];
    #pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = seed[(t + 8 + i) & 1023];
    #pragma unroll
    for (int j = 0; j < {DMMA_CHAINS}; ++j)
        #pragma unroll
        for (int i = 0; i < 4; ++i) c[j][i] = 0.0;
    for (int it = 0; it < {DMMA_ITERATIONS}; ++it) {{
        #pragma unroll
        for (int j = 0; j < {DMMA_CHAINS}; ++j)
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {{%0,%1,%2,%3}}, "
                "{{%4,%5,%6,%7,%8,%9,%10,%11}}, {{%12,%13,%14,%15}}, {{%0,%1,%2,%3}};"
                : "+d"(c[j][0]), "+d"(c[j][1]), "+d"(c[j][2]), "+d"(c[j][3])
                : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
                  "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    }}
    double s = 0.0;
    #pragma unroll
    for (int j = 0; j < {DMMA_CHAINS}; ++j)
        #pragma unroll
        for (int i = 0; i < 4; ++i) s += c[j][i];
    out[t] = s;
}}
"""

EMPTY_SOURCE = 'extern "C" __global__ void empty() {}'


def _seed(low: float, high: float, count: int, dtype: Any) -> Any:
    """Uniform values drawn on the host: CuPy's generator would compile kernels with its
    headers on first use, a second or more of a first command's start on an empty cache."""
    return np.random.default_rng(0).uniform(low, high, count).astype(dtype)


def _median_ms(run: Any, runs: int = RUNS) -> float:
    from tuner.gpu.measure import time_launches

    return time_launches(run, budget_ms=0.0, warmup=2, min_repeats=runs, max_repeats=runs).median_ms


def ffma_tflops(sm_count: int) -> float:
    """FP32 FMA rate of the current device: independent chains, all SMs busy."""
    import cupy as cp

    blocks = sm_count * FFMA_BLOCKS_PER_SM
    kernel = code_kernel(FFMA_SOURCE, "ffma_chains")
    # x -> 0.999 x + 0.001 keeps every value finite and away from zero.
    values = _seed(0.5, 1.5, 1026, np.float32)
    values[1024], values[1025] = 0.999, 0.001
    seed = cp.asarray(values)
    out = cp.empty(blocks * THREADS, dtype=cp.float32)
    ms = _median_ms(lambda: kernel((blocks,), (THREADS,), (seed, out)))
    if not np.isfinite(out.get()).all():
        raise RuntimeError("the FMA chains produced non-finite values")
    return 2 * FFMA_CHAINS * FFMA_ITERATIONS * blocks * THREADS / (ms * 1e9)


def fp64_tensor_tflops(sm_count: int) -> float:
    """FP64 tensor-core rate of the current device (m16n8k16 mma chains per warp)."""
    import cupy as cp

    blocks = sm_count * DMMA_BLOCKS_PER_SM
    kernel = code_kernel(DMMA_SOURCE, "dmma_chains")
    seed = cp.asarray(_seed(1e-3, 2e-3, 1024, np.float64))
    out = cp.empty(blocks * THREADS, dtype=cp.float64)
    ms = _median_ms(lambda: kernel((blocks,), (THREADS,), (seed, out)))
    warps = blocks * THREADS // 32
    return 2 * 16 * 8 * 16 * DMMA_CHAINS * DMMA_ITERATIONS * warps / (ms * 1e9)


def dram_tb_s() -> float:
    """Device-memory bandwidth: a copy of ``COPY_BYTES`` reads and writes each byte once."""
    import cupy as cp

    src = cp.empty(COPY_BYTES // 4, dtype=cp.float32)
    src.data.memset_async(0x3F, src.nbytes)  # any values: a copy moves bytes
    dst = cp.empty_like(src)
    ms = _median_ms(lambda: cp.copyto(dst, src))
    return 2 * COPY_BYTES / (ms * 1e9)


def launch_us() -> float:
    """Time per launch of an empty kernel, launched back to back."""
    kernel = code_kernel(EMPTY_SOURCE, "empty")

    def launches() -> None:
        for _ in range(EMPTY_LAUNCHES):
            kernel((1,), (1,), ())

    return _median_ms(launches, runs=5) * 1e3 / EMPTY_LAUNCHES


def probe_rates() -> DeviceRates:
    """Every probe on the current device. The FP64 tensor-core rate is 0 where the device has
    no ``mma.sync.m16n8k16.f64`` (before sm_90): no FP64-tensor-core family runs there."""
    import cupy as cp

    device = cp.cuda.Device()
    sm_count = int(device.attributes["MultiProcessorCount"])
    major = int(device.compute_capability[:-1])
    name = cp.cuda.runtime.getDeviceProperties(device.id)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return DeviceRates(
        ffma_tflops=ffma_tflops(sm_count),
        fp64_tensor_tflops=fp64_tensor_tflops(sm_count) if major >= 9 else 0.0,
        dram_tb_s=dram_tb_s(),
        launch_us=launch_us(),
        source=f"probed on {name} at {when}",
    )
