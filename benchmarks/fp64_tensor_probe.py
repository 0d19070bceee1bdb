"""Can the FP64 tensor cores add to the FP32 FMA rate? A throughput probe.

    python benchmarks/fp64_tensor_probe.py [--out FILE.json]

An FP32 x FP32 product is exact in FP64 (24 + 24 mantissa bits fit in 53), so a GEMM that
widens its FP32 inputs, multiplies on the FP64 tensor cores (DMMA) and sums in FP64 computes
every product exactly and rounds once at the end: at least as accurate as an FP32 SIMT GEMM.
Whether that pays depends on three rates this script measures on the device:

* the FFMA ceiling (independent FP32 FMA chains, as ``ffma_ceiling.py``);
* the DMMA ceiling (independent ``mma.sync.m16n8k16.f64`` accumulators per warp);
* both in one loop: each warp issues one DMMA and then F FP32 FMAs per lane, for several F.
  The FP32 FMAs fill issue slots the DMMA leaves free, so the sum of the two rates shows
  whether the pipes work side by side or share one limit (issue, power, clock);

and, for scale, cuBLAS's DGEMM and SGEMM on some suite shapes in the same process.
Timed with ``tuner.gpu.measure.time_launches`` (CUDA events, warm-up, median).
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
from pathlib import Path

import cupy as cp
from ffma_ceiling import write_result

from tuner.gpu.device import live_device
from tuner.gpu.measure import cublas_gemm, time_launches
from tuner.gpu.worker import device_provenance
from tuner.kernels.resources import DeviceLimits

THREADS = 256
BLOCKS_PER_SM = 4
ITERATIONS = 2048
DMMA_CHAINS = 4
FFMA_CHAINS = 8
WARMUPS, RUNS = 3, 20
FFMA_PER_DMMA = (0, 8, 16, 32, 48, 64, 96, 128)
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 256), (256, 256, 65536), (1000, 1000, 1000))

DMMA = (
    'asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 '
    '{%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"'
    ' : "+d"(c[j][0]), "+d"(c[j][1]), "+d"(c[j][2]), "+d"(c[j][3])'
    ' : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),'
    ' "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));'
)


def source(dmma: bool, ffma_per_dmma: int) -> str:
    """One kernel: per step, DMMA_CHAINS x (one DMMA if ``dmma``, then ``ffma_per_dmma`` FMAs)."""
    dmma_line = DMMA if dmma else ""
    return f"""
