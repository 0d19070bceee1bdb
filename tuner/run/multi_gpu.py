"""A tune on several GPUs of one host: a worker per GPU, shapes spread over them, and idle
GPUs joining the studies still running.

Each GPU has its own evaluator (for ``gpu``, a measuring child process that owns the device,
``tuner.gpu.worker``); the evaluators compile on one set of pools (``CompilePools``: every core
works for every GPU, and a config is compiled once per architecture). The study loops run in
threads of this process, one per GPU. Threads rather than processes: a loop spends its time
waiting (for its child's measurement, for compiles, for the database), never computing on the
device itself, so the interpreter lock costs little; sharing the compile pools between threads
needs a lock, where processes would need a server of their own. Each worker has its own study
object and recorder; they share a study, and its trial budget, through the database's claims
(``storage.claims``: a claim is refused once the study holds its budget of claims), exactly as
workers in other processes or on other machines do.

Scheduling: every shape is a job per device model (a study is one device model's); a worker
takes the next job nobody has started, and when none is left it joins the open job with the
fewest workers, so that one shape on two GPUs is one study searched by both. A job closes to
newcomers once a worker has left it (its budget is spent or its time is up), and the last
worker to leave re-measures its finalists. A worker takes its next job (never the one it is
leaving) as soon as its search has nothing more to propose, and prepares that job's study beside
its last measurements and finalists (``tuner.run.lookahead``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from tuner.core.shape import Shape
from tuner.gpu.nvrtc import NvrtcCompiler
from tuner.kernels.compile_pool import CompilePools, default_workers
from tuner.run.lookahead import Lookahead, StartOnce
from tuner.run.request import TuneRequest, check_evaluator
from tuner.run.runner import ProgressReport, build_study, start_gpu
from tuner.search.evaluator import Evaluator
from tuner.search.study import Progress, Study


@dataclass(frozen=True)
class Worker:
    """One GPU's evaluator and its index among the visible devices (on a replay, a label)."""

    device_index: int
    evaluator: Evaluator

    @property
    def label(self) -> str:
        return f"gpu{self.device_index}"


class Workers:
    """The workers of a tune and the compile pools they share; :meth:`close` ends them all."""

    def __init__(self, workers: Sequence[Worker], pools: CompilePools | None = None) -> None:
        if not workers:
            raise ValueError("a tune needs at least one worker")
        self.workers = list(workers)
        self.pools = pools

    def close(self) -> None:
        for worker in self.workers:
            worker.evaluator.close()
        if self.pools is not None:
            self.pools.close()


def start_workers(
    evaluator: str,
    devices: Sequence[int],
    replay_tables: Sequence[Path] | None = None,
    pools: CompilePools | None = None,
) -> Workers:
    """A worker per device index: ``gpu`` evaluators started at once, sharing one set of
    compile pools (``pools``, default every core but one per GPU; the workers close them), or
    replays of the same tables."""
    if evaluator == "replay":
        from tuner.search.replay import ReplayEvaluator

        first = ReplayEvaluator(list(replay_tables) if replay_tables else None)
        replays = [first] + [first.replica() for _ in devices[1:]]
        return Workers([Worker(i, r) for i, r in zip(devices, replays, strict=True)])
    check_evaluator(evaluator)
    pools = pools or CompilePools(default_workers(len(devices)), NvrtcCompiler)
    with ThreadPoolExecutor(len(devices)) as starting:
        futures = [
            starting.submit(start_gpu, "--evaluator gpu", 100.0, i, pools, len(devices))
            for i in devices
        ]
    evaluators, errors = [], []
    for future in futures:
        error = future.exception()
        if error is None:
            evaluators.append(future.result())
        else:
            errors.append(error)
    if errors:  # one GPU that cannot start ends the tune: say why, leave nothing running
        for started in evaluators:
            started.close()
        pools.close()
        raise errors[0]
    return Workers([Worker(i, e) for i, e in zip(devices, evaluators, strict=True)], pools)


