"""How long NVRTC takes per candidate, and whether an option changes the time or the kernel.

    python benchmarks/nvrtc_options.py --out benchmarks/results/h100-nvrtc-options.json \
        [--shape 4096x4096x4096] [--per-family 8] [--workers 15] [--seed 1] \
        [--variant NAME=OPTION ...]

NVRTC 12.9 and newer keeps a cache of its own (``$HOME/.nv/ComputeCache``, where the driver
keeps its JIT cache): a source compiled a second time comes back in milliseconds. So this
probe turns that cache off (``CUDA_CACHE_DISABLE=1``) and first shows it is off: one config
compiled twice takes as long the second time.

A seeded sample of the shape's candidates, ``--per-family`` per default family, is compiled
with the service's options (``tuner.gpu.nvrtc.NVRTC_OPTIONS``, "base") and with each variant's
options added: config by config, the sets in turn (first set alternating), one compile at a
time (the compiler alone on a core); then the whole sample in a pool of ``--workers`` processes
(as a study compiles), the sets in turn, twice. Each row holds a config's seconds per set, its
registers, and whether every set gave the same cubin bytes. Needs CuPy and a GPU machine's NVRTC
(no GPU is used).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tuner.core.shape import parse_shape
from tuner.gpu.nvrtc import NVRTC_OPTIONS
from tuner.kernels.compile import CompileError, parse_ptxas_report
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.resources import table_device
from tuner.kernels.space import Space
from tuner.run.runner import DEFAULT_FAMILIES

ARCH = "sm_90"
POOL_ROUNDS = 2


def sampled(shape: str, per_family: int, seed: int) -> list[str]:
    """``per_family`` seeded candidates of ``shape`` from each default family."""
    rng = random.Random(seed)
    names: list[str] = []
    for family in DEFAULT_FAMILIES:
        space = Space(family, parse_shape(shape), table_device(ARCH))
        configs = [c.name for c in space.candidates()]
        names += rng.sample(configs, min(per_family, len(configs)))
    return names


def compile_timed(name: str, extra: tuple[str, ...]) -> dict[str, Any]:
    """Compile ``name`` with NVRTC_OPTIONS + ``extra``: seconds, registers, the cubin."""
    from cupy.cuda import nvrtc

    source = render(parse_config(name))
    start = time.perf_counter()
    prog = nvrtc.createProgram(source.code, f"{source.entry}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, (f"-arch={ARCH}", *NVRTC_OPTIONS, *extra))
        except nvrtc.NVRTCError as exc:
            return {"error": f"{exc}: {nvrtc.getProgramLog(prog)[-300:]}"}
        cubin, log = bytes(nvrtc.getCUBIN(prog)), nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    seconds = time.perf_counter() - start
    try:
        registers: int | None = parse_ptxas_report(log, source.entry).registers
    except CompileError:
        registers = None
    return {"s": round(seconds, 4), "registers": registers, "cubin": cubin}


def _seconds(row: dict[str, Any]) -> float | None:
    return row.get("s")


def _warm(_: int) -> str:
    from cupy.cuda import nvrtc

    return str(nvrtc.getVersion())


def pool_wall(names: list[str], extra: tuple[str, ...], workers: int) -> float:
    """Seconds for a pool of ``workers`` processes to compile ``names``."""
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(_warm, range(workers)))  # the library loaded in every worker first
        start = time.perf_counter()
        list(pool.map(compile_timed, names, [extra] * len(names)))
        return round(time.perf_counter() - start, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("--per-family", type=int, default=8)
    parser.add_argument("--workers", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=OPTION")
    args = parser.parse_args()
    os.environ["CUDA_CACHE_DISABLE"] = "1"  # before NVRTC loads, here and in the workers
    import cupy
    from cupy.cuda import nvrtc

    sets = {"base": ()} | {
        v.split("=", 1)[0]: tuple(v.split("=", 1)[1].split()) for v in args.variant
    }
    names = sampled(args.shape, args.per_family, args.seed)
    cache_check = [compile_timed(names[0], ())["s"] for _ in range(2)]
    rows: list[dict[str, Any]] = []
    times: list[dict[str, float | None]] = []  # per config, seconds per set
    for i, name in enumerate(names):
        order = list(sets.items())
        order = order[i % len(order) :] + order[: i % len(order)]
        compiled = {label: compile_timed(name, extra) for label, extra in order}
        cubins = {c.get("cubin") for c in compiled.values()}
        times.append({label: _seconds(compiled[label]) for label in sets})
        rows.append(
            {
                "config": name,
                "s": times[-1],
                "registers": compiled["base"].get("registers"),
                "same_cubin": len(cubins) == 1 and None not in cubins,
                "errors": {label: c["error"] for label, c in compiled.items() if "error" in c},
            }
        )
    walls: dict[str, list[float]] = {label: [] for label in sets}
    for _ in range(POOL_ROUNDS):
        for label, extra in sets.items():
            walls[label].append(pool_wall(names, extra, args.workers))
    summary = {}
    for label in sets:
        seconds = [r["s"][label] for r in rows if r["s"][label] is not None]
        paired = [r["s"][label] / r["s"]["base"] for r in rows if None not in r["s"].values()]
        summary[label] = {
            "options": list(sets[label]),
            "alone_median_s": round(statistics.median(seconds), 4),
            "alone_total_s": round(sum(seconds), 3),
            "alone_median_ratio_to_base": round(statistics.median(paired), 3),
            "pool_walls_s": walls[label],
            "errors": sum(label in r["errors"] for r in rows),
        }
    props = cupy.cuda.runtime.getDeviceProperties(0)
    report = {
        "what": "NVRTC seconds per candidate, alone and in a pool, per option set, cache off",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": props["name"].decode(),
        "versions": {
            "nvrtc": ".".join(map(str, nvrtc.getVersion())),
            "cupy": cupy.__version__,
            "python": platform.python_version(),
        },
        "shape": args.shape,
        "workers": args.workers,
        "configs": len(names),
        "cache_off_check_s": cache_check,
        "same_cubin": f"{sum(r['same_cubin'] for r in rows)}/{len(rows)}",
        "summary": summary,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
