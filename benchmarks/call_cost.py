"""What one steady-state call costs: tuner.matmul against cupy.matmul, tuner.torch.matmul against
torch.matmul (GPU only).

    python benchmarks/call_cost.py --out results.json [--commit HASH]

The database is the committed H100 results preloaded as ``gemmtune serve`` would
(``api.preload``, into a temporary SQLite file), so each shape gets the answer a user gets. For
each shape and dtype (A and B random normal, row-major, allocated once) each of the four calls
runs ``calls`` times back to back, allocating its result as a user's call does, once as warm-up
and then in ``repeats`` rounds, the four calls taking turns within each round. A round measures
the wall clock from its first call to the end of its last kernel (a synchronize after the last
call) and, with CUDA events around the same calls, the GPU time; the per-call figure is the
median over rounds of time / calls. Where the kernel is shorter than the host's work per call,
the wall clock per call is the host's call cost; where it is longer, both approach the kernel
time. Each round also enqueues up to ``HOST_CALLS`` calls behind a sleeping kernel that holds the
GPU: that wall clock per call is the host's work alone (``host_us_per_call``), what a call costs
whatever the shape. ``added_us`` and ``added_host_us`` are tuner.matmul's figure minus
cupy.matmul's (and the torch pair's likewise), in the same process and rounds.

All four give C in the inputs' dtype (FP16 C for FP16 inputs): tuner.matmul and tuner.torch.matmul
by default, the kernel (or the vendor call it answers) writing it directly. TF32 is off for torch
and CuPy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CASES = [  # (m, n, k, dtype, calls per round)
    (64, 64, 64, "float32", 2000),
    (512, 512, 512, "float32", 2000),
    (4096, 4096, 4096, "float32", 20),
    (4096, 4096, 4096, "float16", 50),
    (256, 1024, 1024, "float16", 1000),
]
REPEATS = 9
HOST_CALLS = 200  # calls enqueued per round of the host-only measure (fewer where fewer run)
HOLD_S = 0.1  # the sleeping kernel that holds the GPU while they are enqueued


def preloaded_database(folder: Path) -> str:
    import storage
    from api.preload import preload

    url = f"sqlite:///{folder / 'call-cost.db'}"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    preload(storage.make_session_factory(engine))
    engine.dispose()
    return url


def per_call(run: Callable[[], Any], calls: int, sync: Callable[[], None]) -> tuple[float, float]:
    """(wall clock, GPU time) per call in microseconds, of ``calls`` calls back to back."""
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    sync()
    begin = time.perf_counter()
    start.record()
    for _ in range(calls):
        run()
    stop.record()
    sync()
    wall = time.perf_counter() - begin
    return wall / calls * 1e6, cupy.cuda.get_elapsed_time(start, stop) / calls * 1e3


def host_per_call(run: Callable[[], Any], calls: int, sync: Callable[[], None]) -> float:
    """Host time per call in microseconds: ``calls`` calls enqueued behind a sleeping kernel,
    so that none waits for the GPU and the clock sees the host's work alone."""
    import cupy
    import torch

    clock_khz = cupy.cuda.Device().attributes.get("ClockRate", 2_000_000)  # boost clock, kHz
    sync()
    torch.cuda._sleep(int(clock_khz * 1e3 * HOLD_S))  # on the legacy default stream, CuPy's too
    begin = time.perf_counter()
    for _ in range(calls):
        run()
    host = time.perf_counter() - begin
    sync()
    if host > HOLD_S:
        raise RuntimeError(f"the GPU was released before the {calls} calls were enqueued")
    return host / calls * 1e6


