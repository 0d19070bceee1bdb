"""Verify and time hand-picked configs beside cuBLAS on one or more shapes (GPU only), outside
any study.

    python benchmarks/try_configs.py --shape 256x256x65536 [--shape ...] --out try.json \
        [--dtype float32] [--layout NN] [--out-dtype float32] \
        splitk_bm128_bn128_bk16_wm64_wn32_wni1_tm8_tn4_t256_s3_sk32 ...

For trying configs a family's parameter values do not list yet (a config only has to satisfy
its family's rules): each is compiled with NVRTC, verified against cuBLAS (strict FP32, or the
shapes' half dtype with FP32 sums) and
timed beside it in alternating rounds in the GPU worker process, as ``gemmtune bench`` does.
Prints one line per config and writes the replies, with provenance, as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
from pathlib import Path

from tuner.core.config import Config
from tuner.core.result import Comparison
from tuner.core.shape import Shape, parse_shape
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.families import get_family, parse_config


def _compare(
    gpu: GpuEvaluator, configs: list[Config], shape: Shape, rounds: int
) -> list[Comparison]:
    """Every valid config of ``configs`` in one set of alternating rounds with cuBLAS; an
    invalid one comes back with the first rule it breaks."""
    broken = {c.name: get_family(c.family).broken_rules(c) for c in configs}
    valid = [c for c in configs if not broken[c.name]]
    replies = {r.config_name: r for r in gpu.compare(valid, shape, rounds)} if valid else {}
    return [
        replies.get(c.name) or Comparison(c.name, "invalid", broken[c.name][0]) for c in configs
    ]


def _row(shape: Shape, reply: Comparison) -> dict[str, object]:
    row: dict[str, object] = {"shape": shape.label(), **dataclasses.asdict(reply)}
    if reply.ms is not None and reply.ratio is not None:
        row |= {"ms": reply.ms, "tflops": shape.tflops(reply.ms), "cublas_ms": reply.cublas_ms}
        row["ratio"] = reply.ratio
        print(
            f"{shape.label()} {reply.config_name}: {row['tflops']:.1f} TFLOP/s, "
            f"x{reply.ratio:.2f} cuBLAS"
        )
    else:
        print(f"{shape.label()} {reply.config_name}: {reply.status}: {reply.reason}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", required=True, action="append", help="repeat for more")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dtype", default="float32", help="of every shape")
    parser.add_argument("--layout", default="NN", help="of every shape")
    parser.add_argument(
        "--out-dtype", default=None, help="type of C of every shape (default: the input type)"
    )
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()

    shapes = [parse_shape(text, args.dtype, args.layout, args.out_dtype) for text in args.shape]
    configs = [parse_config(name) for name in args.configs]
    gpu = GpuEvaluator(budget_ms=args.budget_ms)
    rows: list[dict[str, object]] = []
    try:
        for config in configs:
            gpu.prepare(config)  # compiled on every core at once
        for shape in shapes:
            rows += [_row(shape, reply) for reply in _compare(gpu, configs, shape, args.rounds)]
    finally:
        gpu.close()
    doc = {
        "what": f"hand-picked configs on {', '.join(s.label() for s in shapes)}, beside cuBLAS",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": gpu.provenance,
        "rounds": args.rounds,
        "budget_ms": args.budget_ms,
        "rows": rows,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
