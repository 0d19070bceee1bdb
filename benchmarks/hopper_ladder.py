"""The Hopper ladder: ``tma_ws`` configs verified and timed beside cuBLAS on BF16 shapes (GPU only).

    python benchmarks/hopper_ladder.py --out ladder.json [--shape 4096x4096x4096:NT ...] \
        [--config BM=128,BN=256,CONSUMERS=2,STAGES=4,GROUP=8,RASTER=0 ...] [--rounds 5]

Each config (its tile parameters; DTYPE, LAYOUT and OUT come from the shape) is compiled with
NVRTC, verified against cuBLAS in the same dtype as every study verifies (``tuner.gpu.measure.
verify``: alpha/beta with C read, and beta = 0 on NaN-poisoned C), then timed in alternating
rounds with two baselines in the same process: cuBLAS as the tuner measures it (``cublasGemmEx``,
BF16 inputs, FP32 sums, float32 C: the same product ours computes) and ``torch.matmul`` on the
same BF16 operands (BF16 C) when PyTorch is there. A config with OUT=1 or 2 (a 16-bit C, as
torch writes) is checked against torch.matmul's C instead (``--config ...,OUT=2``). Each round
is ``tuner.gpu.measure.time_launches`` (CUDA events, warm-up, L2 flushed before every repeat,
median); a row reports the median over rounds. Prints a table and writes every row with
device, versions and commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape, parse_shape
from tuner.gpu import measure, nvrtc
from tuner.gpu.device import current_arch
from tuner.gpu.tensor_maps import block_slots
from tuner.kernels.families import get_family
from tuner.kernels.render import render

FAMILY = "tma_ws"
# Relative error allowed between two BF16 Cs rounded from FP32 sums of the same products (each
# within half a BF16 unit roundoff, 2^-9, of its sums).
HALF_C_TOLERANCE = 8e-3
DEFAULT_SHAPES = (
    "4096x4096x4096:NT",
    "4096x4096x4096:NN",
    "8192x8192x8192:NT",
    "8192x8192x8192:NN",
    "4096x14336x4096:NT",
    "4096x4096x14336:NT",
)
DEFAULT_CONFIGS = (
    "BM=128,BN=128,CONSUMERS=1,STAGES=5,GROUP=8,RASTER=0",
    "BM=128,BN=256,CONSUMERS=2,STAGES=4,GROUP=8,RASTER=0",
    "BM=256,BN=128,CONSUMERS=2,STAGES=4,GROUP=8,RASTER=0",
    "BM=128,BN=256,CONSUMERS=2,STAGES=4,GROUP=16,RASTER=1",
)


def config_for(text: str, shape: Shape) -> Any:
    """A config of ``tma_ws`` from ``NAME=value`` pairs, with BK = 64 and the shape's pins."""
    family = get_family(FAMILY)
    params = {"BK": 64, "CM": 1, "CN": 1, "EPI": 0, **family.pinned(shape)}
    for part in text.split(","):
        name, value = part.split("=")
        params[name.strip().upper()] = int(value)
    return family.config(params)


def _torch_matmul(shape: Shape, ops: measure.Operands) -> tuple[Any, Any] | None:
    """``torch.matmul`` on the operands' BF16 (or FP16) values as a closure, and its C (of the
    input type) as a CuPy array; None without PyTorch."""
    try:
        import cupy
        import torch
    except ImportError:
        return None
    kind = torch.bfloat16 if shape.dtype == "bfloat16" else torch.float16
    a = torch.from_dlpack(ops.a).view(kind)
    b = torch.from_dlpack(ops.b).view(kind)
    a = a.T if shape.a_transposed else a
    b = b.T if shape.b_transposed else b
    out = torch.empty((shape.m, shape.n), dtype=kind, device=a.device)
    return (lambda: torch.matmul(a, b, out=out)), cupy.from_dlpack(out.view(torch.int16))


def _check_half_c(kernel: Any, source: Any, shape: Shape, ops: Any, torch_c: Any) -> float:
    """A config with a 16-bit C (OUT 1 or 2): relative error of its C against torch.matmul's
    (both rounded to the input type from FP32 sums), C poisoned with NaN first."""
    import cupy

    from tuner.gpu import half_arrays

    c = cupy.full((shape.m, shape.n), 0x7FC0, dtype=cupy.uint16)
    measure.launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, c.view(torch_c.dtype))
    cupy.cuda.get_current_stream().synchronize()
    ours = half_arrays.to_float32(c, shape.dtype)
    theirs = half_arrays.to_float32(torch_c.view(cupy.uint16), shape.dtype)
    return measure.relative_error(ours, theirs)


