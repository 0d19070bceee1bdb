"""A tune on several GPUs as queue workers: the shapes enqueued as one batch, a ``gemmtune
worker`` process per GPU taking them, and the batch watched until every shape is tuned.

Processes, not threads: each worker is its own Python, so the CPU work around each study
(enumeration, the sampler, warm starts, recording) runs in parallel; threads of one process
took turns at it, and a third GPU added nothing (issue 44). The workers meet only in the
database: the queue hands each shape to one of them (and lets an idle one join a running study),
and the studies' claims keep every budget exact. A worker that cannot start (its GPU is broken
or taken) exits at once; its share goes to the others, and the run reports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import storage
from storage import tune_queue
from storage.tune_queue import BatchProgress, Problem
from tuner.core.errors import InputError
from tuner.run.claim_order import ragged_first
from tuner.run.queue_worker import WorkerSettings
from tuner.run.request import TuneRequest
from tuner.run.runner import check_families_compute, families_for

WATCH_S = 0.5  # how often the batch's progress is read
# More workers than this on one SQLite file wait for each other's writes: on four H200 the
# workers' database seconds doubled, and the batch took 39.3 s there against 34.5 s on
# PostgreSQL in the same lease (benchmarks/results/h200x4-fleet-2026-11-28d.json,
# h200x4-fleet-pg-2026-11-28.json). Two workers on SQLite scaled 1.94x
# (h200x2-fleet-batch-2026-11-28c.json).
SQLITE_WORKERS = 2


def settings_of(request: TuneRequest, batch: str | None = None) -> WorkerSettings:
    """How workers started for ``request`` search: its sampler, budget, evaluator, database."""
    return WorkerSettings(
        sampler=request.sampler,
        seed=request.seed,
        trials=request.trials,
        timeout=request.timeout,
        warm_start=request.warm_start,
        evaluator=request.evaluator,
        replay_tables=request.replay_tables,
        database_url=storage.database_url(request.database_url),
        batch=batch,
    )


def worker_command(settings: WorkerSettings, device_index: int) -> list[str]:
    """The command line of one ``gemmtune worker`` process on device ``device_index``: what a
    user on another machine types, with this machine's Python."""
    command = [sys.executable, "-m", "tuner.cli", "worker", "--gpu", str(device_index)]
    command += ["--evaluator", settings.evaluator, "--sampler", settings.sampler]
    command += ["--warm-start", str(settings.warm_start), "--lease", str(settings.lease_s)]
    if settings.database_url is not None:
        command += ["--db", settings.database_url]
    if settings.trials is not None:
        command += ["--trials", str(settings.trials)]
    if settings.seed is not None:
        command += ["--seed", str(settings.seed)]
    if settings.timeout is not None:
        command += ["--timeout", str(settings.timeout)]
    if settings.batch is not None:
        command += ["--batch", settings.batch]
    if settings.compile_workers is not None:
        command += ["--compile-workers", str(settings.compile_workers)]
    if settings.wait:
        command.append("--wait")
    for table in settings.replay_tables:
        command += ["--replay-table", str(table)]
    return command


@dataclass
class WorkerProcess:
    """One started worker: its device, its process, and the last line it wrote to stderr."""

    device_index: int
    process: subprocess.Popen[str]
    last_error: str = ""
    relays: list[threading.Thread] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"gpu{self.device_index}"


Relay = Callable[[str, str, bool], None]  # (worker label, line, from stderr)


def start_worker_processes(
    settings: WorkerSettings, devices: Sequence[int], relay: Relay | None = None
) -> list[WorkerProcess]:
    """A worker process per device, each line it writes handed to ``relay``."""
    started = []
    for index in devices:
        process = subprocess.Popen(
            worker_command(settings, index),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            # Rich wraps at 80 columns on a pipe; the lines are relayed whole, prefixed.
            env={**os.environ, "COLUMNS": os.environ.get("COLUMNS", "1000")},
        )
        worker = WorkerProcess(index, process)
        for stream, is_err in ((process.stdout, False), (process.stderr, True)):
            thread = threading.Thread(
                target=_relay_lines, args=(worker, stream, is_err, relay), daemon=True
            )
            thread.start()
            worker.relays.append(thread)
        started.append(worker)
    return started


