"""Launch configs and cuBLAS on one shape a few times each, for a profiler to read (GPU only).

    ncu --section SpeedOfLight --section Occupancy --section WarpStateStats \
        python benchmarks/profile_launch.py --shape 256x256x65536 --config NAME [--config ...] \
        [--dtype bfloat16 --layout NT --out-dtype bfloat16]

Each config is compiled with NVRTC, checked against cuBLAS (strict FP32), then launched
``--launches`` times on random operands (alpha = 1, beta = 0); cuBLAS runs on the same operands
in between, so one profile holds both kernels side by side. Half inputs (``--dtype``) are checked
against, and alternate with, ``cublasGemmEx`` writing the same C with FP32 sums.
"""

from __future__ import annotations

import argparse

from tuner.core.shape import parse_shape
from tuner.gpu.loaded import compiled
from tuner.gpu.measure import launch, random_operands, shape_gemm, verify


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", required=True)
    parser.add_argument("--config", action="append", required=True)
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--layout", default="NN")
    parser.add_argument("--out-dtype", default=None, help="C's type (default: the input type)")
    args = parser.parse_args()

    import cupy as cp

    shape = parse_shape(args.shape, args.dtype, args.layout, args.out_dtype)
    a, b, c = random_operands(shape, seed=0)
    for name in args.config:
        kernel, source = compiled(name)
        check = verify(kernel, source, shape)
        print(f"{name} on {shape}: relative error {check.rel_error:.2e} (ok={check.ok})")
        for _ in range(args.launches):
            launch(kernel, source, shape, 1.0, a, b, 0.0, c)
            shape_gemm(shape, 1.0, a, b, 0.0, c)
    cp.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    main()
