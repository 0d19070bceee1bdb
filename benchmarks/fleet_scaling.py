"""A standing fleet of queue workers on 1, 2 and 4 GPUs of one host: how fast it tunes a batch
and one study, each against one GPU in the same lease (issue 44, item 2).

    python benchmarks/fleet_scaling.py --out FILE [--gpus 1 --gpus 2 --gpus 4]
        [--shapes FILE.csv ...] [--limit 16] [--trials 40]
        [--study-shape 4096x4096x4096] [--study-trials 80] [--skip-study | --skip-batch]
        [--evaluator gpu|replay]
        [--postgres postgresql+psycopg://USER@HOST:PORT/postgres | --postgres pgserver]
        [--py-spy 0.5]

For every GPU count and workload (one study, then the batch) the script starts a ``gemmtune
worker --wait`` process per GPU, the command a user runs on each GPU of a tuning host, on a
fresh SQLite database (or, with ``--postgres``, a fresh database made on that server for the
run and dropped after it; ``--postgres pgserver`` starts a PostgreSQL server of its own with the
``pgserver`` package, for a machine that has none: on the lent GPUs, carry its wheel and those of
``fasteners``, ``platformdirs`` and ``psutil``) and empty kernel caches shared by that run's
workers (as on one host): the service's, and NVRTC's own.
Once every worker says it is ready (its device started and its rates stored: the probe runs
there, on the empty cache), the workload is enqueued, and the clock runs from the enqueue to the
moment the last of its shapes is done. A standing fleet is what the queue is for (``gemmtune
serve`` with tune on miss, docker compose): the start of a worker is paid once, not per batch.
How long the start took is recorded beside (``ready_s``).

Per run: seconds, shapes and candidates a minute, how busy the host's CPUs were (mean and
peak share, from /proc/stat), which worker measured each candidate, any config measured twice
in a study, each shape's stored best (``multi_gpu.stored``), and every study's timeline: when
each worker claimed and measured, when its finalists ran (``study_timeline.py``), and where the
seconds of each study a worker finished went (its ``seconds:`` line; ``finished_studies``
names their shapes, in the same order); per GPU
count, the speed-up over one GPU and the bests compared shape by shape (``multi_gpu.compare``).
``--py-spy S`` also dumps each worker's stack every S seconds while the workload runs and
records where its main thread stood (``stack_samples.py``; py-spy on the PATH).
``--evaluator replay`` runs it all on a CPU with replay workers: a check of the script, not a
measurement.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from imports import postgres_url
from multi_gpu import compare, stored
from stack_samples import StackSampler
from study_timeline import read_timelines

import storage
from storage import tune_queue
from tuner.core.shape import Shape, parse_shape
from tuner.data import default_suite
from tuner.data.shape_lists import read_shapes
from tuner.run.queue_worker import WorkerSettings
from tuner.run.request import TuneRequest
from tuner.run.worker_processes import problems_of, start_worker_processes

READY_TIMEOUT_S = 600.0
WATCH_S = 0.1
CPU_SAMPLE_S = 0.5


class HostCpu:
    """How busy the host's CPUs were while a workload ran: /proc/stat read every
    :data:`CPU_SAMPLE_S` by a thread (Linux; elsewhere nothing is recorded). The search of a
    study is bound by its compiles, so a fleet that stops scaling may simply have run out of
    cores (the four-H200 host's 64 CPUs, four workers of 15 compile processes each)."""

    def __init__(self) -> None:
        self.busy: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def _times() -> tuple[int, int] | None:
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        except OSError:
            return None
        values = [int(v) for v in fields]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        return sum(values), idle

    def _sample(self) -> None:
        last = self._times()
        while last is not None and not self._stop.wait(CPU_SAMPLE_S):
            now = self._times()
            if now is None:
                return
            total, idle = now[0] - last[0], now[1] - last[1]
            if total > 0:
                self.busy.append(1.0 - idle / total)
            last = now

    def __enter__(self) -> HostCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float | int]:
        if not self.busy:
            return {}
        return {
            "cpu_busy_mean": round(sum(self.busy) / len(self.busy), 3),
            "cpu_busy_max": round(max(self.busy), 3),
            "cpu_samples": len(self.busy),
        }


SECONDS_PART = re.compile(r"(\w+) ([\d.]+)")  # of a worker's "seconds:" line (print_outcome)
# The first line of a study's outcome (print_outcome): "device|shape|dtype|...: N evaluated (...)".
OUTCOME_LINE = re.compile(r"^[^|]+\|([^|]+)\|.*: \d+ evaluated \(")


