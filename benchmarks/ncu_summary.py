"""Summarize Nsight Compute CSV exports (``ncu --csv``) of profile_launch.py runs.

    python benchmarks/ncu_summary.py benchmarks/results/ncu/*.csv.gz benchmarks/results/ncu/raw/*
    python benchmarks/ncu_summary.py --every-launch benchmarks/results/ncu/raw/FILE   # raw pages

Prints, per file, each GEMM kernel once: its last launch. profile_launch.py verifies each config
first (two launches with alpha = 0.5, beta = 3 and alpha = 1, beta = 0, cuBLAS beside them) and
only then runs the launches being studied (alpha = 1, beta = 0, as the bench times them), so the
last launch of a name is one of those; a first launch reads C and starts cold. CuPy's helper
kernels and the random-number kernels are skipped. From ``--page details`` exports: duration, SM and
memory throughput, occupancy, registers and launch geometry. From ``--page raw`` exports (one
row per launch, one column per metric): duration, issue-active rate, instructions, registers
and the warp stall reasons per issued instruction (those of at least 0.005). From ``--page
source --print-source sass`` exports of one launch (SourceCounters section; profile with
``-s`` to skip the verification launches): instructions executed, and the warp-state samples by
reason, over the whole kernel and outside its k loop. The k loop is fully unrolled, so each of
its instructions runs once per k tile: it is the instructions executed at least half as often
as the most executed one; the rest run once per output tile or once per launch.

``--every-launch`` prints every launch of a raw export instead, in order, with its grid: a padded
launch's copies and its product, and the same kernel run on different arrays, each on a line.
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
    # Where a profile collected them (the odd-shape runs: ComputeWorkloadAnalysis and --metrics):
    # the DMMA pipe's and the LSU's share of peak, and how operands reach shared memory.
    "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_op_ldgsts.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    # Where SpeedOfLight was collected: how busy the average SM and the busiest one were against
    # the kernel's elapsed cycles (a busiest SM far above the average is a tail, not a slow loop).
    "sm__cycles_active.avg",
    "sm__cycles_active.max",
    "gpc__cycles_elapsed.max",
)
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def _summarize_raw(path: Path, lines: list[str], every_launch: bool) -> list[str]:
    out = [f"== {path.name} (raw{', every launch' if every_launch else ''})"]
    last: dict[str, dict[str, str]] = {}  # in the order the kernels first ran
    launches: list[tuple[str, dict[str, str]]] = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row["Kernel Name"]
        if not name.startswith(SKIP) and row.get("ID", "").isdigit():  # not the units row
            last[name] = row
            launches.append((f"{name[:60]} grid {row.get('Grid Size', '?')}", row))
    shown = launches if every_launch else [(name[:100], row) for name, row in last.items()]
    for name, row in shown:
        parts = [f"{m} = {row[m]}" for m in RAW_METRICS if m in row]
        for key, value in row.items():
            if key.startswith(STALL_PREFIX) and key.endswith(STALL_SUFFIX):
                try:
                    if float(value) >= 0.005:
                        parts.append(f"{key[len(STALL_PREFIX) : -len(STALL_SUFFIX)]} = {value}")
                except ValueError:
                    continue
        out.append(f"  {name}")
        out.append("    " + "; ".join(parts))
    return out


def _count(text: str) -> int:
    digits = text.replace(",", "")
    return int(digits) if digits.isdigit() else 0


def _summarize_source(path: Path, lines: list[str]) -> list[str]:
    kernel = next(csv.reader([lines[0]]))[1]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[1:]))))
    executed = [_count(row["Instructions Executed"]) for row in rows]
    loop_rows = [row for row, n in zip(rows, executed, strict=True) if n >= max(executed) / 2]
    other_rows = [row for row, n in zip(rows, executed, strict=True) if n < max(executed) / 2]
    reasons = [c for c in rows[0] if c.startswith("stall_") and "Not Issued" not in c]
    samples = {c: sum(_count(row[c]) for row in rows) for c in reasons}
    outside = {c: sum(_count(row[c]) for row in other_rows) for c in reasons}
    total = sum(samples.values()) or 1

    def shares(counts: dict[str, int]) -> str:
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        return "; ".join(f"{c[6:]} {n / total:.3f}" for c, n in ranked if n / total >= 0.001)

    in_loop = sum(_count(row["Instructions Executed"]) for row in loop_rows) / sum(executed)
    return [
        f"== {path.name} (source)",
        f"  {kernel[:100]}",
        f"    instructions executed = {sum(executed):,}; in the k loop {in_loop:.3f}"
        f"; warp samples = {total:,}; in the k loop {1 - sum(outside.values()) / total:.3f}",
        f"    samples by reason: {shares(samples)}",
        f"    outside the k loop: {shares(outside)}",
    ]


def summarize(path: Path, every_launch: bool = False) -> list[str]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode().splitlines()
    if text and text[0].startswith('"Kernel Name",'):
        return _summarize_source(path, text)
    lines = [line for line in text if line.startswith('"')]
    if lines and "Metric Name" not in lines[0]:
        return _summarize_raw(path, lines, every_launch)
    kernels: dict[str, dict[str, str]] = {}  # one row per metric; a new ID starts a launch
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row["Kernel Name"]
        if name.startswith(SKIP):
            continue
        launch = kernels.setdefault(name, {"_id": row["ID"]})
        if launch["_id"] != row["ID"]:
            launch = kernels[name] = {"_id": row["ID"]}
        launch[row["Metric Name"]] = f"{row['Metric Value']} {row['Metric Unit']}".strip()
    out = [f"== {path.name}"]
    for name, metrics in kernels.items():
        out.append(f"  {name[:100]}")
        out.append("    " + "; ".join(f"{m} = {metrics[m]}" for m in METRICS if m in metrics))
    return out


if __name__ == "__main__":
    every = "--every-launch" in sys.argv[1:]
    for arg in (a for a in sys.argv[1:] if a != "--every-launch"):
        print("\n".join(summarize(Path(arg), every)))
