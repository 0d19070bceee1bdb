"""What writing C in the input type costs or saves (GPU only).

    python benchmarks/half_c.py [--out results.json]

For a few BF16 NT shapes (nn.Linear's layout), one hmma and one wgmma config (wgmma on sm_90
only) are verified and then timed writing float32 C and writing bfloat16 C, each beside cuBLAS
writing the same type of C (``tuner.gpu.measure``: CUDA events, L2 flushed, median; ours and
cuBLAS timed alternately, rounds of each). Prints a table and writes the rows with the device
and versions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.device import live_device
from tuner.gpu.loaded import compiled
from tuner.gpu.measure import Operands, launch, time_launches, verify

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16, 4096, 4096), (4096, 11008, 4096))
CONFIGS = {
    "hmma": "hmma_bm128_bn256_bk32_wpm2_wpn4_s4_sw8_dt1_ly1",
    "wgmma": "wgmma_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly1",
}
ROUNDS = 3


def measure(family: str, base: str, mnk: tuple[int, int, int], out: str) -> dict[str, Any]:
    shape = Shape(*mnk, "bfloat16", "NT", out)
    name = base if out == "float32" else f"{base}_out2"
    kernel, source = compiled(name, ("half_c", family))
    ops = Operands.make(shape, seed=1)
    check = verify(kernel, source, shape, operands=ops)
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(
            time_launches(lambda: launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, ops.out))
        )
        theirs.append(time_launches(lambda: ops.cublas(1.0, 0.0, ops.out)))
    ms = statistics.median(t.median_ms for t in ours)
    cublas_ms = statistics.median(t.median_ms for t in theirs)
    return {
        "family": family,
        "config": name,
        "shape": str(shape),
        "out_dtype": out,
        "ok": check.ok,
        "rel_error": check.rel_error,
        "ms": ms,
        "tflops": shape.tflops(ms),
        "cublas_ms": cublas_ms,
        "cublas_tflops": shape.tflops(cublas_ms),
        "ratio": cublas_ms / ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import cupy

    device = live_device()
    rows = []
    for family, base in CONFIGS.items():
        if family == "wgmma" and device.arch != "sm_90":
            continue
        for mnk in SHAPES:
            for out in ("float32", "bfloat16"):
                rows.append(measure(family, base, mnk, out))
    props = cupy.cuda.runtime.getDeviceProperties(0)
    doc = {
        "what": "BF16 NT: each config writing float32 C and bfloat16 C, beside cuBLAS writing "
        "the same type of C (cublasGemmEx, CUBLAS_COMPUTE_32F)",
        "device": props["name"].decode(),
        "sm_count": props["multiProcessorCount"],
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "cupy": cupy.__version__,
        "method": f"time_launches (CUDA events, L2 flushed, median), {ROUNDS} rounds of ours "
        "then cuBLAS, median of the round medians; beta = 0",
        "rows": rows,
    }
    print(
        f"{'family':6} {'shape':16} {'C':9} {'ms':>8} {'TFLOP/s':>8} {'cuBLAS':>8} {'ratio':>6} ok"
    )
    for r in rows:
        print(
            f"{r['family']:6} {r['shape']:16} {r['out_dtype']:9} {r['ms']:8.4f} "
            f"{r['tflops']:8.1f} {r['cublas_tflops']:8.1f} {r['ratio']:6.3f} {r['ok']}"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
