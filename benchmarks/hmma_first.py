"""A first look at ``hmma`` beside cuBLAS (GPU only): a few configs per shape, dtype and layout,
ranked by the cost model, each verified and timed in alternating rounds with cuBLAS in the same
dtype (``cublasGemmEx``, FP32 sums, float32 C, as our kernel writes) in the GPU worker process,
as ``gemmtune bench`` compares. Not a tuning study: the configs are the model's top picks and
the rule's default, so the figures are a floor for what a study finds.

    python benchmarks/hmma_first.py --out benchmarks/results/h100-hmma-first.json

Writes one JSON document: device, date, provenance (driver, CUDA, NVRTC, CuPy versions), the
method, and one row per (shape, dtype, layout) with every config's times and the best ratio.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from tuner.answers.default_rule import default_config
from tuner.core.config import Config
from tuner.core.shape import Shape, parse_shape
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate

SHAPES = ("4096x4096x4096", "4097x4097x4097", "1537x2999x1001")
KINDS = (("bfloat16", "NN"), ("bfloat16", "NT"), ("float16", "NN"), ("float16", "NT"))


def picks(gpu: GpuEvaluator, shape: Shape, count: int) -> list[Config]:
    """The cost model's ``count`` fastest hmma configs for the shape, and the default."""
    configs = Space("hmma", shape, gpu.device).candidates()
    ranked = sorted(configs, key=lambda c: estimate(c, shape, gpu.device).ms)
    chosen = [
        default_config(shape.m, shape.n, shape.dtype, shape.layout, out_dtype=shape.out),
        *ranked,
    ]
    return list(dict.fromkeys(chosen))[: count + 1]


def measure(gpu: GpuEvaluator, shape: Shape, count: int, rounds: int) -> dict[str, Any]:
    configs = picks(gpu, shape, count)
    replies = gpu.compare(configs, shape, rounds)
    rows = []
    for config, reply in zip(configs, replies, strict=True):
        row: dict[str, Any] = {"config": config.name, "status": reply.status}
        row["reason"], row["rel_error"] = reply.reason, reply.rel_error
        if reply.ms is not None and reply.cublas_ms is not None:
            row |= {
                "ms": reply.ms,
                "tflops": shape.tflops(reply.ms),
                "cublas_ms": reply.cublas_ms,
                "cublas_tflops": shape.tflops(reply.cublas_ms),
                "ratio": reply.cublas_ms / reply.ms,
                "rounds": {"ms": reply.ms_rounds, "cublas_ms": reply.cublas_ms_rounds},
            }
        rows.append(row)
        print(shape.label(), row["config"], row["status"], row.get("tflops"), row.get("ratio"))
    timed = [r for r in rows if r.get("ratio")]
    best = max(timed, key=lambda r: r["ratio"]) if timed else None
    return {
        "m": shape.m,
        "n": shape.n,
        "k": shape.k,
        "dtype": shape.dtype,
        "layout": shape.layout,
        "best": best,
        "configs": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=6, help="model picks per shape")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget-ms", type=float, default=40.0)
    parser.add_argument("--shape", action="append", help="MxNxK (repeatable)")
    args = parser.parse_args()

    gpu = GpuEvaluator(budget_ms=args.budget_ms)
    rows = []
    try:
        for text in args.shape or SHAPES:
            for dtype, layout in KINDS:
                # float32 C: what this first look measured, before C had a type.
                shape = parse_shape(text, dtype, layout, "float32")
                rows.append(measure(gpu, shape, args.count, args.rounds))
                write(args, gpu, rows)
    finally:
        gpu.close()


def write(args: argparse.Namespace, gpu: GpuEvaluator, rows: list[dict[str, Any]]) -> None:
    document = {
        "what": "hmma (mma.sync m16n8k16, FP32 sums, float32 C) beside cuBLAS in the same "
        "dtype (cublasGemmEx, CUBLAS_COMPUTE_32F, float32 C); ratio = cuBLAS time / ours",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": gpu.device.name,
        "provenance": gpu.provenance,
        "method": {
            "configs": f"the default and the cost model's {args.count} fastest hmma configs",
            "rounds": args.rounds,
            "timing_budget_ms": args.budget_ms,
            "timing": "verified against cuBLAS (same dtype) and FP32 first; then ours and "
            "cuBLAS alternately, each round the median of repeated launches (CUDA events, "
            "L2 flushed), alpha 1, beta 0; reported: the median of the rounds",
        },
        "shapes": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
