"""How fast the lent GPU can read a skinny GEMM's operands at all: the floor under decode shapes.

    python benchmarks/stream_floor.py --out FILE [--shape 16x4096x4096 ...] [--dtype bfloat16]

A skinny product (few rows M, large N and K) must read its large operand, N x K halves, once;
the roofline's memory bound assumes the HBM's peak for that. This probe times, with the
tuner's own method (``tuner.gpu.measure.time_launches``: CUDA events, L2 flushed before each
repeat, median), three things per shape on the same GPU in alternating rounds: an empty kernel
(what a launch after a flush costs), a plain read of as many bytes as the operands hold (16-byte
loads, several grid sizes, the fastest kept), and the default vendor call
(``cublasGemmEx``, C of the input type). Where the read is much faster than the vendor call,
a kernel that streams the operand as the read does has room to beat the vendor on that shape.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape, parse_shape
from tuner.gpu.measure import random_operands, shape_gemm, sm_count, time_launches

READ_SOURCE = r"""
extern "C" __global__ void read_all(const uint4* __restrict__ src, long long n, unsigned* sink) {
    unsigned acc = 0;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll 4
    for (; i < n; i += stride) {
        uint4 v = __ldcs(src + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; never true on random data
}
extern "C" __global__ void empty() {}
"""


def shape_row(shape: Shape, rounds: int, kernels: tuple[Any, Any], sms: int) -> dict[str, Any]:
    """The empty kernel, the reads and the vendor call on ``shape``, in ``rounds`` rounds."""
    import cupy as cp

    read_all, empty = kernels
    a, b, c = random_operands(shape, seed=0)
    total = a.nbytes + b.nbytes + c.nbytes
    source = cp.random.default_rng(1).integers(0, 2**31, size=total // 4, dtype=cp.int32)
    vectors = cp.int64(total // 16)
    sink = cp.zeros(1, dtype=cp.uint32)
    runs: dict[str, Callable[[], None]] = {"empty": lambda: empty((sms,), (32,), ())}
    for g in (1, 2, 4, 8):
        for t in (256, 512):
            runs[f"read_{g}x{t}"] = partial(read_all, (sms * g,), (t,), (source, vectors, sink))
    runs["vendor"] = partial(shape_gemm, shape, 1.0, a, b, 0.0, c)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            times[name].append(time_launches(run).median_ms)
    medians = {k: statistics.median(v) for k, v in times.items()}
    best_read = min((k for k in medians if k.startswith("read_")), key=medians.__getitem__)
    return {
        "shape": f"{shape.m}x{shape.n}x{shape.k}",
        "dtype": shape.dtype,
        "layout": shape.layout,
        "bytes": total,
        "ms": {k: round(v, 5) for k, v in medians.items()},
        "best_read": best_read,
        "best_read_tb_s": round(total / medians[best_read] / 1e9, 3),
        "vendor_tflops": round(shape.flops / medians["vendor"] / 1e9, 2),
        "vendor_over_read": round(medians["vendor"] / medians[best_read], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shape", action="append", default=None)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--layout", default="NT")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", default=None, help="the gemmtune commit measured")
    args = parser.parse_args()

    import cupy as cp

    module = cp.RawModule(code=READ_SOURCE, options=("-std=c++17",))
    kernels = module.get_function("read_all"), module.get_function("empty")
    sms = sm_count()
    rows: list[dict[str, Any]] = []
    for text in args.shape or ["16x4096x4096", "128x4096x4096"]:
        row = shape_row(parse_shape(text, args.dtype, args.layout), args.rounds, kernels, sms)
        rows.append(row)
        print(json.dumps(row), flush=True)
    document = {
        "what": "the read floor under skinny shapes: an empty kernel, a plain read of the "
        "operands' bytes and the default vendor call, timed alike in alternating rounds",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "code": args.code,
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "sms": sms,
        "cupy": cp.__version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "rows": rows,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