@dataclass(eq=False)
class _Job:
    """One study to run: a shape on one device model, searched by one worker or several."""

    shape: Shape
    device: str
    report: ProgressReport | None
    searching: int = 0  # workers in it now
    devices: list[int] = field(default_factory=list)  # every worker that joined it
    started: bool = False
    closed: bool = False  # no newcomers: a worker has left it
    admitted: bool = False  # its deadline is set and its report started
    deadline: float | None = None
    outcome: Progress | None = None


class _JobReport:
    """A job's progress as its workers report it: one at a time, never going backwards."""

    def __init__(self, report: ProgressReport) -> None:
        self.report = report
        self.shown = -1
        self.lock = threading.Lock()

    def start(self, label: str, total: int) -> None:
        with self.lock:
            self.report.start(label, total)

    def update(self, progress: Progress) -> None:
        with self.lock:
            if progress.evaluated >= self.shown:
                self.shown = progress.evaluated
                self.report.update(progress)


class _Board:
    """Which job each worker takes next, and who finishes it: one lock for every decision."""

    def __init__(self, jobs: list[_Job], on_done: Callable[[Progress], None] | None) -> None:
        self.jobs = jobs
        self.on_done = on_done
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []

    def next_for(self, worker: Worker, leaving: _Job | None = None) -> _Job | None:
        """A job nobody has started, else the open job with the fewest workers other than the
        one ``worker`` is ``leaving`` (it is still searching it: its next job is taken as its
        search ends); None when nothing is left for ``worker`` (or a worker failed)."""
        with self.lock:
            if self.errors:
                return None
            mine = [job for job in self.jobs if job.device == worker.evaluator.device.name]
            job = next((job for job in mine if not job.started), None)
            if job is None:
                joinable = [
                    job for job in mine if job.started and not job.closed and job is not leaving
                ]
                job = min(joinable, key=lambda job: job.searching, default=None)
            if job is not None:
                job.started = True
                job.searching += 1
                job.devices.append(worker.device_index)
            return job

    def admit(self, job: _Job, target: int, timeout: float | None) -> float | None:
        """The seconds ``job`` has left; the first worker ready to search it starts its clock
        (``timeout`` seconds from now) and its report (``target`` candidates)."""
        with self.lock:
            if not job.admitted:
                job.admitted = True
                job.deadline = None if timeout is None else time.monotonic() + timeout
                if job.report is not None:
                    job.report.start(str(job.shape), target)
            return None if job.deadline is None else max(0.0, job.deadline - time.monotonic())

    def leave(self, job: _Job) -> bool:
        """A worker is done searching ``job``; True for the last one, which finishes it."""
        with self.lock:
            job.closed = True
            job.searching -= 1
            return job.searching == 0

    def give_up(self, worker: Worker, job: _Job) -> bool:
        """``worker`` leaves ``job`` before searching it, unless every other worker has left
        (the last one in it finishes it): True when it left. No newcomers from now on."""
        with self.lock:
            if job.searching <= 1:
                return False
            job.closed = True
            job.searching -= 1
            job.devices.remove(worker.device_index)
            return True

    def finished(self, job: _Job, progress: Progress) -> None:
        with self.lock:
            job.outcome = progress
            if self.on_done is not None:
                self.on_done(progress)

    def fail(self, error: BaseException) -> None:
        with self.lock:
            self.errors.append(error)


def _prepare(
    worker: Worker, job: _Job, board: _Board, request: TuneRequest, sessions: sessionmaker[Session]
) -> tuple[Study, list[str]] | None:
    """``worker``'s study of ``job``, built and prepared (space enumerated, first candidates
    compiling), and its notes; None when ``worker`` joined a study whose budget is claimed in
    full and gave its place up (the last worker in a study re-measures its finalists: one that
    stayed with nothing to search would make them wait until it came to the study)."""
    joined = len(job.devices) - 1
    study, notes = build_study(request, job.shape, worker.evaluator, sessions, worker.label, joined)
    try:
        if joined and study.claimed_in_full(request.trials) and board.give_up(worker, job):
            study.close()
            return None
        study.prepare()
    except BaseException:
        study.close()
        raise
    return study, notes


_Upcoming = tuple[_Job, Study, list[str]] | None


