"""The Hopper ladder: ``tma_ws`` configs verified and timed beside cuBLAS on half shapes (GPU only).

    python benchmarks/hopper_ladder.py --out ladder.json [--shape 4096x4096x4096:NT ...] \
        [--suite tuner/data/suites/shapes.csv --heldout benchmarks/hopper_heldout.csv] \
        [--dtype bfloat16 --dtype float16] [--layout NT --layout NN] [--out-dtype float32] \
        [--config BM=128,BN=256,CONSUMERS=2,STAGES=4,GROUP=8,RASTER=0 ...] [--rounds 3]
    python benchmarks/hopper_ladder.py --dtype float32 --shape 4096x4096x4096:NN \
        --config tma_ws_bf16x3_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_dt1_ly0 ...

Shapes come from ``--shape`` (MxNxK:LAYOUT), from suite CSVs (``--suite``: only their aligned
rows, every dimension a whole 16-byte vector of halves, in each ``--layout``) and from held-out
CSVs (``--heldout``: NT only, flagged ``heldout`` in the rows), each in every ``--dtype``. C is
of the input type unless ``--out-dtype`` says otherwise, as ``gemmtune bench`` defaults.

A config is tma_ws's tile parameters (DTYPE, LAYOUT and OUT come from the shape) or any
family's config by name, pinned for the shape: float32 shapes time the ``bf16x3`` families beside
cuBLAS's strict FP32 SGEMM. Every config is compiled ahead
with NVRTC in a pool of processes, verified as every study verifies (``tuner.gpu.measure.
verify``: alpha/beta with C read, and beta = 0 on NaN-poisoned C, against cuBLAS's FP32 C
rounded once to C's type), then timed in alternating rounds: each round times every config of
the shape, cuBLAS as the tuner measures it (``cublasGemmEx``, FP32 sums, C of the shape's type:
the same product ours computes) and ``torch.matmul`` on the same operands (C of the input type)
when PyTorch is there. Each timing is ``tuner.gpu.measure.time_launches`` (CUDA events, warm-up,
L2 flushed before every repeat, median); a row reports the median over rounds. Prints a table
and writes every row with device, versions and commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape, parse_shape
from tuner.data.shape_lists import read_suite
from tuner.gpu import measure, nvrtc
from tuner.gpu.device import current_arch
from tuner.gpu.tensor_maps import block_slots
from tuner.kernels.compile_pool import CompilePool
from tuner.kernels.families import get_family, parse_config, repinned

FAMILY = "tma_ws"
# A dimension TMA reads in place, in halves: one 16-byte vector.
ALIGNED = 8
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


@dataclass(frozen=True)
class Case:
    """One shape to measure, with where it came from (a suite's class, or held out)."""

    shape: Shape
    label: str | None = None
    heldout: bool = False


def config_for(text: str, shape: Shape) -> Any:
    """A config of ``tma_ws`` from ``NAME=value`` pairs, with BK = 64 and the shape's pins; or
    any family's config by its name (``wgmma_bf16x3_bm128_...``), pinned for the shape."""
    if "=" not in text:
        return repinned(parse_config(text), shape)
    family = get_family(FAMILY)
    params = {"BK": 64, "CM": 1, "CN": 1, "EPI": 0, **family.pinned(shape)}
    for part in text.split(","):
        name, value = part.split("=")
        params[name.strip().upper()] = int(value)
    return family.config(params)


def aligned(shape: Shape) -> bool:
    """Every dimension a whole 16-byte vector of halves: TMA reads the operands in place."""
    return all(x % ALIGNED == 0 for x in (shape.m, shape.n, shape.k))


def cases_from(args: argparse.Namespace) -> list[Case]:
    """The shapes of the command line, in every dtype asked for."""
    cases: list[Case] = []
    for dtype in args.dtype or ["bfloat16"]:
        for text in args.shape or ([] if args.suite or args.heldout else DEFAULT_SHAPES):
            dims, _, layout = text.partition(":")
            cases.append(Case(parse_shape(dims, dtype, layout or "NT", args.out_dtype)))
        for path in args.suite or []:
            for layout in args.layout or ["NT", "NN"]:
                for entry in read_suite(path, dtype, layout, args.out_dtype):
                    if aligned(entry.shape):
                        cases.append(Case(entry.shape, entry.label))
        for path in args.heldout or []:
            for entry in read_suite(path, dtype, "NT", args.out_dtype):
                cases.append(Case(entry.shape, entry.label, heldout=True))
    return cases


def _torch_matmul(shape: Shape, ops: measure.Operands) -> Any:
    """``torch.matmul`` on the operands' BF16 (or FP16) values, writing C of the input type, as
    a closure; None without PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    if shape.dtype == "float32":
        return None  # torch.matmul would take TF32 or FP32 as its settings say: not compared
    kind = torch.bfloat16 if shape.dtype == "bfloat16" else torch.float16
    a = torch.from_dlpack(ops.a).view(kind)
    b = torch.from_dlpack(ops.b).view(kind)
    a = a.T if shape.a_transposed else a
    b = b.T if shape.b_transposed else b
    out = torch.empty((shape.m, shape.n), dtype=kind, device=a.device)
    return lambda: torch.matmul(a, b, out=out)


def measure_case(
    case: Case, configs: list[str], pool: CompilePool, rounds: int, budget_ms: float
) -> list[dict[str, Any]]:
    """One row per config of ``case``: verified, then timed in rounds beside the baselines."""
    shape = case.shape
    ops = measure.Operands.make(shape, seed=7)
    base = {"shape": shape.label(), "class": case.label, "heldout": case.heldout}
    rows, runs = [], {}
    for text in configs:
        config = config_for(text, shape)
        row: dict[str, Any] = base | {"config": config.name}
        rows.append(row)
        family = get_family(config.family)
        broken = family.broken_rules(config)
        if broken:
            row |= {"status": "invalid", "detail": broken[0]}
            continue
        compiled = pool.result(config)
        if isinstance(compiled, Exception):
            row |= {"status": "compile error", "detail": str(compiled)[:300]}
            continue
        kernel = nvrtc.load_kernel(compiled)
        source = compiled.source
        # The grid of the product the kernel computes (an emulated family's split shape).
        run = family.run_shape(shape)
        sms = measure.sm_count()
        slots = block_slots(kernel, source, sms) if source.tensor_maps else sms
        grid = source.launch(run, slots).grid
        blocks = grid[0] * grid[1] * grid[2]
        tiles = -(-run.m // config["BM"]) * -(-run.n // config["BN"])
        row |= {"registers": compiled.usage.registers, "spills": compiled.usage.spills}
        row |= {"blocks": blocks, "tiles": tiles, "tile_rounds": tiles / blocks}
        try:
            check = measure.verify(kernel, source, shape, operands=ops)
        except Exception as exc:  # a launch error is a row, not the end of the ladder
            row |= {"status": "launch error", "detail": str(exc)[:300]}
            continue
        row |= {"rel_error": check.rel_error, "tolerance": check.tolerance}
        if not check.ok:
            row |= {"status": "wrong", "detail": check.reason}
            continue
        runs[config.name] = _launcher(kernel, source, shape, ops)
    c_ref = ops.out.copy()
    runs["cublas"] = lambda: ops.cublas(1.0, 0.0, c_ref)
    torch_run = _torch_matmul(shape, ops)
    if torch_run is not None:
        runs["torch"] = torch_run
    ms = _alternate(runs, rounds, budget_ms)
    for row in rows:
        if row["config"] not in ms:
            continue
        ours = ms[row["config"]]
        row |= {"status": "ok", "ours_ms": ours, "ours_tflops": shape.tflops(ours)}
        for name in ("cublas", "torch"):
            if name in ms:
                row[f"{name}_ms"] = ms[name]
                row[f"{name}_tflops"] = shape.tflops(ms[name])
                row[f"vs_{name}"] = ms[name] / ours
    return rows


def _launcher(kernel: Any, source: Any, shape: Shape, ops: Any) -> Any:
    def run() -> None:
        measure.launch(kernel, source, shape, 1.0, ops.a, ops.b, 0.0, ops.out)

    return run


def _alternate(runs: dict[str, Any], rounds: int, budget_ms: float) -> dict[str, float]:
    """Median milliseconds of each run over ``rounds`` rounds, each round timing every run one
    after another (so drifts of clock or temperature fall on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            times[name].append(measure.time_launches(run, budget_ms=budget_ms).median_ms)
    return {name: statistics.median(v) for name, v in times.items()}


def provenance() -> dict[str, Any]:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    info: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": props["name"].decode(),
        "sm_count": props["multiProcessorCount"],
        "cupy": cupy.__version__,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
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
    parser.add_argument("--shape", action="append", help="MxNxK:LAYOUT")
    parser.add_argument("--suite", action="append", type=Path, help="shape CSV (aligned rows)")
    parser.add_argument("--heldout", action="append", type=Path, help="held-out CSV (NT)")
    parser.add_argument("--layout", action="append", help="layouts of the suite rows")
    parser.add_argument("--dtype", action="append", help="bfloat16 (default), float16")
    parser.add_argument("--out-dtype", help="C's type (default: the input type)")
    parser.add_argument("--config", action="append", help="tile parameters NAME=value,...")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget-ms", type=float, default=100.0, help="per timing")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--commit", help="the commit measured (the GPU copy has no git history)")
    args = parser.parse_args()
    cases = cases_from(args)
    configs = args.config or list(DEFAULT_CONFIGS)
    info = provenance() | {"rounds": args.rounds, "budget_ms": args.budget_ms}
    if args.commit:
        info["commit"] = args.commit
    pool = CompilePool(nvrtc.NvrtcCompiler(current_arch()))
    pool.warm()
    for case in cases:  # every kernel compiles ahead while the first shapes are measured
        for text in configs:
            config = config_for(text, case.shape)
            if not get_family(config.family).broken_rules(config):
                pool.submit(config)
    rows: list[dict[str, Any]] = []
    for case in cases:
        rows.extend(measure_case(case, configs, pool, args.rounds, args.budget_ms))
        for row in rows[-len(configs) :]:
            _print_row(row)
        if args.out:  # rewritten after every shape: a run cut short keeps what it measured
            args.out.write_text(json.dumps({"provenance": info, "rows": rows}, indent=1) + "\n")
    pool.close()


def _print_row(row: dict[str, Any]) -> None:
    where = f"{row['shape']}{' (held out)' if row['heldout'] else ''}"
    if row["status"] != "ok":
        print(f"{where:<40} {row['config']:<58} {row['status']}: {row.get('detail')}")
        return
    torch_part = (
        f" torch {row['torch_tflops']:6.1f} x{row['vs_torch']:.3f}" if "vs_torch" in row else ""
    )
    print(
        f"{where:<40} {row['config']:<58} {row['blocks']:4d} blocks "
        f"{row['ours_tflops']:6.1f} TFLOP/s  "
        f"cuBLAS {row['cublas_tflops']:6.1f} x{row['vs_cublas']:.3f}{torch_part}",
        flush=True,
    )


if __name__ == "__main__":
    main()
