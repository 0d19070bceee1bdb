"""What a study costs on the CPU besides compiling and measuring: the same ``tune`` as the
GPU throughput benchmark (``benchmarks/search_gpu.py``: ``ranked``, no warm start, a fresh
SQLite database with Optuna's tables, the default families), with an evaluator that answers at
once, so every second measured is the study's own bookkeeping. The BLAS runs on one thread, as
in a study beside the GPU evaluator's compile pool (``tuner.kernels.compile_pool.one_blas_thread``).

    python benchmarks/study_overhead.py --out overhead.json [--trials 80] [--profile prof.txt]

Per shape: the wall time of building the study (the space's enumeration, the sampler's ranking),
and per candidate of the loop the wall time and the CPU time of the study's thread (a thread
that writes Optuna trials in the background is not counted there: it runs while the study
waits for the device). CPU time is the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import subprocess
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna

from storage import open_database
from tuner.core.config import Config
from tuner.core.evaluators import EvaluatorKind
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.compile_pool import one_blas_thread
from tuner.kernels.resources import DeviceLimits, table_device
from tuner.model.rates import DeviceRates
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.request import TuneRequest
from tuner.run.runner import DEFAULT_FAMILIES
from tuner.run.tune import tune
from tuner.search.evaluator import EvaluatesAtOnce
from tuner.search.study import Progress

SHAPES = (Shape(4096, 4096, 4096), Shape(1024, 1024, 512))


CUBLAS_MS = 1.5


def made_up_ms(name: str) -> float:
    """A time in 1..2 ms that depends on the config's name alone, the same in every run."""
    return 1.0 + zlib.crc32(name.encode()) % 1000 / 1000


class InstantEvaluator(EvaluatesAtOnce):
    """Answers every candidate at once with a made-up time per config name, so a study costs
    only its own work; keeps 15 candidates ahead, as the GPU evaluator does with 15 compile
    workers."""

    families: tuple[str, ...] = ()  # any family
    parallelism = 15
    # Recorded as a GPU's results are, so the study does a GPU study's bookkeeping (into the
    # throwaway database of this run); it probes nothing, so no probed rates are kept.
    kind = EvaluatorKind.GPU.value

    def __init__(self, device: DeviceLimits) -> None:
        self.device = device
        self.provenance: dict[str, Any] = {"device": device.name, "evaluator": "instant"}

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return None

    def prepare(self, config: Config) -> None:
        return None

    def evaluate(self, config: Config, shape: Shape) -> Result:
        ms = made_up_ms(config.name)
        params = config.as_dict()
        return Result(
            config.name,
            config.family,
            params,
            "ok",
            ms=ms,
            cublas_ms=CUBLAS_MS,
            ratio=CUBLAS_MS / ms,
        )

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        return [
            Comparison(
                c.name, "ok", None, (made_up_ms(c.name),) * rounds, (CUBLAS_MS,) * rounds, 0.0
            )
            for c in configs
        ]

    def probe(self) -> DeviceRates | None:
        return None

    def close(self) -> None:
        return None


class Stopwatch:
    """Progress report: wall and study-thread CPU from the loop's start to each candidate."""

    def __init__(self) -> None:
        self.wall0 = self.cpu0 = 0.0
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def start(self, label: str, total: int) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), time.thread_time()

    def update(self, progress: Progress) -> None:
        self.walls.append(time.perf_counter() - self.wall0)
        self.cpus.append(time.thread_time() - self.cpu0)


def one_study(shape: Shape, trials: int, folder: Path) -> dict[str, Any]:
    url = f"sqlite:///{folder / f'{shape}.db'}"
    sessions = open_database(url, optuna_tables=True)
    watch = Stopwatch()
    begun = time.perf_counter()
    request = TuneRequest(
        (shape,), DEFAULT_FAMILIES, sampler="ranked", seed=0, trials=trials, warm_start=0,
        database_url=url,
    )  # fmt: skip
    workers = Workers([Worker(0, InstantEvaluator(table_device("sm_90")))])
    [progress] = tune(request, workers=workers, sessions=sessions, new_report=lambda: watch)
    total = time.perf_counter() - begun
    loop = watch.walls[-1]
    return {
        "shape": str(shape),
        "evaluated": progress.evaluated,
        "seconds_total": total,
        "seconds_before_loop": watch.wall0 - begun,
        "seconds_loop": loop,
        "ms_per_candidate_wall": 1000 * loop / len(watch.walls),
        "ms_per_candidate_cpu": 1000 * watch.cpus[-1] / len(watch.cpus),
        "candidates": [r.config_name for r in progress.history],
    }


def commit() -> str:
    here = Path(__file__).resolve().parent
    done = subprocess.run(
        ["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--trials", type=int, default=80)
    parser.add_argument("--profile", type=Path, help="also write a cProfile of the studies here")
    parser.add_argument("--commit", help="the code's commit, where this is no git checkout")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="study-overhead-"))
    blas = one_blas_thread()  # as the GPU evaluator's compile pool sets it while it runs
    profiler = cProfile.Profile() if args.profile else None
    studies = []
    for shape in SHAPES:
        if profiler is not None:
            profiler.enable()
        studies.append(one_study(shape, args.trials, folder))
        if profiler is not None:
            profiler.disable()
        last = studies[-1]
        print(
            f"{shape}: {last['seconds_before_loop']:.2f} s before the loop, "
            f"{last['ms_per_candidate_wall']:.1f} ms wall and "
            f"{last['ms_per_candidate_cpu']:.1f} ms CPU a candidate",
            flush=True,
        )
    document = {
        "what": "the study's own CPU cost: tune with an evaluator that answers at once",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": args.commit or commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), no GPU used",
        "python": platform.python_version(),
        "optuna": optuna.__version__,
        "profiled": profiler is not None,
        "trials": args.trials,
        "studies": studies,
    }
    blas.restore_original_limits()
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    if profiler is not None and args.profile:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        args.profile.write_text(text.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
