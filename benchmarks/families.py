"""Time representative configs of every family against cuBLAS on one shape (needs a GPU).

    python benchmarks/families.py --shape 4096x4096x4096 --out benchmarks/results/families.json

Writes device, date and versions with the numbers. Each kernel is verified before it is timed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
from pathlib import Path

from tuner import __version__
from tuner.core.shape import parse_shape
from tuner.gpu.device import live_device
from tuner.gpu.measure import cublas_gemm, launch, random_operands, time_launches, verify
from tuner.gpu.nvrtc import NvrtcCompiler, load_kernel
from tuner.kernels.compile import compile_many
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import ALL_REPRESENTATIVE


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import cupy as cp

    shape, dev = parse_shape(args.shape), live_device()
    compiler = NvrtcCompiler(dev.arch)
    sources = [render(parse_config(n)) for n in ALL_REPRESENTATIVE]
    compiled = compile_many(compiler, sources)
    a, b, c = random_operands(shape, seed=0)
    base = time_launches(lambda: cublas_gemm(1.0, a, b, 0.0, c))
    rows = []
    for source, result in zip(sources, compiled, strict=True):
        row: dict[str, object] = {"config": source.entry}
        if isinstance(result, Exception):
            row.update(status="compile_failed", reason=str(result))
        else:
            kernel = load_kernel(result)
            check = verify(kernel, source, shape, seed=1)
            row.update(
                rel_error=check.rel_error,
                registers=result.usage.registers,
                occupancy=result.occupancy(dev).occupancy,
            )
            if not check.ok:
                row.update(status="wrong_result")
            else:
                t = time_launches(lambda k=kernel, s=source: launch(k, s, shape, 1.0, a, b, 0.0, c))
                row.update(
                    status="ok",
                    ms=t.median_ms,
                    tflops=shape.tflops(t.median_ms),
                    ratio_to_cublas=base.median_ms / t.median_ms,
                    repeats=t.repeats,
                )
        rows.append(row)
        print(json.dumps(row), flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    doc = {
        "shape": str(shape),
        "device": {
            "name": dev.name,
            "arch": dev.arch,
            "sm_count": dev.sm_count,
            "clock_khz": props.get("clockRate"),
        },
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "versions": {
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
            "driver": cp.cuda.runtime.driverGetVersion(),
            "compiler": compiler.version,
            "cupy": cp.__version__,
            "python": platform.python_version(),
            "gemmtune": __version__,
        },
        "cublas": {"ms": base.median_ms, "tflops": shape.tflops(base.median_ms)},
        "kernels": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"cuBLAS {doc['cublas']['tflops']:.1f} TFLOP/s")
    for r in rows:
        print(
            f"{r['config']:60s} {r.get('status')} {r.get('tflops', 0):6.1f} TFLOP/s "
            f"x{r.get('ratio_to_cublas', 0):.2f} regs {r.get('registers')}"
        )


if __name__ == "__main__":
    main()