def _relay_lines(worker: WorkerProcess, stream: object, is_err: bool, relay: Relay | None) -> None:
    for line in stream:  # type: ignore[attr-defined]
        line = line.rstrip("\n")
        if is_err and line.strip():
            worker.last_error = line
        if relay is not None:
            relay(worker.label, line, is_err)


def database_note(database_url: str | None, workers: int) -> str | None:
    """A line for the user where ``workers`` processes would share one SQLite file (``None``:
    the default database, $GEMMTUNE_DATABASE_URL or SQLite) and more than
    :data:`SQLITE_WORKERS` of them would wait for each other's writes; None otherwise."""
    url = storage.database_url(database_url)
    if workers <= SQLITE_WORKERS or not url.startswith("sqlite"):
        return None
    return (
        f"note: {workers} workers will write to one SQLite file and wait for each other's "
        f"writes; for more than {SQLITE_WORKERS}, give them PostgreSQL "
        "(--db postgresql+psycopg://USER@HOST/DB; docs/tuning.md, 'Queue and workers')"
    )


def problems_of(request: TuneRequest) -> list[Problem]:
    """The request's shapes as queue problems in the order to queue them (shapes with ragged
    rows first, ``tuner.run.claim_order``), refused here (before anything is queued) where no
    family it searches computes them, or a replay has no measurements of them."""
    if request.evaluator == "replay":
        from tuner.search.replay import ReplayEvaluator

        replay = ReplayEvaluator(list(request.replay_tables) or None)
        for shape in request.shapes:
            replay.check_covers(shape, request.families)
    for shape in request.shapes:
        check_families_compute(shape, request.families or families_for(shape, request.accuracy))
    return ragged_first(
        [
            Problem(shape, request.accuracy, "", request.families, request.trials)
            for shape in request.shapes
        ]
    )


@dataclass(frozen=True)
class QueueRun:
    """What a batch on worker processes came to."""

    progress: BatchProgress
    seconds: float
    failed_workers: list[str]  # "gpu2 (exit 2): why", for each worker that ended in error
    errors: list[str]  # the error of each shape that failed


def tune_on_processes(
    request: TuneRequest,
    devices: Sequence[int],
    relay: Relay | None = None,
    on_progress: Callable[[BatchProgress, float], None] | None = None,
) -> QueueRun:
    """Enqueue ``request``'s shapes as one batch and tune them with a worker process per device
    of ``devices``; ``on_progress`` is told the batch's progress (and the seconds since the
    start) whenever a shape ends. Returns once every worker has exited."""
    problems = problems_of(request)
    batch = uuid.uuid4().hex
    settings = settings_of(request, batch)
    engine = storage.open_engine(settings.database_url, optuna_tables=True)
    sessions = storage.make_session_factory(engine)
    try:
        with sessions.begin() as session:
            tune_queue.enqueue(session, problems, batch=batch, again=True)
        start = time.monotonic()
        workers = start_worker_processes(settings, devices, relay)
        shown = -1
        try:
            while any(w.process.poll() is None for w in workers):
                time.sleep(WATCH_S)
                with sessions() as session:
                    progress = tune_queue.batch_progress(session, batch)
                if progress.done + progress.failed != shown and on_progress is not None:
                    shown = progress.done + progress.failed
                    on_progress(progress, time.monotonic() - start)
        finally:
            for worker in workers:  # interrupted: leave nothing running
                if worker.process.poll() is None:
                    worker.process.terminate()
                worker.process.wait()
                for thread in worker.relays:
                    thread.join()
        with sessions() as session:
            progress = tune_queue.batch_progress(session, batch)
            errors = [
                e.error or ""
                for e in tune_queue.batch_entries(session, batch)
                if e.state == tune_queue.FAILED
            ]
        seconds = time.monotonic() - start
        if on_progress is not None and progress.done + progress.failed != shown:
            on_progress(progress, seconds)
    finally:
        engine.dispose()
    failed = [
        f"{w.label} (exit {w.process.returncode}): {w.last_error or 'no message'}"
        for w in workers
        if w.process.returncode != 0
    ]
    if not progress.finished and len(failed) == len(workers):
        raise InputError(f"no worker could tune the batch: {'; '.join(failed)}")
    return QueueRun(progress, seconds, failed, errors)