def _upcoming(
    worker: Worker,
    board: _Board,
    request: TuneRequest,
    sessions: sessionmaker[Session],
    leaving: _Job | None = None,
) -> _Upcoming:
    """The next job for ``worker`` (never the one it is ``leaving``) with its prepared study,
    or None when nothing is left."""
    while (job := board.next_for(worker, leaving)) is not None:
        prepared = _prepare(worker, job, board, request, sessions)
        if prepared is not None:
            return (job, *prepared)
    return None


def _search(
    worker: Worker,
    job: _Job,
    study: Study,
    notes: list[str],
    board: _Board,
    request: TuneRequest,
    sessions: sessionmaker[Session],
) -> Lookahead[_Upcoming] | None:
    """``worker``'s part of ``job``: search it; the last one out re-measures the finalists.
    The worker's next job is prepared beside the end of it (``tuner.run.lookahead``), from the
    moment the search has nothing more to propose, and returned."""
    ahead = StartOnce(
        lambda: _upcoming(worker, board, request, sessions, job), f"{worker.label}-next"
    )
    try:
        left = board.admit(job, study.target(request.trials), request.timeout)
        update = None if job.report is None else job.report.update
        progress = study.search(request.trials, left, update, on_tail=ahead.start)
        if board.leave(job):
            progress.notes[:0] = notes
            if len(job.devices) > 1:
                shared = ", ".join(str(i) for i in sorted(job.devices))
                progress.notes.append(f"searched by {len(job.devices)} workers (devices {shared})")
            ahead.start()  # where the search ended without a tail (out of time, or of configs)
            board.finished(job, study.finish(progress))
        else:
            study.close_trials()  # the worker finishing the study finishes its own copy
    except BaseException:
        if ahead.started is not None:
            _discard(ahead.started)
        raise
    finally:
        study.close()
    return ahead.started


def _discard(ahead: Lookahead[_Upcoming]) -> None:
    """Close a study prepared ahead that will not run (the worker is failing)."""
    with contextlib.suppress(Exception):  # the worker's own error is the one to report
        upcoming = ahead.take()
        if upcoming is not None:
            upcoming[1].close()


def _work(
    worker: Worker, board: _Board, request: TuneRequest, sessions: sessionmaker[Session]
) -> None:
    upcoming = _upcoming(worker, board, request, sessions)
    while upcoming is not None:
        job, study, notes = upcoming
        ahead = _search(worker, job, study, notes, board, request, sessions)
        if ahead is not None:
            upcoming = ahead.take()
        else:
            upcoming = _upcoming(worker, board, request, sessions)


def _work_in_thread(
    worker: Worker, board: _Board, request: TuneRequest, sessions: sessionmaker[Session]
) -> None:
    try:
        _work(worker, board, request, sessions)
    except BaseException as exc:  # reported by the main thread, which re-raises it
        board.fail(exc)


def tune_shapes(
    request: TuneRequest,
    workers: Workers,
    sessions: sessionmaker[Session],
    new_report: Callable[[], ProgressReport] | None = None,
    on_done: Callable[[Progress], None] | None = None,
) -> list[Progress]:
    """Tune every shape of ``request`` on ``workers``, recording into the database behind
    ``sessions``: a study per shape and device model, spread over the workers (one worker: one
    study after another). ``new_report`` gives each study a progress report; ``on_done`` is told
    each study's outcome as it ends (one at a time). The outcomes come back in the order of the
    request's shapes."""
    models = list(dict.fromkeys(w.evaluator.device.name for w in workers.workers))
    jobs = [
        _Job(shape, model, None if new_report is None else _JobReport(new_report()))
        for shape in request.shapes
        for model in models
    ]
    board = _Board(jobs, on_done)
    threads = [
        threading.Thread(
            target=_work_in_thread, args=(w, board, request, sessions), name=w.label, daemon=True
        )
        for w in workers.workers[1:]
    ]
    for thread in threads:
        thread.start()
    try:
        _work(workers.workers[0], board, request, sessions)
    except BaseException as exc:
        board.fail(exc)
        raise
    for thread in threads:
        thread.join()
    if board.errors:
        raise board.errors[0]
    return [job.outcome for job in jobs if job.outcome is not None]
