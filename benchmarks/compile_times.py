"""How long NVRTC takes over a study's candidates, and whether it waits for something other
than the CPU: every compile timed inside its compiler process (wall and CPU seconds of the
compile, and of the fallback that loads the kernel to read its resources when NVRTC's log lacks
ptxas's report, which makes a CUDA context in that process).

    python benchmarks/compile_times.py --out FILE [--shape 4096x4096x4096] [--count 60]
        [--dtype float32] [--layout NN] [--workers 15] [--pools 1 --pools 2] [--seed 1]
        [--family NAME ...]

A random sample of ``--count`` candidates of the shape's default kernel families (the vendor's
compile nothing; ``--family`` names others) is compiled from an empty kernel cache by
``--pools`` pools of ``--workers`` spawned processes at once, each pool its own candidates, as
that many queue workers on one host compile theirs (repeatable: ``--pools 1 --pools 2`` runs
one pool, then two). Per compile: family, NVRTC's wall and CPU seconds, whether the fallback
ran and its seconds; per run: the wall time and the compiles a second. Needs a GPU machine
(NVRTC through CuPy); the device is only touched by the fallback. ``--dtype`` and ``--layout``
set the shape's input type and layout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tuner.core.config import Config
from tuner.core.shape import Shape, parse_shape
from tuner.kernels.compile import CompileError, parse_ptxas_report
from tuner.kernels.compile_pool import compile_process_setup
from tuner.kernels.families import FAMILIES
from tuner.kernels.render import render
from tuner.kernels.resources import table_device
from tuner.kernels.space import Space
from tuner.run.runner import families_for


def _ready() -> int:
    from cupy.cuda import nvrtc

    nvrtc.getVersion()
    return os.getpid()


def timed_compile(arch: str, config: Config) -> dict[str, Any]:
    """Compile ``config`` in this process as the pool's compiler does, timing each step."""
    from tuner.gpu.nvrtc import NvrtcCompiler

    compiler = NvrtcCompiler(arch)
    source = render(config)
    row: dict[str, Any] = {"config": config.name, "family": config.family, "pid": os.getpid()}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        cubin, log = compiler._build(source)
    except CompileError as exc:
        row.update(status="compile_failed", reason=str(exc)[:200])
        return row
    row.update(
        status="ok",
        build_wall_s=round(time.perf_counter() - wall, 4),
        build_cpu_s=round(time.process_time() - cpu, 4),
    )
    try:
        parse_ptxas_report(log, source.entry)
        row["fallback"] = False
    except CompileError:  # the compiler reads the resources by loading the kernel
        row["fallback"] = True
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "kernel.cubin"
            path.write_bytes(cubin)
            began = time.perf_counter()
            compiler._usage(log, source, path)
            row["fallback_s"] = round(time.perf_counter() - began, 4)
    return row


def summary(rows: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok"]
    walls = sorted(r["build_wall_s"] for r in ok)
    cpus = [r["build_cpu_s"] / r["build_wall_s"] for r in ok if r["build_wall_s"] > 0]
    fallbacks = [r for r in ok if r["fallback"]]
    by_family: dict[str, list[float]] = {}
    for r in ok:
        by_family.setdefault(r["family"], []).append(r["build_wall_s"])
    return {
        "compiles": len(rows),
        "failed": len(rows) - len(ok),
        "wall_s": round(wall, 2),
        "per_second": round(len(rows) / wall, 2),
        "build_wall_median_s": round(statistics.median(walls), 3) if walls else None,
        "build_wall_p90_s": round(walls[int(0.9 * (len(walls) - 1))], 3) if walls else None,
        "build_wall_max_s": round(walls[-1], 3) if walls else None,
        "cpu_over_wall_median": round(statistics.median(cpus), 3) if cpus else None,
        "fallbacks": len(fallbacks),
        "fallback_s_max": max((r["fallback_s"] for r in fallbacks), default=None),
        "by_family_median_s": {
            f: round(statistics.median(v), 3) for f, v in sorted(by_family.items())
        },
    }


def run_pools(
    arch: str, samples: list[list[Config]], workers: int
) -> tuple[list[list[dict[str, Any]]], float]:
    """Compile each sample in its own pool of ``workers`` processes, all pools at once."""
    pools = [
        # Set up as the compile pool sets up its own (NVRTC's own cache off): compiles a machine
        # ran before are compiled again, not answered from that cache.
        ProcessPoolExecutor(workers, get_context("spawn"), compile_process_setup)
        for _ in samples
    ]
    try:
        for pool in pools:  # started and NVRTC loaded before the clock runs
            for future in [pool.submit(_ready) for _ in range(workers)]:
                future.result()
        results: list[list[dict[str, Any]]] = [[] for _ in samples]

        def feed(index: int) -> None:
            futures = [pools[index].submit(timed_compile, arch, c) for c in samples[index]]
            results[index] = [f.result() for f in futures]

        began = time.perf_counter()
        threads = [threading.Thread(target=feed, args=(i,)) for i in range(len(samples))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results, time.perf_counter() - began
    finally:
        for pool in pools:
            pool.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shape", type=parse_shape, default=Shape(4096, 4096, 4096))
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--layout", default="NN")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--workers", type=int, default=15)
    parser.add_argument("--pools", type=int, action="append", help="repeatable (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--family", action="append", help="repeatable; default: the shape's default families"
    )
    parser.add_argument("--code", default=None, help="the gemmtune commit measured")
    options = parser.parse_args()
    options.shape = replace(options.shape, dtype=options.dtype, layout=options.layout)
    import cupy

    arch = f"sm_{cupy.cuda.Device(0).compute_capability}"
    device = table_device(arch)
    kernels = options.family or [f for f in families_for(options.shape) if not FAMILIES[f].vendor]
    space = [c.config for f in kernels for c in Space(f, options.shape, device).built_candidates()]
    chooser = random.Random(options.seed)
    document: dict[str, Any] = {
        "what": "NVRTC compiles of a random sample of a shape's candidates, from an empty "
        "kernel cache, timed inside each compiler process; several pools at once as several "
        "queue workers of one host compile",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "code": options.code,
        "python": sys.version.split()[0],
        "cupy": cupy.__version__,
        "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "arch": arch,
        "cpu_count": os.cpu_count(),
        "shape": str(options.shape),
        "families": kernels,
        "space": len(space),
        "workers": options.workers,
        "runs": {},
    }
    with tempfile.TemporaryDirectory(prefix="gemmtune-compile-") as tmp:
        os.environ["GEMMTUNE_CACHE_DIR"] = tmp  # nothing is read from a cache: _build only
        for pools in options.pools or [1]:
            samples = [chooser.sample(space, min(options.count, len(space))) for _ in range(pools)]
            results, wall = run_pools(arch, samples, options.workers)
            rows = [row for rs in results for row in rs]
            document["runs"][f"pools_{pools}"] = {"summary": summary(rows, wall), "rows": rows}
            print(f"{pools} pool(s): {json.dumps(summary(rows, wall))}", flush=True)
            options.out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {options.out}")


if __name__ == "__main__":
    main()
