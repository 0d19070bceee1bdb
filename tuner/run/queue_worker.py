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
from tuner.run.lookahead import StartOnce
from tuner.run.request import DEFAULT_TRIALS, WARM_START, TuneRequest
from tuner.run.runner import build_study, check_answerable, device_rates
from tuner.run.thread_switch import quick_thread_switches
from tuner.search.evaluator import Evaluator
from tuner.search.sampler_names import DEFAULT_SAMPLER
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Progress, Study

MAX_ATTEMPTS = 3  # a problem whose study fails this often is marked failed, not retried
# A worker whose studies of this many different problems fail in a row stops: the fault is
# likelier its GPU's (or its process's) than the problems', and going on would spend every queued
# problem's attempts. The same problem failing again is that problem's matter (MAX_ATTEMPTS).
FAILURES_IN_A_ROW = 3
POLL_S = 0.25  # how often an idle worker looks at the queue again


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
    compile_workers: int | None = None  # None: the GPU's share of the host's cores
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


class WorkerStopped(RuntimeError):
    """A worker stopped taking problems because its studies kept failing."""


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


@quick_thread_switches()
def run_worker(
    settings: WorkerSettings,
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    label: str,
    on_done: Callable[[Progress], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> WorkerSummary:
    """Take problems for ``evaluator`` (named ``label``, e.g. ``gpu1``) until the queue (the
    settings' batch of it) has nothing queued or running, or forever with ``settings.wait``;
    ``on_done`` is told each study this worker finished, ``on_failure`` each failed attempt.

    First the device's rates are made ready (stored, kept or probed now: ``device_rates``), so
    no study waits for a probe; ``on_ready`` is then told where they came from.

    While a study's last candidates and its finalists are measured (device busy, CPU idle), the
    next problem is taken and its study prepared beside them (``tuner.run.lookahead``): its space
    enumerated, its warm starts read and its first candidates compiling. The studies run with a
    short thread switch interval (``tuner.run.thread_switch``)."""
    summary = WorkerSummary()
    notes: list[str] = []
    device_rates(SqlRecorder(sessions, settings.lease_s, worker=label), evaluator, notes)
    if on_ready is not None:
        on_ready("; ".join(notes))
    heartbeat = _Heartbeat(sessions, settings.lease_s)
    worker = _QueueWorker(settings, evaluator, sessions, label, heartbeat, summary, on_failure)
    try:
        upcoming = worker.next_study()
        while True:
            if upcoming is None:
                with sessions() as session:
                    busy = tune_queue.has_work(session, evaluator.device.name, settings.batch)
                if not (busy or settings.wait):
                    return summary
                time.sleep(settings.poll_s)
                upcoming = worker.next_study()
                continue
            upcoming = worker.tune(upcoming, on_done)
            if len(worker.failing) >= FAILURES_IN_A_ROW:
                if upcoming is not None:  # taken ahead as the last study ended: not ours now
                    worker.give_back(upcoming)
                raise WorkerStopped(
                    f"{label}: {len(worker.failing)} problems failed in a row on this worker "
                    f"(last: {summary.failures[-1]}); it stops so that other workers take them"
                )
    finally:
        heartbeat.close()


@dataclass
class _Prepared:
    """A problem this worker holds, with its study built and prepared (or why it could not be)."""

    taken: Taken
    request: TuneRequest | None = None
    study: Study | None = None
    notes: list[str] = field(default_factory=list)
    error: Exception | None = None


class _QueueWorker:
    """One worker's steps: take and prepare the next problem, tune one, record a failure."""

    def __init__(
        self,
        settings: WorkerSettings,
        evaluator: Evaluator,
        sessions: sessionmaker[Session],
        label: str,
        heartbeat: _Heartbeat,
        summary: WorkerSummary,
        on_failure: Callable[[str], None] | None,
    ) -> None:
        self.settings, self.evaluator, self.sessions = settings, evaluator, sessions
        self.label, self.name = label, worker_name(label)
        self.heartbeat, self.summary, self.on_failure = heartbeat, summary, on_failure
        self.failing: set[int] = set()  # entries whose study failed here since one succeeded
        self.failed_here: set[int] = set()  # entries whose study ever failed on this worker

    def next_study(self, leaving: Taken | None = None) -> _Prepared | None:
        """The oldest queued problem, else a place in the running study with the fewest workers
        (not the one this worker is ``leaving``) that still has candidates to claim, held (its
        lease renewed by the heartbeat) and its study prepared; None when neither."""
        settings, device = self.settings, self.evaluator.device.name
        excluding = None if leaving is None else leaving.entry_id
        while True:
            with self.sessions() as session:
                taken = tune_queue.take_next(
                    session, self.name, device, settings.lease_s, settings.batch, self.failed_here
                ) or tune_queue.join_running(
                    session, device, settings.lease_s, settings.batch, excluding
                )
            if taken is None:
                return None
            self.heartbeat.add(taken)
            prepared = _Prepared(taken)
            problem = taken.problem
            try:
                request = prepared.request = settings.request_for(problem)
                check_answerable(
                    self.evaluator, [problem.shape], problem.families, problem.accuracy
                )
                prepared.study, prepared.notes = build_study(
                    request, problem.shape, self.evaluator, self.sessions, self.label,
                    taken.joined, settings.lease_s,
                )  # fmt: skip
                if taken.joined and self._left_full(prepared.study, taken, request.trials):
                    continue  # another running study may still have room
                prepared.study.prepare()
            except Exception as exc:  # reported when its turn comes, as a failed attempt
                prepared.error = exc
            return prepared

    def _left_full(self, study: Study, taken: Taken, trials: int | None) -> bool:
        """Give up a place just taken in a running study whose budget of ``trials`` is claimed in
        full: there is nothing in it to search, and the last of its workers to leave re-measures
        its finalists, so a worker that stayed would make them wait until it came to this study
        after its own. True when it left; False when it stays: the study has room, or the others
        left meanwhile and this worker, the last in it, finishes it."""
        if not study.claimed_in_full(trials):
            return False
        with self.sessions.begin() as session:
            if not tune_queue.give_up(session, taken):
                return False
        self.heartbeat.remove(taken)
        study.close()
        return True

    def tune(
        self, prepared: _Prepared, on_done: Callable[[Progress], None] | None
    ) -> _Prepared | None:
        """Search ``prepared``'s study; the last worker out re-measures its finalists and marks
        the entry done. The next problem is taken and prepared beside the end of it, from the
        moment the search has nothing more to propose (never this one). A failure is stored with
        the entry (queued again up to ``MAX_ATTEMPTS``; a problem this worker cannot answer at
        all, failed at once) and the worker goes on. Returns the next problem, prepared, where
        it was taken meanwhile."""
        taken, study, request = prepared.taken, prepared.study, prepared.request
        ahead = StartOnce(lambda: self.next_study(taken), f"{self.label}-next")

        try:
            if prepared.error is not None:
                raise prepared.error
            assert study is not None and request is not None  # prepared without an error
            progress = study.search(request.trials, request.timeout, on_tail=ahead.start)
            self.summary.searched += 1
            began = time.perf_counter()
            with self.sessions.begin() as session:
                last = tune_queue.leave_entry(session, taken)
            queue_s = time.perf_counter() - began
            if last:
                ahead.start()  # where the search ended without a tail (out of time or configs)
                progress.notes[:0] = prepared.notes
                outcome = study.finish(progress)
                began = time.perf_counter()
                with self.sessions.begin() as session:
                    tune_queue.mark_done(session, taken, study.name, outcome.evaluated)
                queue_s += time.perf_counter() - began
                outcome.seconds["queue"] = round(queue_s, 3)  # beside the study's own parts
                self.summary.finished.append(outcome)
                if on_done is not None:
                    on_done(outcome)
            else:
                study.close_trials()  # the worker finishing the study finishes its own copy
            self.failing.clear()
        except Exception as exc:  # stored with the entry; the worker goes on with the next
            self._failed(taken, exc)
        finally:
            self.heartbeat.remove(taken)
            if study is not None:
                study.close()
        return None if ahead.started is None else ahead.started.take()

    def give_back(self, prepared: _Prepared) -> None:
        """Put a problem this worker holds back in the queue for another worker."""
        self.heartbeat.remove(prepared.taken)
        if prepared.study is not None:
            prepared.study.close()
        with self.sessions.begin() as session:
            tune_queue.mark_failed(
                session, prepared.taken, f"{self.label} stopped before starting it", retry=True
            )

    def _failed(self, taken: Taken, exc: Exception) -> None:
        if not isinstance(exc, InputError):  # the problem's own fault says nothing of the GPU
            self.failing.add(taken.entry_id)
            self.failed_here.add(taken.entry_id)
        retry = not isinstance(exc, InputError) and taken.attempt < MAX_ATTEMPTS
        error = f"{taken.problem.shape.label()}: {type(exc).__name__}: {exc}"
        self.summary.failures.append(error)
        with self.sessions.begin() as session:
            tune_queue.mark_failed(session, taken, error, retry)
        if self.on_failure is not None:
            self.on_failure(error)
