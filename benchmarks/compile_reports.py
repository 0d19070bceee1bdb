"""Whether the compiler's log carries ptxas's resource report for each kernel, and whether a
compile makes a CUDA context in the process that runs it.

    python benchmarks/compile_reports.py --out benchmarks/results/h200-compile-reports.json \
        [--compiler nvrtc] [--shape 4096x4096x4096] [--per-family 4] [--seed 1]

Where the report is missing, NVRTC's compiles read the kernel's resources by loading it
(``tuner.gpu.nvrtc.NvrtcCompiler._usage``), and the load makes a CUDA context in that compile
process. The kernels are every representative config (``tuner.kernels.representative``) and a
seeded sample of the shape's candidates from each default family. Each is compiled with the
service's options, and again without its warning suppression (``QUIET_WARNINGS``); both in one
fresh process per option set, with the compilers' caches off (``CUDA_CACHE_DISABLE`` for NVRTC's
own) and a new kernel cache. Rows: the config, per option set whether the report parsed and the
log's length; the summary counts the kernels without a report per set, and whether the process
that compiled with the service's options held a CUDA context afterwards (``cuda-bindings``, when
installed: the primary context's state on device 0).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import multiprocessing as mp
import os
import random
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tuner.core.shape import parse_shape
from tuner.kernels.compile import QUIET_WARNINGS, CompileError, NvccCompiler, parse_ptxas_report
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import table_device
from tuner.kernels.space import Space
from tuner.run.default_families import DEFAULT_FAMILIES

ARCH = "sm_90"


def kernels(shape: str, per_family: int, seed: int) -> list[str]:
    """Every representative config, then ``per_family`` seeded candidates of ``shape`` from each
    default family (none twice)."""
    names = [name for configs in REPRESENTATIVE.values() for name in configs]
    rng = random.Random(seed)
    for family in DEFAULT_FAMILIES:
        space = Space(family, parse_shape(shape), table_device(ARCH))
        configs = sorted(c.name for c in space.candidates() if c.name not in names)
        names += rng.sample(configs, min(per_family, len(configs)))
    return names


def _compiler(name: str, quiet: bool) -> Any:
    """The compiler ``name`` for ``ARCH``, with or without the warning suppression."""
    if name == "nvrtc":
        from tuner.gpu.nvrtc import NvrtcCompiler

        compiler: Any = NvrtcCompiler(ARCH)
    else:
        compiler = NvccCompiler(ARCH)
    if not quiet:
        compiler.options = tuple(o for o in compiler.options if o != QUIET_WARNINGS)
    return compiler


def _context_held() -> bool | None:
    """Whether this process holds device 0's primary CUDA context (None: cannot tell here)."""
    try:
        from cuda.bindings import driver

        (error,) = driver.cuInit(0)
    except Exception:  # not installed, or no driver on this machine
        return None
    if error != driver.CUresult.CUDA_SUCCESS:
        return None
    error, _, active = driver.cuDevicePrimaryCtxGetState(0)
    return bool(active) if error == driver.CUresult.CUDA_SUCCESS else None


def compile_all(compiler_name: str, quiet: bool, names: list[str]) -> dict[str, Any]:
    """In this (fresh) process: each config's log through the compiler's own build, whether the
    report parsed; then the full compile of each (resources read as the service reads them),
    and whether a CUDA context was made."""
    os.environ["CUDA_CACHE_DISABLE"] = "1"  # NVRTC's own cache (12.9 and newer)
    os.environ["GEMMTUNE_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-reports-")
    compiler = _compiler(compiler_name, quiet)
    rows = []
    for name in names:
        source = render(parse_config(name))
        row: dict[str, Any] = {"config": name}
        try:
            _, log = compiler._build(source)
        except CompileError as exc:
            row.update(status="compile_failed", reason=str(exc)[:200])
            rows.append(row)
            continue
        row["log_chars"] = len(log)
        try:
            parse_ptxas_report(log, source.entry)
            row["report"] = True
        except CompileError:
            row["report"] = False
        rows.append(row)
    before = _context_held()
    for name in names:  # as a study's compile process does: resources read, loaded if need be
        with contextlib.suppress(CompileError):  # a failed compile: already a row above
            compiler.compile(render(parse_config(name)))
    return {"rows": rows, "context_before": before, "context_after": _context_held()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc")
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("--per-family", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="the first N kernels only")
    options = parser.parse_args()
    names = kernels(options.shape, options.per_family, options.seed)[: options.limit]
    sets: dict[str, Any] = {}
    for label, quiet in (("service", True), ("without_suppression", False)):
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as fresh:
            sets[label] = fresh.submit(compile_all, options.compiler, quiet, names).result()
    document = {
        "what": "whether the compiler's log carries ptxas's resource report, per kernel, with "
        "the service's options and without its warning suppression; and whether compiling "
        "made a CUDA context in the compiling process",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "compiler": options.compiler,
        "arch": ARCH,
        "shape": options.shape,
        "kernels": len(names),
        "summary": {
            label: {
                "without_report": sorted(
                    r["config"] for r in s["rows"] if r.get("report") is False
                ),
                "compile_failed": sum(r.get("status") == "compile_failed" for r in s["rows"]),
                "context_before": s["context_before"],
                "context_after": s["context_after"],
            }
            for label, s in sets.items()
        },
        "sets": sets,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(document, indent=1) + "\n")
    for label, summary in document["summary"].items():
        print(
            f"{label}: {len(summary['without_report'])} of {len(names)} without a report; "
            f"context after: {summary['context_after']}"
        )


if __name__ == "__main__":
    main()
