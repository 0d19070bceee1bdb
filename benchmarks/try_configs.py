"""Verify and time hand-picked configs beside cuBLAS on one shape (GPU only), outside any study.

    python benchmarks/try_configs.py --shape 256x256x65536 --out try.json \
        splitk_bm128_bn128_bk16_wm64_wn32_wni1_tm8_tn4_t256_s3_sk32 ...

For trying configs a family's parameter values do not list yet (a config only has to satisfy
its family's rules): each is compiled with NVRTC, verified against cuBLAS (strict FP32) and
timed beside it in alternating rounds in the GPU worker process, as ``gemmtune bench`` does.
Prints one line per config and writes the replies, with provenance, as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.families import get_family, parse_config
from tuner.gpu_worker import GpuEvaluator
from tuner.measure import tflops
from tuner.shape import parse_shape


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()

    shape = parse_shape(args.shape)
    gpu = GpuEvaluator(budget_ms=args.budget_ms)
    rows = []
    try:
        for name in args.configs:
            config = parse_config(name)
            broken = get_family(config.family).broken_rules(config)
            if broken:
                rows.append({"config": name, "status": "invalid", "reason": broken[0]})
            else:
                reply = gpu.compare(config, shape, args.rounds)
                row = {"config": name, **reply}
                if reply["status"] == "ok":
                    ms = statistics.median(reply["ms_rounds"])
                    cublas_ms = statistics.median(reply["cublas_ms_rounds"])
                    row |= {
                        "ms": ms,
                        "tflops": tflops(shape, ms),
                        "cublas_ms": cublas_ms,
                        "ratio": cublas_ms / ms,
                    }
                rows.append(row)
            last = rows[-1]
            if "ratio" in last:
                print(f"{name}: {last['tflops']:.1f} TFLOP/s, x{last['ratio']:.2f} cuBLAS")
            else:
                print(f"{name}: {last['status']}: {last.get('reason')}")
    finally:
        gpu.close()
    doc = {
        "what": f"hand-picked configs on {shape}, beside cuBLAS",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": gpu.provenance,
        "rounds": args.rounds,
        "budget_ms": args.budget_ms,
        "rows": rows,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
