"""A queue worker: one GPU's evaluator taking problems from the tuning queue in the database
(``storage.tune_queue``) and running each one's study, until nothing is left.

``gemmtune worker`` runs one in its own process per GPU, on any machine that reaches the
database; ``tune --gpus N`` and ``tune-batch --gpus N`` start N of them
(``tuner.run.worker_processes``). A worker takes the oldest queued problem; with none queued it
joins the running study with the fewest workers (the study's claims keep its budget exact); with
none of those either it waits while anything is still running (a lapsed lease makes it its own)
and then exits, or keeps polling with ``wait``. A heartbeat renews the lease of every entry the
worker is in, so a worker killed mid-shape loses nothing: once its lease lapses, another worker
takes the entry and its study resumes from what was stored.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from storage import tune_queue
from storage.tune_queue import Taken
from tuner.core.errors import InputError
from tuner.run.request import DEFAULT_TRIALS, WARM_START, TuneRequest
from tuner.run.runner import build_study, check_answerable
from tuner.search.evaluator import Evaluator
from tuner.search.sampler_names import DEFAULT_SAMPLER
from tuner.search.study import Progress

MAX_ATTEMPTS = 3  # a problem whose study fails this often is marked failed, not retried
POLL_S = 1.0  # how often an idle worker looks at the queue again


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker searches the problems it takes; the problems say what to search."""

    sampler: str = DEFAULT_SAMPLER
    seed: int | None = None
    trials: int | None = DEFAULT_TRIALS  # for problems queued without a budget
    timeout: float | None = None  # seconds per shape
    warm_start: int = WARM_START
    evaluator: str = "gpu"
    replay_tables: tuple[Path, ...] = ()
    database_url: str | None = None
    batch: str | None = None  # take only this command's problems
    wait: bool = False  # keep polling once the queue is empty
    lease_s: float = tune_queue.QUEUE_LEASE_S  # of queue entries and of candidate claims
    poll_s: float = POLL_S

    def request_for(self, problem: tune_queue.Problem) -> TuneRequest:
        """The request of ``problem``'s study (checked as any tune's)."""
        return TuneRequest(
            shapes=(problem.shape,),
            families=problem.families,
            accuracy=problem.accuracy,
            sampler=self.sampler,
            seed=self.seed,
            trials=problem.trials if problem.trials is not None else self.trials,
            timeout=self.timeout,
            warm_start=self.warm_start,
            evaluator=self.evaluator,
            replay_tables=self.replay_tables,
            database_url=self.database_url,
        )


@dataclass
class WorkerSummary:
    """What one worker did: studies it finished, studies it searched in, failures."""

    finished: list[Progress] = field(default_factory=list)
    searched: int = 0
    failures: list[str] = field(default_factory=list)


class _Heartbeat:
    """Renews the lease of every entry the worker is in, a third of a lease apart."""

    def __init__(self, sessions: sessionmaker[Session], lease_s: float) -> None:
        self.sessions = sessions
        self.lease_s = lease_s
        self.held: list[Taken] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="queue-heartbeat", daemon=True)
        self.thread.start()

    def add(self, taken: Taken) -> None:
        with self.lock:
            self.held.append(taken)

    def remove(self, taken: Taken) -> None:
        with self.lock:
            self.held.remove(taken)

    def _beat(self) -> None:
        while not self.stop.wait(self.lease_s / 3):
            with self.lock:
                held = list(self.held)
            if held:
                try:
                    with self.sessions.begin() as session:
                        tune_queue.renew_entries(session, held, self.lease_s)
                except Exception:  # the database is away: the next beat tries again
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def worker_name(label: str) -> str:
    """Who took an entry, to read in the queue: host, process and GPU."""
    return f"{socket.gethostname()}:{os.getpid()}:{label}"


def run_worker(
    settings: WorkerSettings,
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    label: str,
    on_done: Callable[[Progress], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
) -> WorkerSummary:
    """Take problems for ``evaluator`` (named ``label``, e.g. ``gpu1``) until the queue (the
    settings' batch of it) has nothing queued or running, or forever with ``settings.wait``;
    ``on_done`` is told each study this worker finished, ``on_failure`` each failed attempt."""
    summary = WorkerSummary()
    name = worker_name(label)
    device = evaluator.device.name
    heartbeat = _Heartbeat(sessions, settings.lease_s)
    try:
        while True:
            with sessions() as session:
                taken = tune_queue.take_next(
                    session, name, device, settings.lease_s, settings.batch
                ) or tune_queue.join_running(session, device, settings.lease_s, settings.batch)
                busy = taken is None and tune_queue.has_work(session, device, settings.batch)
            if taken is None:
                if not (busy or settings.wait):
                    return summary
                time.sleep(settings.poll_s)
                continue
            heartbeat.add(taken)
            try:
                _tune(taken, settings, evaluator, sessions, label, summary, on_done, on_failure)
            finally:
                heartbeat.remove(taken)
    finally:
        heartbeat.close()


def _tune(
    taken: Taken,
    settings: WorkerSettings,
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    label: str,
    summary: WorkerSummary,
    on_done: Callable[[Progress], None] | None,
    on_failure: Callable[[str], None] | None,
) -> None:
    """Search ``taken``'s study; the last worker out re-measures its finalists and marks the
    entry done. A failure is stored with the entry (queued again up to ``MAX_ATTEMPTS``; a
    problem this worker cannot answer at all, failed at once) and the worker goes on."""
    problem = taken.problem
    try:
        request = settings.request_for(problem)
        check_answerable(evaluator, [problem.shape], problem.families, problem.accuracy)
        study, notes = build_study(
            request, problem.shape, evaluator, sessions, label, taken.joined, settings.lease_s
        )
        try:
            study.prepare()
            progress = study.search(request.trials, request.timeout)
            summary.searched += 1
            with sessions.begin() as session:
                last = tune_queue.leave_entry(session, taken)
            if last:
                progress.notes[:0] = notes
                outcome = study.finish(progress)
                with sessions.begin() as session:
                    tune_queue.mark_done(session, taken, study.name, outcome.evaluated)
                summary.finished.append(outcome)
                if on_done is not None:
                    on_done(outcome)
        finally:
            study.close()
    except Exception as exc:  # stored with the entry; the worker goes on with the next
        retry = not isinstance(exc, InputError) and taken.attempt < MAX_ATTEMPTS
        error = f"{problem.shape.label()}: {type(exc).__name__}: {exc}"
        summary.failures.append(error)
        with sessions.begin() as session:
            tune_queue.mark_failed(session, taken, error, retry)
        if on_failure is not None:
            on_failure(error)
