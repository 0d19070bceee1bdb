"""Whether the compiler's log carries ptxas's resource report for each kernel, compiled once and
again, and whether compiling made a CUDA context in the processes that ran it.

    python benchmarks/compile_reports.py --out benchmarks/results/h200-compile-reports.json \
        [--compiler nvrtc] [--shape 4096x4096x4096] [--per-family 4] [--seed 1] [--workers 8]

NVRTC 12.9 and newer keeps its compiles in the driver's cache and answers a source it compiled
before from there. Where a log lacks the report, NVRTC's compiles read the kernel's resources by
loading it (``tuner.gpu.nvrtc.NvrtcCompiler._usage``), which makes a CUDA context in that compile
process. The kernels are every representative config (``tuner.kernels.representative``) and a
seeded sample of the shape's candidates from each default family, spread over ``--workers``
fresh processes per set. Two sets: ``cache_on``, NVRTC's cache on (in a new folder), and
``service``, the processes set up as the compile pool sets up its own
(``tuner.kernels.compile_pool.compile_process_setup``). In each, every kernel is built twice (the
compiler's own build, no project cache), then compiled as a study's process compiles it (into a
new project cache: resources read from the report, or by loading). Rows: the config, whether each
build's log had the report, and its length; per set, the kernels without a report at each
build, and how many processes held a CUDA context at the end (``cuda-bindings``, where
installed: the primary context of device 0).
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
from tuner.kernels.compile import CompileError, NvccCompiler, parse_ptxas_report
from tuner.kernels.compile_pool import compile_process_setup
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


def _compiler(name: str) -> Any:
    """The compiler ``name`` for ``ARCH``."""
    if name == "nvrtc":
        from tuner.gpu.nvrtc import NvrtcCompiler

        return NvrtcCompiler(ARCH)
    return NvccCompiler(ARCH)


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


def _nvrtc_cache_on(folder: str) -> None:
    """NVRTC's own cache on, in ``folder`` (a process initializer)."""
    os.environ.pop("CUDA_CACHE_DISABLE", None)
    os.environ["CUDA_CACHE_PATH"] = folder


def _has_report(log: str, entry: str) -> bool:
    try:
        parse_ptxas_report(log, entry)
    except CompileError:
        return False
    return True


def compile_all(compiler_name: str, names: list[str]) -> dict[str, Any]:
    """In this process: each config built twice, whether each log had the report; then each
    compiled into a new project cache as a study's compile process does; and whether this
    process holds a CUDA context after."""
    os.environ["GEMMTUNE_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-reports-")
    compiler = _compiler(compiler_name)
    rows = []
    for name in names:
        source = render(parse_config(name))
        row: dict[str, Any] = {"config": name}
        try:
            for build in ("first", "again"):
                _, log = compiler._build(source)
                row[f"{build}_report"] = _has_report(log, source.entry)
                row[f"{build}_log_chars"] = len(log)
        except CompileError as exc:
            row.update(status="compile_failed", reason=str(exc)[:200])
        rows.append(row)
    for name in names:  # resources read as the service reads them: loaded where no report
        with contextlib.suppress(CompileError):  # a failed compile: already a row above
            compiler.compile(render(parse_config(name)))
    return {"rows": rows, "context_after": _context_held()}


def run_set(
    compiler_name: str, names: list[str], workers: int, initializer: Any, args: tuple[Any, ...]
) -> dict[str, Any]:
    """``names`` spread over ``workers`` fresh processes started with ``initializer(*args)``."""
    slices = [names[i::workers] for i in range(workers) if names[i::workers]]
    context = mp.get_context("spawn")
    with ProcessPoolExecutor(len(slices), context, initializer, args) as fresh:
        parts = list(fresh.map(compile_all, [compiler_name] * len(slices), slices))
    rows = sorted(
        (row for part in parts for row in part["rows"]), key=lambda r: names.index(r["config"])
    )
    held = [part["context_after"] for part in parts]
    return {
        "rows": rows,
        "without_report": {
            build: sorted(r["config"] for r in rows if r.get(f"{build}_report") is False)
            for build in ("first", "again")
        },
        "compile_failed": sum(r.get("status") == "compile_failed" for r in rows),
        "processes": len(slices),
        "processes_with_context": None if None in held else sum(bool(h) for h in held),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc")
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("--per-family", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="the first N kernels only")
    parser.add_argument("--workers", type=int, default=8, help="processes per set")
    options = parser.parse_args()
    names = kernels(options.shape, options.per_family, options.seed)[: options.limit]
    sets: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nvrtc-cache-") as folder:
        sets["cache_on"] = run_set(
            options.compiler, names, options.workers, _nvrtc_cache_on, (folder,)
        )
    sets["service"] = run_set(options.compiler, names, options.workers, compile_process_setup, ())
    document = {
        "what": "whether the compiler's log carries ptxas's resource report per kernel, built "
        "twice, with NVRTC's own cache on and as the compile pool's processes compile; and how "
        "many compiling processes held a CUDA context after",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "compiler": options.compiler,
        "arch": ARCH,
        "shape": options.shape,
        "kernels": len(names),
        "sets": sets,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(document, indent=1) + "\n")
    for label, result in sets.items():
        missing = {build: len(found) for build, found in result["without_report"].items()}
        print(
            f"{label}: of {len(names)} kernels, without a report {missing}; processes with a "
            f"CUDA context {result['processes_with_context']} of {result['processes']}"
        )


if __name__ == "__main__":
    main()
