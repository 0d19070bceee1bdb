"""Summarize Nsight Compute CSV exports (``ncu --csv``) of profile_launch.py runs.

    python benchmarks/ncu_summary.py benchmarks/results/ncu/*.csv.gz benchmarks/results/ncu/raw/*

Prints, per file, each GEMM kernel once (the first launch of each name; CuPy's helper kernels
and the random-number kernels are skipped). From ``--page details`` exports: duration, SM and
memory throughput, occupancy, registers and launch geometry. From ``--page raw`` exports (one
row per launch, one column per metric): duration, issue-active rate, instructions, registers
and the warp stall reasons per issued instruction (those of at least 0.005).
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
from pathlib import Path

METRICS = (
    "Duration", "Compute (SM) Throughput", "DRAM Throughput", "L2 Cache Throughput",
    "L1/TEX Cache Throughput", "Achieved Occupancy", "Theoretical Occupancy",
    "Registers Per Thread", "Block Size", "Grid Size",
)  # fmt: skip
SKIP = ("cupy", "void init_curand", "void execute_dist")


RAW_METRICS = (
    "gpu__time_duration.sum",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__inst_executed.sum",
    "launch__registers_per_thread",
)
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def _summarize_raw(path: Path, lines: list[str]) -> list[str]:
    out = [f"== {path.name} (raw)"]
    seen: set[str] = set()
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row["Kernel Name"]
        if name.startswith(SKIP) or name in seen or not row.get("ID", "").isdigit():
            continue  # the units row, helper kernels and repeated launches
        seen.add(name)
        parts = [f"{m} = {row[m]}" for m in RAW_METRICS if m in row]
        for key, value in row.items():
            if key.startswith(STALL_PREFIX) and key.endswith(STALL_SUFFIX):
                try:
                    if float(value) >= 0.005:
                        parts.append(f"{key[len(STALL_PREFIX) : -len(STALL_SUFFIX)]} = {value}")
                except ValueError:
                    continue
        out.append(f"  {name[:100]}")
        out.append("    " + "; ".join(parts))
    return out


def summarize(path: Path) -> list[str]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = [line for line in raw.decode().splitlines() if line.startswith('"')]
    if lines and "Metric Name" not in lines[0]:
        return _summarize_raw(path, lines)
    kernels: dict[str, dict[str, str]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row["Kernel Name"]
        if name.startswith(SKIP):
            continue
        first = kernels.setdefault(name, {"_id": row["ID"]})
        if first["_id"] == row["ID"]:
            first[row["Metric Name"]] = f"{row['Metric Value']} {row['Metric Unit']}".strip()
    out = [f"== {path.name}"]
    for name, metrics in kernels.items():
        out.append(f"  {name[:100]}")
        out.append("    " + "; ".join(f"{m} = {metrics[m]}" for m in METRICS if m in metrics))
    return out


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print("\n".join(summarize(Path(arg))))
