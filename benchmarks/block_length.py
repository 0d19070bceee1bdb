"""Does the length of a timed block change which config looks faster? (GPU only.)

A study's finalists are timed in 30 ms blocks (``tuner.search.finalists.FINAL_BUDGET_MS``),
``gemmtune bench`` in 100 ms blocks. On the H200 every aligned half shape whose stored best was a
``tma_ws`` config re-measured 1-3 % slower than the default cuBLAS call in the bench, where the
study's finalists had put it ahead. This script times the same configs beside cuBLAS in blocks of
each length in turn (one alternating round per request, the lengths interleaved, so that drift
over the run falls on all of them alike) and records the GPU's SM clock, power and temperature
after each request.

    python benchmarks/block_length.py --case 4096x4096x4096:bfloat16:NN:CONFIG[,CONFIG...] \
        [--budgets 30,100,300] [--cycles 4] --commit HASH --out block.json

Each case's configs are timed with the default call (``cublas``) added; the ratio reported is
cuBLAS's time over the config's in the same request.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape
from tuner.kernels.families import parse_config

GPU_STATE = "clocks.sm,power.draw,temperature.gpu"


def gpu_state() -> dict[str, str]:
    """The SM clock (MHz), power (W) and temperature (C) nvidia-smi reads now; empty without it."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={GPU_STATE}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(GPU_STATE.split(","), (v.strip() for v in out.split(",")), strict=False))


def parse_case(text: str) -> tuple[Shape, list[str]]:
    """``MxNxK:dtype:layout:CONFIG[,CONFIG...]``: the shape (C in the input type) and configs."""
    dims, dtype, layout, names = text.split(":", 3)
    m, n, k = (int(x) for x in dims.split("x"))
    configs = [name for name in names.split(",") if name]
    if "cublas" not in configs:
        configs.append("cublas")
    return Shape(m, n, k, dtype, layout), configs


def run_case(
    evaluator: Any, shape: Shape, names: list[str], budgets: list[float], cycles: int
) -> dict[str, Any]:
    """Every budget once per cycle, each a one-round request of all ``names`` beside cuBLAS."""
    configs = [parse_config(name) for name in names]
    evaluator.compare(configs, shape, 1, budgets[0])  # compile, load and warm before timing
    samples: list[dict[str, Any]] = []
    for cycle in range(cycles):
        for budget in budgets:
            replies = evaluator.compare(configs, shape, 1, budget)
            samples.append(
                {
                    "cycle": cycle,
                    "budget_ms": budget,
                    "ms": {r.config_name: r.ms for r in replies},
                    "cublas_ms": {r.config_name: r.cublas_ms for r in replies},
                    "status": {r.config_name: r.status for r in replies},
                    "gpu": gpu_state(),
                }
            )
    summary: dict[str, Any] = {}
    for budget in budgets:
        rows = [s for s in samples if s["budget_ms"] == budget]
        summary[str(budget)] = {
            name: statistics.median(
                s["cublas_ms"][name] / s["ms"][name]
                for s in rows
                if s["status"][name] == "ok" and s["ms"][name]
            )
            for name in names
        }
    return {
        "shape": shape.label(),
        "configs": names,
        "ratio_by_budget": summary,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", required=True)
    parser.add_argument("--budgets", default="30,100,300")
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    budgets = [float(b) for b in options.budgets.split(",")]
    from tuner.gpu.worker import GpuEvaluator

    evaluator = GpuEvaluator()
    cases = []
    try:
        for text in options.case:
            shape, names = parse_case(text)
            cases.append(run_case(evaluator, shape, names, budgets, options.cycles))
            print(shape.label(), json.dumps(cases[-1]["ratio_by_budget"]), flush=True)
    finally:
        evaluator.close()
    document = {
        "what": "ratio cuBLAS ms / config ms by the length of a timed block",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": evaluator.device.name,
        "provenance": dict(evaluator.provenance),
        "commit": options.commit,
        "budgets_ms": budgets,
        "cycles": options.cycles,
        "cases": cases,
    }
    options.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
