"""Where a measuring process's first seconds go on a host with no cache (issue 44, item 1).

Runs, in this one fresh process, what the GPU worker runs before a study's first candidate can
be measured (``tuner.gpu.requests.warm_up``, then ``tuner.gpu.probes.probe_rates``), step by
step, each timed twice: first on empty caches (CuPy's, NVRTC's and the tuner's, all in a
temporary folder), then again in the same process, so the difference is what the first use
compiled or set up. Also times NVRTC on small kernels without CuPy's headers, one after another
and from several threads at once, which says whether a process can compile its own few kernels
side by side.

    python benchmarks/start_parts.py --out start-parts.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BEGUN = time.perf_counter()


def timed(parts: list[dict[str, Any]], name: str, step: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = step()
    parts.append(
        {"step": name, "s": round(time.perf_counter() - start, 4), "at_s": round(start - BEGUN, 3)}
    )
    return value


def small_source(index: int) -> str:
    """A kernel as small as the probes' and as free of headers, distinct per index (so no cache
    answers it)."""
    return (
        f'extern "C" __global__ void scale_{index}(float* x, int n) {{\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  if (i < n) x[i] = x[i] * {index + 2}.0f + 1.0f;\n"
        "}\n"
    )


def nvrtc_compile(code: str, arch: str) -> float:
    """Seconds NVRTC takes to build ``code`` into a cubin (``tuner.gpu.nvrtc.nvrtc_cubin``, the
    plain kernels' compile, without their cache)."""
    from tuner.gpu.nvrtc import nvrtc_cubin

    start = time.perf_counter()
    nvrtc_cubin(code, "k.cu", (f"-arch={arch}", "--std=c++17"))
    return time.perf_counter() - start


def one_round(parts: list[dict[str, Any]], rounds: str, sms: int) -> None:
    """The warm-up's steps, then the probes (``tuner.gpu.requests.warm_up``, ``probe_rates``),
    then a half shape's operands, each timed."""
    from tuner.core.shape import Shape
    from tuner.gpu import half_arrays, measure, probes

    shape, half = Shape(64, 64, 64), Shape(64, 64, 64, "bfloat16", "NT")
    timed(parts, f"{rounds}: random_values", lambda: measure.random_values(shape, 1))
    ops = timed(parts, f"{rounds}: Operands.make", lambda: measure.Operands.make(shape, 1))
    timed(
        parts,
        f"{rounds}: relative_error",
        lambda: measure.relative_error(ops.references[0], ops.references[1]),
    )
    timed(parts, f"{rounds}: nan_filled", lambda: half_arrays.nan_filled(64, 64, "float32"))
    timed(
        parts,
        f"{rounds}: time_launches(cublas)",
        lambda: measure.time_launches(lambda: ops.cublas(1.0, 0.0, ops.out), 1.0, 1, 1, 1),
    )
    timed(parts, f"{rounds}: probe ffma", lambda: probes.ffma_tflops(sms))
    timed(parts, f"{rounds}: probe fp64 tensor", lambda: probes.fp64_tensor_tflops(sms))
    timed(parts, f"{rounds}: probe dram", probes.dram_tb_s)
    timed(parts, f"{rounds}: probe launch", probes.launch_us)
    timed(parts, f"{rounds}: Operands.make bf16 NT", lambda: measure.Operands.make(half, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=6)
    args = parser.parse_args(argv)
    caches = Path(tempfile.mkdtemp(prefix="start-parts-"))
    os.environ["GEMMTUNE_CACHE_DIR"] = str(caches / "cache")
    os.environ["CUPY_CACHE_DIR"] = str(caches / "cupy")
    os.environ["CUDA_CACHE_PATH"] = str(caches / "nvrtc")

    parts: list[dict[str, Any]] = []
    cp = timed(parts, "import cupy", lambda: __import__("cupy"))
    timed(parts, "context", lambda: (cp.cuda.Device(0).use(), cp.zeros(1, dtype=cp.uint8)))

    from tuner.gpu import probes
    from tuner.gpu.device import live_device

    device = timed(parts, "live_device", lambda: live_device(0))
    arch = f"sm_{device.arch.removeprefix('sm_')}"
    # The probes' own kernels through NVRTC alone (to a cubin, no CuPy): what their compiles
    # cost apart from CuPy's compile-and-load path, which the probe steps below take.
    for name, code in (("ffma", probes.FFMA_SOURCE), ("dmma", probes.DMMA_SOURCE)):
        label = f"nvrtc alone: {name} source"
        timed(parts, label, lambda code=code: nvrtc_compile(code + "\n", arch))
    for rounds in ("first", "again"):
        one_round(parts, rounds, device.sm_count)

    serial = [round(nvrtc_compile(small_source(i), arch), 4) for i in range(args.threads)]
    with ThreadPoolExecutor(args.threads) as pool:
        start = time.perf_counter()
        threaded = list(
            pool.map(lambda i: nvrtc_compile(small_source(100 + i), arch), range(args.threads))
        )
        threaded_wall = time.perf_counter() - start

    document = {
        "what": "the GPU worker's first steps on empty caches, each timed twice in one process",
        "date": time.strftime("%Y-%m-%d"),
        "device": device.name,
        "arch": device.arch,
        "python": platform.python_version(),
        "cupy": cp.__version__,
        "argv": sys.argv,
        "parts": parts,
        "small_nvrtc_serial_s": serial,
        "small_nvrtc_threads": args.threads,
        "small_nvrtc_threaded_each_s": [round(t, 4) for t in threaded],
        "small_nvrtc_threaded_wall_s": round(threaded_wall, 4),
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    for part in parts:
        print(f"{part['at_s']:8.2f}  {part['s']:7.3f}  {part['step']}")
    print("small kernels serial", serial, "threaded wall", round(threaded_wall, 3), threaded)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