def measure_shape(shape: Shape, configs: list[str], rounds: int) -> list[dict[str, Any]]:
    import cupy

    ops = measure.Operands.make(shape, seed=7)
    torch_pair = _torch_matmul(shape, ops)
    torch_run = torch_pair[0] if torch_pair else None
    rows = []
    for text in configs:
        config = config_for(text, shape)
        row: dict[str, Any] = {"shape": shape.label(), "config": config.name}
        broken = get_family(FAMILY).broken_rules(config)
        if broken:
            rows.append(row | {"status": "invalid", "detail": broken[0]})
            continue
        try:
            compiled = nvrtc.NvrtcCompiler(current_arch()).compile(render(config))
        except Exception as exc:  # a compile error is a row, not the end of the ladder
            rows.append(row | {"status": "compile error", "detail": str(exc)[:300]})
            continue
        kernel = nvrtc.load_kernel(compiled)
        source = compiled.source
        usage = compiled.usage
        row |= {"registers": usage.registers, "spills": usage.spills}
        row["blocks"] = source.launch(shape, block_slots(kernel, source, measure.sm_count())).grid[
            0
        ]
        out = ops.out
        if config["OUT"] != 0:  # a 16-bit C: checked against torch.matmul's, which writes one
            if torch_pair is None:
                rows.append(row | {"status": "skipped", "detail": "a 16-bit C needs PyTorch"})
                continue
            torch_run()
            error = _check_half_c(kernel, source, shape, ops, torch_pair[1])
            row |= {"rel_error_vs_torch": error}
            if not error <= HALF_C_TOLERANCE:
                rows.append(row | {"status": "wrong", "detail": f"{error:.2e} against torch"})
                continue
            out = cupy.empty((shape.m, shape.n), dtype=cupy.uint16)
        else:
            try:
                check = measure.verify(kernel, source, shape, operands=ops)
            except Exception as exc:
                rows.append(row | {"status": "launch error", "detail": str(exc)[:300]})
                continue
            row |= {"rel_error": check.rel_error, "tolerance": check.tolerance}
            if not check.ok:
                rows.append(row | {"status": "wrong", "detail": check.reason})
                continue

        ms = _alternate(kernel, source, shape, ops, out, torch_run, rounds)
        row |= {"status": "ok", **{f"{k}_ms": v for k, v in ms.items()}}
        row |= {f"{k}_tflops": shape.tflops(v) for k, v in ms.items()}
        row["vs_cublas"] = ms["cublas"] / ms["ours"]
        if "torch" in ms:
            row["vs_torch"] = ms["torch"] / ms["ours"]
        rows.append(row)
    return rows


def _alternate(
    kernel: Any, source: Any, shape: Shape, ops: Any, out: Any, torch_run: Any, rounds: int
) -> dict[str, float]:
    """Median milliseconds of ours, cuBLAS and torch.matmul (where there) over ``rounds``
    rounds, each timing the three one after another."""
    import cupy

    def ours() -> None:
        measure.launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, out)

    c_ref = cupy.empty_like(ops.out)

    def cublas() -> None:
        ops.cublas(1.0, 0.0, c_ref)

    times: dict[str, list[float]] = {"ours": [], "cublas": [], "torch": []}
    for _ in range(rounds):
        times["ours"].append(measure.time_launches(ours).median_ms)
        times["cublas"].append(measure.time_launches(cublas).median_ms)
        if torch_run is not None:
            times["torch"].append(measure.time_launches(torch_run).median_ms)
    return {k: statistics.median(v) for k, v in times.items() if v}


def provenance() -> dict[str, Any]:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    info: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": props["name"].decode(),
        "sm_count": props["multiProcessorCount"],
        "cupy": cupy.__version__,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "python": platform.python_version(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    try:
        info["commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = None
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="MxNxK:LAYOUT (BF16)")
    parser.add_argument("--config", action="append", help="tile parameters NAME=value,...")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--commit", help="the commit measured (the GPU copy has no git history)")
    args = parser.parse_args()
    shapes = []
    for text in args.shape or DEFAULT_SHAPES:
        dims, _, layout = text.partition(":")
        shapes.append(parse_shape(dims, dtype=args.dtype, layout=layout or "NT"))
    configs = args.config or list(DEFAULT_CONFIGS)
    info = provenance()
    if args.commit:
        info["commit"] = args.commit
    rows: list[dict[str, Any]] = []
    for shape in shapes:
        rows.extend(measure_shape(shape, configs, args.rounds))
        for row in rows[-len(configs) :]:
            _print_row(row)
    if args.out:
        args.out.write_text(json.dumps({"provenance": info, "rows": rows}, indent=1) + "\n")


def _print_row(row: dict[str, Any]) -> None:
    if row["status"] != "ok":
        print(f"{row['shape']:<28} {row['config']:<58} {row['status']}: {row.get('detail')}")
        return
    torch_part = (
        f" torch {row['torch_tflops']:6.1f} x{row['vs_torch']:.3f}" if "vs_torch" in row else ""
    )
    print(
        f"{row['shape']:<28} {row['config']:<58} {row['blocks']:4d} blocks "
        f"{row['ours_tflops']:6.1f} TFLOP/s  "
        f"cuBLAS {row['cublas_tflops']:6.1f} x{row['vs_cublas']:.3f}{torch_part}",
        flush=True,
    )


if __name__ == "__main__":
    main()
