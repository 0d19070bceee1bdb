"""Summarize Nsight Compute CSV exports (``ncu --csv --page details``) of profile_launch.py runs.

    python benchmarks/ncu_summary.py benchmarks/results/ncu/*.csv.gz

Prints, per file, each GEMM kernel once (the first launch of each name; CuPy's helper kernels
and the random-number kernels are skipped) with its duration, SM and memory throughput,
occupancy, registers and launch geometry.
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


def summarize(path: Path) -> list[str]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = [line for line in raw.decode().splitlines() if line.startswith('"')]
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
