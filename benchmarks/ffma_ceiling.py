"""The FP32 FMA ceiling of the GPU: a kernel of nothing but independent fused multiply-adds.

    python benchmarks/ffma_ceiling.py [--out FILE.json]

Each thread runs CHAINS independent FMA chains (enough to cover the pipeline's latency) for
ITERATIONS steps on values read from memory, and writes their sum, so nothing is folded away.
Timed like every kernel of the tuner (``tuner.gpu.measure.time_launches``: CUDA events, WARMUPS
launches, then the median of RUNS). Prints TFLOP/s and writes
them with the device, clocks and versions: the roofline's compute roof (``tuner.model.roofline``)
for a GPU the project has not measured before. The same method as the H100 figure in
shared/bench/README.md (8 independent chains per thread).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import cupy as cp

from tuner.gpu.device import live_device
from tuner.gpu.measure import time_launches
from tuner.gpu.worker import device_provenance

CHAINS = 8
ITERATIONS = 4096
THREADS = 256
BLOCKS_PER_SM = 8
WARMUPS, RUNS = 3, 20

SOURCE = f"""
extern "C" __global__ void __launch_bounds__({THREADS})
ffma_chains(const float* __restrict__ seed, float* __restrict__ out) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x[{CHAINS}];
    #pragma unroll
    for (int c = 0; c < {CHAINS}; ++c) x[c] = seed[(t + c) & 1023];
    const float a = seed[1024], b = seed[1025];
    for (int i = 0; i < {ITERATIONS}; ++i) {{
        #pragma unroll
        for (int c = 0; c < {CHAINS}; ++c) x[c] = fmaf(x[c], a, b);
    }}
    float s = 0.0f;
    #pragma unroll
    for (int c = 0; c < {CHAINS}; ++c) s += x[c];
    out[t] = s;
}}
"""


def measure() -> dict[str, object]:
    device = cp.cuda.Device()
    limits = live_device()
    blocks = limits.sm_count * BLOCKS_PER_SM
    kernel = cp.RawKernel(SOURCE, "ffma_chains")
    # Values that stay finite and away from zero: x -> 0.999 x + 0.001 keeps |x| bounded.
    seed = cp.random.default_rng(0).uniform(0.5, 1.5, 1026, dtype=cp.float32)
    seed[1024], seed[1025] = 0.999, 0.001
    out = cp.empty(blocks * THREADS, dtype=cp.float32)
    timing = time_launches(
        lambda: kernel((blocks,), (THREADS,), (seed, out)),
        budget_ms=0.0,
        warmup=WARMUPS,
        min_repeats=RUNS,
        max_repeats=RUNS,
    )
    if not bool(cp.isfinite(out).all()):
        raise RuntimeError("the FMA chains produced non-finite values")
    flops = 2 * CHAINS * ITERATIONS * blocks * THREADS
    return {
        "what": "FP32 FMA ceiling: independent FMA chains, CUDA events, median of runs",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": limits.name,
        "provenance": device_provenance(limits),
        "sm_clock_mhz_max": device.attributes["ClockRate"] // 1000,
        "method": {
            "chains_per_thread": CHAINS,
            "iterations": ITERATIONS,
            "threads_per_block": THREADS,
            "blocks": blocks,
            "warmups": WARMUPS,
            "runs": RUNS,
        },
        "median_ms": timing.median_ms,
        "min_ms": timing.min_ms,
        "tflops": flops / (timing.median_ms * 1e9),
        "tflops_best_run": flops / (timing.min_ms * 1e9),
    }


def write_result(result: dict[str, object], out: Path | None) -> None:
    """``result`` as indented JSON on stdout and, with ``out``, in that file."""
    text = json.dumps(result, indent=1) + "\n"
    if out:
        out.write_text(text)
    sys.stdout.write(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    write_result(measure(), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