extern "C" __global__ void __launch_bounds__({THREADS})
probe(const double* __restrict__ dseed, const float* __restrict__ fseed,
      double* __restrict__ dout, float* __restrict__ fout) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    double a[8], b[4], c[{DMMA_CHAINS}][4];
    #pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = dseed[(t + i) & 1023];
    #pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = dseed[(t + 8 + i) & 1023];
    #pragma unroll
    for (int j = 0; j < {DMMA_CHAINS}; ++j)
        #pragma unroll
        for (int i = 0; i < 4; ++i) c[j][i] = 0.0;
    float x[{FFMA_CHAINS}];
    #pragma unroll
    for (int i = 0; i < {FFMA_CHAINS}; ++i) x[i] = fseed[(t + i) & 1023];
    const float fa = fseed[1024], fb = fseed[1025];
    for (int it = 0; it < {ITERATIONS}; ++it) {{
        #pragma unroll
        for (int j = 0; j < {DMMA_CHAINS}; ++j) {{
            {dmma_line}
            #pragma unroll
            for (int r = 0; r < {ffma_per_dmma}; ++r)
                x[r % {FFMA_CHAINS}] = fmaf(x[r % {FFMA_CHAINS}], fa, fb);
        }}
    }}
    double ds = 0.0;
    #pragma unroll
    for (int j = 0; j < {DMMA_CHAINS}; ++j)
        #pragma unroll
        for (int i = 0; i < 4; ++i) ds += c[j][i];
    float fs = 0.0f;
    #pragma unroll
    for (int i = 0; i < {FFMA_CHAINS}; ++i) fs += x[i];
    dout[t] = ds;
    fout[t] = fs;
}}
"""


def gpu_state() -> str:
    """SM clock and power as nvidia-smi reads them (read only; nothing is set)."""
    try:
        return subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except OSError as error:
        return f"nvidia-smi: {error}"


def probe_row(limits: DeviceLimits, dmma: bool, ffma_per_dmma: int) -> dict[str, object]:
    blocks = limits.sm_count * BLOCKS_PER_SM
    kernel = cp.RawKernel(source(dmma, ffma_per_dmma), "probe")
    rng = cp.random.default_rng(0)
    dseed = rng.uniform(1e-3, 2e-3, 1024, dtype=cp.float64)
    fseed = rng.uniform(0.5, 1.5, 1026, dtype=cp.float32)
    fseed[1024], fseed[1025] = 0.999, 0.001
    dout = cp.empty(blocks * THREADS, dtype=cp.float64)
    fout = cp.empty(blocks * THREADS, dtype=cp.float32)
    timing = time_launches(
        lambda: kernel((blocks,), (THREADS,), (dseed, fseed, dout, fout)),
        budget_ms=0.0,
        warmup=WARMUPS,
        min_repeats=RUNS,
        max_repeats=RUNS,
    )
    if not (bool(cp.isfinite(dout).all()) and bool(cp.isfinite(fout).all())):
        raise RuntimeError("probe produced non-finite values")
    warps = blocks * THREADS // 32
    steps = ITERATIONS * DMMA_CHAINS
    fp64_flops = (2 * 16 * 8 * 16) * warps * steps if dmma else 0
    fp32_flops = 2 * 32 * ffma_per_dmma * warps * steps
    seconds = timing.median_ms * 1e-3
    return {
        "dmma": dmma,
        "ffma_per_dmma": ffma_per_dmma,
        "median_ms": timing.median_ms,
        "fp64_tensor_tflops": fp64_flops / seconds / 1e12,
        "fp32_ffma_tflops": fp32_flops / seconds / 1e12,
        "total_tflops": (fp64_flops + fp32_flops) / seconds / 1e12,
        "gpu_after": gpu_state(),
    }


def gemm_rows() -> list[dict[str, object]]:
    rows = []
    for m, n, k in GEMM_SHAPES:
        row: dict[str, object] = {"shape": f"{m}x{n}x{k}"}
        for dtype in (cp.float32, cp.float64):
            rng = cp.random.default_rng(1)
            a = rng.standard_normal((m, k), dtype=cp.float64).astype(dtype)
            b = rng.standard_normal((k, n), dtype=cp.float64).astype(dtype)
            c = cp.empty((m, n), dtype=dtype)
            if dtype == cp.float32:
                run = lambda a=a, b=b, c=c: cublas_gemm(1.0, a, b, 0.0, c)  # noqa: E731
            else:
                run = lambda a=a, b=b, c=c: cp.matmul(a, b, out=c)  # noqa: E731
            timing = time_launches(run, budget_ms=100.0, warmup=WARMUPS, min_repeats=RUNS)
            name = "sgemm" if dtype == cp.float32 else "dgemm"
            row[f"{name}_ms"] = timing.median_ms
            row[f"{name}_tflops"] = 2 * m * n * k / (timing.median_ms * 1e-3) / 1e12
        rows.append(row)
    return rows


def measure() -> dict[str, object]:
    limits = live_device()
    rows = [probe_row(limits, False, FFMA_CHAINS * 4)]
    rows += [probe_row(limits, True, f) for f in FFMA_PER_DMMA]
    return {
        "what": "FP64 tensor-core (DMMA m16n8k16) and FP32 FMA throughput, alone and together",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": limits.name,
        "provenance": device_provenance(limits),
        "gpu_before": gpu_state(),
        "method": {
            "threads_per_block": THREADS,
            "blocks_per_sm": BLOCKS_PER_SM,
            "iterations": ITERATIONS,
            "dmma_chains_per_warp": DMMA_CHAINS,
            "ffma_chains_per_thread": FFMA_CHAINS,
            "warmups": WARMUPS,
            "runs": RUNS,
            "first row": "FFMA only (32 per lane per step, no DMMA)",
        },
        "probe": rows,
        "cublas": gemm_rows(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = measure()
    write_result(result, args.out)
    for row in result["probe"]:  # type: ignore[union-attr]
        print(
            f"dmma={row['dmma']!s:5} ffma/dmma={row['ffma_per_dmma']:4}  "
            f"fp64 {row['fp64_tensor_tflops']:6.1f}  fp32 {row['fp32_ffma_tflops']:6.1f}  "
            f"total {row['total_tflops']:6.1f} TFLOP/s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