def measure_case(m: int, n: int, k: int, dtype: str, calls: int, db: str) -> dict[str, Any]:
    import cupy
    import torch

    import tuner
    import tuner.torch
    from tuner.client import config_name
    from tuner.core.shape import Shape

    torch.backends.cuda.matmul.allow_tf32 = False
    rng = cupy.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k), dtype=cupy.float32).astype(dtype)
    b = rng.standard_normal((k, n), dtype=cupy.float32).astype(dtype)
    ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)  # the same memory, as torch tensors
    # CuPy runs on torch's current stream (the legacy default stream of both), so that one
    # synchronize waits for every call.
    runs: dict[str, Callable[[], Any]] = {
        "tuner.matmul": lambda: tuner.matmul(a, b, db=db),
        "cupy.matmul": lambda: cupy.matmul(a, b),
        "tuner.torch.matmul": lambda: tuner.torch.matmul(ta, tb, db=db),
        "torch.matmul": lambda: torch.matmul(ta, tb),
    }
    sync = cupy.cuda.Device().synchronize
    for run in runs.values():  # warm-up: answers, compiles, cuBLAS handles, memory pools
        per_call(run, max(3, calls // 10), sync)
    walls: dict[str, list[float]] = {name: [] for name in runs}
    gpus: dict[str, list[float]] = {name: [] for name in runs}
    hosts: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(REPEATS):
        for name, run in runs.items():
            wall, gpu = per_call(run, calls, sync)
            walls[name].append(wall)
            gpus[name].append(gpu)
            hosts[name].append(host_per_call(run, min(calls, HOST_CALLS), sync))
    wall_us = {name: statistics.median(values) for name, values in walls.items()}
    host_us = {name: statistics.median(values) for name, values in hosts.items()}
    config = config_name(Shape(m, n, k, dtype, "NN"), db=db)
    return {
        "m": m,
        "n": n,
        "k": k,
        "dtype": dtype,
        "config": config,
        "calls_per_round": calls,
        "rounds": REPEATS,
        "wall_us_per_call": wall_us,
        "gpu_us_per_call": {name: statistics.median(values) for name, values in gpus.items()},
        "wall_us_spread": {name: [min(v), max(v)] for name, v in walls.items()},
        "host_us_per_call": host_us,
        "host_us_spread": {name: [min(v), max(v)] for name, v in hosts.items()},
        "added_us": {
            "tuner.matmul - cupy.matmul": wall_us["tuner.matmul"] - wall_us["cupy.matmul"],
            "tuner.torch.matmul - torch.matmul": wall_us["tuner.torch.matmul"]
            - wall_us["torch.matmul"],
        },
        "added_host_us": {
            "tuner.matmul - cupy.matmul": host_us["tuner.matmul"] - host_us["cupy.matmul"],
            "tuner.torch.matmul - torch.matmul": host_us["tuner.torch.matmul"]
            - host_us["torch.matmul"],
        },
    }


def provenance(commit: str | None) -> dict[str, Any]:
    import cupy
    import torch

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return {
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cupy": cupy.__version__,
        "torch": torch.__version__,
        "commit": commit or _git_commit(),
        "method": __doc__.split("\n\n")[2].replace("\n", " ") if __doc__ else "",
    }


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    parser.add_argument("--commit", default=os.environ.get("GEMMTUNE_COMMIT"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = preloaded_database(Path(folder))
        cases = [measure_case(*case, db) for case in CASES]
    result = {"provenance": provenance(args.commit), "cases": cases}
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    names = ["tuner.matmul", "cupy.matmul", "tuner.torch.matmul", "torch.matmul"]
    print(f"{'shape':>22} " + " ".join(f"{n:>19}" for n in names) + "  (wall us/call; gpu)")
    for case in cases:
        label = f"{case['m']}x{case['n']}x{case['k']} {case['dtype']}"
        cells = [
            f"{case['wall_us_per_call'][n]:8.1f} ({case['gpu_us_per_call'][n]:7.1f})" for n in names
        ]
        print(f"{label:>22} " + " ".join(f"{c:>19}" for c in cells) + f"  {case['config']}")


if __name__ == "__main__":
    main()
