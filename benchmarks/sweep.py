"""Exhaustive sweep: every candidate of some families on some shapes, measured on the GPU.

    python benchmarks/sweep.py --family warptile --family pipelined \
        --shape 4096x4096x4096 --shape 1024x1024x1024 --out $OUT/sweep.jsonl [--max-minutes 8]

Writes JSON lines: a header with device, date and versions, then one line per candidate (every
status, failures with their reason). The replay evaluator (``tuner.replay``) reads this file.
Compiles all candidates of a (family, shape) in parallel first, then measures them one by one in
the isolated GPU worker.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.compile import compile_many
from tuner.gpu_worker import GpuEvaluator
from tuner.render import render
from tuner.shape import parse_shape
from tuner.space import Space

KEEP = (
    "config_name",
    "family",
    "status",
    "reason",
    "ms",
    "cublas_ms",
    "rel_error",
    "registers",
    "smem_bytes",
    "occupancy",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", action="append", required=True)
    parser.add_argument("--shape", action="append", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-ms", type=float, default=30.0, help="timed kernel ms per config")
    parser.add_argument("--max-minutes", type=float, default=8.0)
    parser.add_argument("--stride", type=int, default=1, help="measure every n-th candidate")
    args = parser.parse_args()

    deadline = time.monotonic() + args.max_minutes * 60
    evaluator = GpuEvaluator(budget_ms=args.budget_ms)
    with args.out.open("w") as out:
        header = {
            "kind": "header",
            "device": evaluator.device.name,
            "arch": evaluator.device.arch,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "budget_ms": args.budget_ms,
            "provenance": evaluator.provenance,
        }
        out.write(json.dumps(header) + "\n")
        for shape_text in args.shape:
            shape = parse_shape(shape_text)
            for family in args.family:
                configs = Space(family, shape, evaluator.device).candidates()[:: args.stride]
                t0 = time.monotonic()
                compiled = compile_many(evaluator.compiler, [render(c) for c in configs])
                print(
                    f"{family} {shape}: {len(configs)} compiled in {time.monotonic() - t0:.0f} s",
                    flush=True,
                )
                best = None
                for i, (config, kernel) in enumerate(zip(configs, compiled, strict=True)):
                    if time.monotonic() > deadline:
                        print("time limit reached", flush=True)
                        evaluator.close()
                        return
                    r = evaluator.evaluate(config, shape, compiled=kernel)
                    row = {k: getattr(r, k) for k in KEEP}
                    row.update(kind="result", shape=str(shape))
                    out.write(json.dumps(row) + "\n")
                    if r.ms is not None and (best is None or r.ms < best.ms):
                        best = r
                    if i % 100 == 0:
                        out.flush()
                        tf = f"{best.tflops:.1f}" if best and best.tflops else "-"
                        print(f"  {i}/{len(configs)} best {tf} TFLOP/s", flush=True)
                if best is not None:
                    print(
                        f"  best {best.config_name}: {best.tflops:.1f} TFLOP/s, "
                        f"x{best.ratio:.2f} cuBLAS",
                        flush=True,
                    )
    evaluator.close()


if __name__ == "__main__":
    main()