def threads_per_core() -> int | None:
    """Hardware threads sharing a core with CPU 0 (2 where SMT is on); None where unknown."""
    siblings = Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
    try:
        text = siblings.read_text().strip()
    except OSError:
        return None
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def own_postgres(folder: Path) -> tuple[str, Any]:
    """A PostgreSQL server started in ``folder`` with ``pgserver``: its admin URL, over its Unix
    socket, and the server (``cleanup()`` stops it)."""
    try:
        import pgserver
    except ImportError:
        raise SystemExit(
            "--postgres pgserver needs the pgserver package (pip install pgserver)"
        ) from None
    server = pgserver.get_server(folder / "pgdata", cleanup_mode="stop")
    return f"postgresql+psycopg://postgres@/postgres?host={server.pgdata}", server


@contextmanager
def fresh_database(label: str, folder: Path, postgres: str | None) -> Iterator[str]:
    """The URL of a fresh database for one run: a SQLite file in ``folder``, or a database made
    on the ``postgres`` server and dropped when the run is done."""
    if postgres is None:
        yield f"sqlite:///{folder / (label + '.db')}"
        return
    url, drop = postgres_url(postgres)
    try:
        yield url
    finally:
        drop()


def fleet_run(
    label: str,
    shapes: list[Shape],
    trials: int,
    gpus: int,
    folder: Path,
    evaluator: str,
    timeout_s: float,
    postgres: str | None = None,
    py_spy_s: float | None = None,
) -> dict[str, Any]:
    """Start ``gpus`` standing workers, wait until each is ready, then time the tune of
    ``shapes`` (``trials`` candidates each) from its enqueue to its last shape done, on a
    :func:`fresh_database`."""
    with fresh_database(label, folder, postgres) as url:
        os.environ["GEMMTUNE_CACHE_DIR"] = str(folder / f"{label}-kernels")
        # NVRTC's own cache too (12.9 and newer keep compiles in the driver's ComputeCache): a
        # run after another would otherwise find the configs they share compiled in milliseconds.
        os.environ["CUDA_CACHE_PATH"] = str(folder / f"{label}-nvrtc")
        request = TuneRequest(tuple(shapes), trials=trials, evaluator=evaluator, database_url=url)
        problems = problems_of(request)  # refused here, before any worker starts
        engine = storage.open_engine(url, optuna_tables=True)
        sessions = storage.make_session_factory(engine)
        settings = WorkerSettings(trials=trials, evaluator=evaluator, database_url=url, wait=True)
        ready: set[str] = set()
        errors: list[str] = []
        lock = threading.Lock()

        seconds: dict[str, list[dict[str, float]]] = {}
        finished: dict[str, list[str]] = {}  # the shapes of those studies, in the same order
        outcome_of: dict[str, str] = {}  # each worker's study whose outcome it is printing

        def relay(worker: str, line: str, is_err: bool) -> None:
            with lock:
                if " ready on " in line:
                    ready.add(worker)
                if (outcome := OUTCOME_LINE.match(line.strip())) is not None:
                    outcome_of[worker] = outcome.group(1)
                if line.strip().startswith("seconds:"):  # a study this worker finished
                    parts = SECONDS_PART.findall(line)
                    seconds.setdefault(worker, []).append({k: float(v) for k, v in parts})
                    finished.setdefault(worker, []).append(outcome_of.pop(worker, "?"))
                if is_err and line.strip():
                    errors.append(f"{worker}: {line}")

        started = time.perf_counter()
        workers = start_worker_processes(settings, range(gpus), relay)
        try:
            while len(ready) < gpus:
                if any(w.process.poll() is not None for w in workers):
                    raise RuntimeError(
                        f"{label}: a worker exited before it was ready: {errors[-3:]}"
                    )
                if time.perf_counter() - started > READY_TIMEOUT_S:
                    raise RuntimeError(f"{label}: workers not ready after {READY_TIMEOUT_S} s")
                time.sleep(WATCH_S)
            ready_s = time.perf_counter() - started
            batch = uuid.uuid4().hex
            begun = time.perf_counter()
            with sessions.begin() as session:
                tune_queue.enqueue(session, problems, batch=batch, again=True)
            stacks: AbstractContextManager[StackSampler | None] = (
                StackSampler({w.label: w.process.pid for w in workers}, py_spy_s)
                if py_spy_s
                else nullcontext()
            )
            with HostCpu() as cpu, stacks as sampler:
                while True:
                    with sessions() as session:
                        progress = tune_queue.batch_progress(session, batch)
                    if progress.finished:
                        break
                    if time.perf_counter() - begun > timeout_s:
                        raise RuntimeError(f"{label}: not done after {timeout_s} s: {progress}")
                    if all(w.process.poll() is not None for w in workers):
                        raise RuntimeError(f"{label}: every worker exited: {errors[-3:]}")
                    time.sleep(WATCH_S)
            wall = time.perf_counter() - begun
        finally:
            for worker in workers:
                worker.process.terminate()
            for worker in workers:
                worker.process.wait()
            engine.dispose()
        result = stored(url)
        # One study's candidates, each with its claim, compile and result (a batch's would be
        # hundreds of rows: its timelines keep the spans).
        result["timelines"] = read_timelines(url, rows=len(shapes) == 1)
        evaluated = sum(s["evaluated"] for s in result["studies"].values())
        result.update(
            gpus=gpus,
            ready_s=round(ready_s, 2),
            wall_s=round(wall, 2),
            shapes=len(shapes),
            done=progress.done,
            failed=progress.failed,
            evaluated=evaluated,
            per_minute=round(60 * evaluated / wall, 2),
            shapes_per_minute=round(60 * len(shapes) / wall, 2),
            **cpu.summary(),
            **({"stacks": sampler.summary()} if sampler is not None else {}),
            study_seconds=seconds,
            finished_studies=finished,
        )
        print(
            f"{label}: {gpus} GPU(s) ready in {ready_s:.1f} s; {len(shapes)} shape(s), {evaluated} "
            f"candidates in {wall:.1f} s",
            flush=True,
        )
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gpus", type=int, action="append", help="repeatable (default 1, 2)")
    parser.add_argument("--shapes", type=Path, action="append", help="default: the suite")
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--study-shape", type=parse_shape, default=Shape(4096, 4096, 4096))
    parser.add_argument("--study-trials", type=int, default=80)
    parser.add_argument("--skip-study", action="store_true")
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--evaluator", default="gpu", choices=("gpu", "replay"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per workload")
    parser.add_argument("--code", default=None, help="the gemmtune commit measured")
    parser.add_argument(
        "--py-spy", type=float, default=None, metavar="S",
        help="dump each worker's stack every S seconds (py-spy on the PATH)",
    )  # fmt: skip
    parser.add_argument(
        "--postgres", default=None,
        help="a PostgreSQL server's admin URL, or pgserver to start one: each run on a fresh "
        "database there, not on SQLite",
    )  # fmt: skip
    parser.add_argument(
        "--no-baseline", action="store_true",
        help="skip the one-GPU run (compare against an earlier file's by hand)",
    )  # fmt: skip
    options = parser.parse_args()
    counts = sorted(set(options.gpus or [1, 2]) | (set() if options.no_baseline else {1}))
    files = options.shapes or [default_suite()]
    every = [shape for file in files for shape in read_shapes(file)]
    shapes = list(dict.fromkeys(every))[: options.limit]
    workloads = [] if options.skip_batch else [("batch", shapes, options.trials)]
    if not options.skip_study:
        workloads.insert(0, ("study", [options.study_shape], options.study_trials))
    document: dict[str, Any] = {
        "what": "a standing fleet of gemmtune worker processes, one per GPU, on a fresh "
        + ("PostgreSQL" if options.postgres else "SQLite")
        + " database and an empty kernel cache per run: seconds from the enqueue of the workload "
        "to its last shape done (the workers' start, ready_s, apart)",
        "database": "postgresql" if options.postgres else "sqlite",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "evaluator": options.evaluator,
        "code": options.code,
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "threads_per_core": threads_per_core(),
        "shapes": [str(s) for s in shapes],
        "trials": options.trials,
        "study_settings": {"shape": str(options.study_shape), "trials": options.study_trials},
    }
    with tempfile.TemporaryDirectory(prefix="gemmtune-fleet-") as tmp, ExitStack() as stack:
        if options.postgres == "pgserver":
            options.postgres, server = own_postgres(Path(tmp))
            stack.callback(server.cleanup)  # stopped before its folder is removed
        for name, work, trials in workloads:
            runs: dict[str, Any] = document.setdefault(name, {})
            for gpus in counts:
                key = f"gpus_{gpus}"
                try:
                    runs[key] = fleet_run(
                        f"{name}-{key}", work, trials, gpus, Path(tmp), options.evaluator,
                        options.timeout, options.postgres, options.py_spy,
                    )  # fmt: skip
                except RuntimeError as exc:  # kept in the file; the other runs go on
                    runs[key] = {"gpus": gpus, "error": str(exc)}
                    print(exc, flush=True)
                if runs[key].get("provenance"):
                    document["provenance"] = runs[key]["provenance"]
                baseline = runs.get("gpus_1", {"error": "not run"})
                if gpus > 1 and "error" not in baseline and "error" not in runs[key]:
                    summary = runs[f"comparison_{gpus}"] = compare(runs["gpus_1"], runs[key])
                    print(
                        f"{name}, {gpus} GPUs: {runs['gpus_1']['wall_s']} -> "
                        f"{runs[key]['wall_s']} s ({summary['speedup']}x), measured twice: "
                        f"{summary['measured_twice']}",
                        flush=True,
                    )
                options.out.write_text(json.dumps(document, indent=1) + "\n")  # as it goes
    print(f"wrote {options.out}")


if __name__ == "__main__":
    main()
