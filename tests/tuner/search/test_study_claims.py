"""Several workers on one study through the SQL recorder, on SQLite and PostgreSQL: a killed
worker's claims lapse and the study finishes; the trial budget is exact; a crash between a
measurement and its Optuna trial leaves neither a missing nor an extra trial."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import optuna
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import storage
import storage.claims
import tuner.search.study
from storage import open_database
from tests.conftest import NewDatabase
from tests.tuner.fakes import Forwarding
from tuner.core.claims import Claimed
from tuner.core.config import Config
from tuner.core.phases import Phase
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study
from tuner.search.trial_mirror import TrialMirror

SMALL, BIG = Shape(64, 64, 64), Shape(4096, 4096, 4096)
WARPTILE = ("warptile",)


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


@pytest.fixture
def sessions(new_database: NewDatabase) -> Iterator[sessionmaker[Session]]:
    factory = open_database(new_database(), optuna_tables=True)
    yield factory
    factory.kw["bind"].dispose()


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tuner.search.study, "CLAIM_POLL_S", 0.05)


def _measured(sessions: sessionmaker[Session], study: str) -> list[str]:
    with sessions() as session:
        return [row.config_name for row in storage.measurements_for_study(session, study)]


def test_a_killed_workers_claims_lapse_and_the_study_finishes(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    study = Study(SMALL, WARPTILE, replay, SqlRecorder(sessions), "exhaustive", finalists=0)
    study.prepare()
    orphans = sorted(study.candidates)[:2]
    with sessions.begin() as session:  # what a worker killed mid-measurement leaves behind
        for name in orphans:
            assert storage.claim_candidate(session, study.name, name, "dead:1", lease_s=1.0)
    progress = study.run(trials=None, timeout_s=120)  # the bound only turns a hang into a failure
    assert progress.evaluated == len(study.candidates) == 12
    assert sorted(_measured(sessions, study.name)) == sorted(study.candidates)
    assert progress.notes == []


def test_a_budget_full_of_a_claim_that_lapses_unseen_is_spent_in_full(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead worker's claim fills the budget, and lapses between this worker's claim (refused:
    the budget is full) and its look at the claims held elsewhere (none): the study goes on
    and spends its budget, instead of ending one candidate short."""
    recorder = SqlRecorder(sessions)
    study = Study(SMALL, WARPTILE, replay, recorder, "exhaustive", finalists=0)
    study.prepare()
    orphan = sorted(study.candidates)[-1]
    with sessions.begin() as session:
        assert storage.claim_candidate(session, study.name, orphan, "dead:1", lease_s=1.0)
    # What the study sees when it looks: the claim gone, while the budget still counts it.
    monkeypatch.setattr(recorder, "held_elsewhere", lambda name: set())
    progress = study.run(trials=3, timeout_s=120)  # the bound only turns a hang into a failure
    assert progress.evaluated == 3
    measured = _measured(sessions, study.name)
    assert len(measured) == len(set(measured)) == 3


class StudyClock:
    """Virtual time for the study loop: measuring takes none of it, and a poll's sleep moves
    it on at once, so a timeout ends the wait for other workers and never cuts the study's
    own candidates short, however busy the machine."""

    def __init__(self) -> None:
        self.elapsed_s = 0.0

    def monotonic(self) -> float:
        return self.elapsed_s

    def sleep(self, seconds: float) -> None:
        self.elapsed_s += seconds


def test_a_live_claim_is_waited_for_then_reported(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = StudyClock()
    monkeypatch.setattr(tuner.search.study, "time", clock)
    study = Study(SMALL, WARPTILE, replay, SqlRecorder(sessions), "exhaustive", finalists=0)
    study.prepare()
    busy = sorted(study.candidates)[-1]
    with sessions.begin() as session:  # a slow worker, alive
        assert storage.claim_candidate(session, study.name, busy, "slow:1", lease_s=600.0)
    timeout_s = 1.0
    progress = study.run(trials=None, timeout_s=timeout_s)
    assert progress.evaluated == len(study.candidates) - 1
    # It polled for the claim until the timeout, instead of giving up on it at once.
    assert clock.elapsed_s > timeout_s - 2 * tuner.search.study.CLAIM_POLL_S
    assert busy not in _measured(sessions, study.name)
    (note,) = progress.notes
    assert "1 candidate(s) of this study are claimed by other workers" in note
    assert busy in note


class SteppedClock:
    """Virtual time for the claims: storage reads it as now, and a heartbeat's sleep moves it
    on by what the heartbeat asked for, at once, until ``stop_after_s`` have passed; that sleep
    then waits for :attr:`released`, so the claims can be looked at at that moment. A busy
    machine delays the heartbeat's renewals in real time, never in this one."""

    def __init__(self, stop_after_s: float) -> None:
        self.start = datetime.now(UTC)
        self.elapsed_s = 0.0
        self.stop_after_s = stop_after_s
        self.stopped = threading.Event()
        self.released = threading.Event()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed_s)

    def sleep(self, seconds: float) -> None:
        if self.elapsed_s >= self.stop_after_s:
            self.stopped.set()
            assert self.released.wait(timeout=60), "the test never released the heartbeat"
        self.elapsed_s += seconds


def test_a_heartbeat_keeps_a_slow_measurement_claimed(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    lease_s = 60.0
    clock = SteppedClock(stop_after_s=3 * lease_s)  # three leases: only the heartbeat keeps it
    monkeypatch.setattr(storage.claims, "utcnow", clock.now)
    slow = SqlRecorder(sessions, lease_s=lease_s, sleep=clock.sleep)
    other = SqlRecorder(sessions)
    study = Study(SMALL, WARPTILE, replay, slow, "exhaustive")
    study.prepare()
    config, lapsing = sorted(study.candidates)[:2]
    with sessions.begin() as session:  # taken alike by a worker that never renews it
        assert storage.claim_candidate(session, "s", lapsing, "killed:1", lease_s=lease_s)
    assert slow.claim("s", config) is Claimed.TAKEN
    heartbeat = next(t for t in threading.enumerate() if t.name == f"claims-{slow.worker}")
    assert clock.stopped.wait(timeout=60), "the heartbeat did not run through three leases"
    try:
        assert other.claim("s", config) is Claimed.HELD
        assert other.held_elsewhere("s") == {config}  # the unrenewed claim lapsed
        with sessions.begin() as session:
            assert storage.claim_candidate(session, "s", lapsing, "third:1") is Claimed.TAKEN
        slow.release("s", config)
    finally:
        clock.released.set()
    heartbeat.join(timeout=60)  # it stops: this worker holds no claim any more
    assert not heartbeat.is_alive()


class Slow(Forwarding):
    """Replay, a little slower, so that two workers' candidates overlap in time."""

    def evaluate(self, config: Config, shape: Shape) -> Result:
        time.sleep(0.02)
        return self.inner.evaluate(config, shape)


@pytest.mark.faults  # the abuse suite: docs/service.md
def test_two_workers_spend_the_trial_budget_exactly(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    def worker(seed: int) -> None:
        study = Study(BIG, WARPTILE, Slow(replay), SqlRecorder(sessions), "random", seed=seed)
        study.run(trials=7, timeout_s=120)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    name = Study(BIG, WARPTILE, replay, SqlRecorder(sessions), "random").name
    measured = _measured(sessions, name)
    assert len(measured) == len(set(measured)) == 7


def resume_and_check_one_trial_each(
    replay: ReplayEvaluator,
    sessions: sessionmaker[Session],
    url: str,
    name: str,
    seed: int,
    trials: int,
) -> None:
    """Run the study ``name`` again to ``trials``: every measurement has one Optuna trial."""
    resumed = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=seed, optuna_storage=url
    )
    assert resumed.name == name
    assert resumed.run(trials=trials).evaluated == trials
    stored = optuna.load_study(study_name=name, storage=url).trials
    measured = _measured(sessions, name)
    assert sorted(t.user_attrs["config"] for t in stored) == sorted(measured)
    assert len(measured) == len(set(measured)) == trials


class Killed(BaseException):
    """Stands for kill -9 (not an Exception: nothing in the study may catch it)."""


def test_a_kill_between_measurement_and_trial_leaves_one_trial_each(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    recorder = SqlRecorder(sessions)
    study = Study(BIG, WARPTILE, replay, recorder, "random", seed=4, optuna_storage=url)
    study.prepare()
    writes = {"record": 0, "trial": 0}

    def die_after_the_third_candidates_first_write(kind: str) -> None:
        writes[kind] += 1
        if writes[kind] == 3 and writes[kind] > min(writes.values()):
            raise Killed  # whichever of the two writes comes first, the second never happens

    real_record, real_trial = recorder.record, study.stored.create_new_trial  # type: ignore[union-attr]

    def record(*args: object, **kwargs: object) -> None:
        real_record(*args, **kwargs)  # type: ignore[arg-type]
        die_after_the_third_candidates_first_write("record")

    def create_new_trial(*args: object, **kwargs: object) -> int:
        trial_id = real_trial(*args, **kwargs)  # type: ignore[arg-type]
        die_after_the_third_candidates_first_write("trial")
        return trial_id

    monkeypatch.setattr(recorder, "record", record)
    monkeypatch.setattr(study.stored, "create_new_trial", create_new_trial)
    with pytest.raises(Killed):
        study.run(trials=5)
    monkeypatch.undo()
    resume_and_check_one_trial_each(replay, sessions, url, study.name, seed=4, trials=5)
    with sessions() as session:
        numbers = session.scalars(
            select(func.count()).where(
                storage.Measurement.study == study.name,
                storage.Measurement.phase == Phase.SCREENING.value,
                storage.Measurement.trial_number.is_(None),
            )
        ).one()
    assert numbers == 0  # every screened candidate knows its trial (finals are no trials)


def test_trials_written_behind_the_study_match_its_measurements(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    study = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=6, optuna_storage=url
    )
    study.run(trials=6)
    trials = optuna.load_study(study_name=study.name, storage=url).trials
    with sessions() as session:
        rows = storage.measurements_for_study(session, study.name)
        numbers = {row.config_name: row.trial_number for row in rows}
    assert [t.user_attrs["config"] for t in trials] == [row.config_name for row in rows]
    assert {t.user_attrs["config"]: t.number for t in trials} == numbers


class _TimedCompare(Forwarding):
    """Notes when each re-measurement beside cuBLAS begins."""

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.compared_at: list[float] = []

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        self.compared_at.append(time.perf_counter())
        return super().compare(configs, shape, rounds, budget_ms)


def test_the_last_trials_are_copied_while_the_finalists_run(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search does not wait for the trials' copy: its writer goes on beside the finalists'
    rounds, and the study ends with one trial per measurement."""
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    written: list[float] = []
    real_write = TrialMirror._write

    def slow_write(mirror: TrialMirror, result: Result) -> None:
        time.sleep(0.05)  # a writer behind the study (a database far away)
        real_write(mirror, result)
        written.append(time.perf_counter())

    monkeypatch.setattr(TrialMirror, "_write", slow_write)
    evaluator = _TimedCompare(replay)
    study = Study(
        BIG, WARPTILE, evaluator, SqlRecorder(sessions), "random", seed=10, optuna_storage=url
    )
    progress = study.run(trials=6)
    study.close()
    assert evaluator.compared_at and written
    assert written[-1] > evaluator.compared_at[0]  # the copy was still being written
    assert "mirror" in progress.seconds
    trials = optuna.load_study(study_name=study.name, storage=url).trials
    assert sorted(t.user_attrs["config"] for t in trials) == sorted(_measured(sessions, study.name))


def test_a_failed_trial_write_stops_the_study_and_the_next_run_adds_the_rest(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    study = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=7, optuna_storage=url
    )
    study.prepare()
    real_trial = study.stored.create_new_trial  # type: ignore[union-attr]
    written: list[int] = []

    def create_new_trial(*args: object, **kwargs: object) -> int:
        if len(written) == 2:
            raise RuntimeError("disk full")
        written.append(real_trial(*args, **kwargs))  # type: ignore[arg-type]
        return written[-1]

    monkeypatch.setattr(study.stored, "create_new_trial", create_new_trial)
    with pytest.raises(RuntimeError, match="disk full"):  # raised in the study, not lost
        study.run(trials=6)
    monkeypatch.undo()
    assert len(optuna.load_study(study_name=study.name, storage=url).trials) == 2
    resume_and_check_one_trial_each(replay, sessions, url, study.name, seed=7, trials=6)


@pytest.mark.faults  # the abuse suite: docs/service.md
def test_trials_queued_in_another_workers_writer_are_not_added_twice(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers of one process on one study: the second starts searching while the first's
    trials are still queued in its writer. Each measurement ends with exactly one trial."""
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    first = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=8, optuna_storage=url
    )
    second = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=9, optuna_storage=url
    )
    first.prepare()
    second.prepare()
    held = threading.Event()
    real_write = TrialMirror._write

    def held_write(mirror: TrialMirror, result: Result) -> None:
        # The first worker's writer waits before it takes the study's trial lock (a writer
        # behind on its queue), so the second worker finishes first.
        if mirror._storage is first.stored and not held.is_set():
            assert held.wait(timeout=60)
        real_write(mirror, result)

    monkeypatch.setattr(TrialMirror, "_write", held_write)
    searched = threading.Thread(target=lambda: first.search(trials=4))
    searched.start()
    deadline = time.monotonic() + 60
    while len(_measured(sessions, first.name)) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_measured(sessions, first.name)) == 4  # measured; its trials wait in the writer
    stored = optuna.load_study(study_name=first.name, storage=url)
    assert stored.trials == []
    progress = second.search(trials=6)  # starts while the first worker's trials are queued
    held.set()
    searched.join(timeout=60)
    second.finish(progress)
    trials = optuna.load_study(study_name=first.name, storage=url).trials
    measured = _measured(sessions, first.name)
    assert len(measured) == len(set(measured)) == 6
    assert sorted(t.user_attrs["config"] for t in trials) == sorted(measured)


def _worker_process(url: str, seed: int, trials: int, started: float) -> None:
    """One worker process of a shared study (what ``tune --gpus`` or another machine runs)."""
    sessions = open_database(url, optuna_tables=True)
    while time.time() < started:  # start together, so that the two overlap
        time.sleep(0.01)
    study = Study(
        BIG,
        WARPTILE,
        Slow(ReplayEvaluator()),
        SqlRecorder(sessions),
        "random",
        seed=seed,
        optuna_storage=url,
    )
    study.run(trials=trials, timeout_s=120)
    sessions.kw["bind"].dispose()


@pytest.mark.faults  # the abuse suite: docs/service.md
def test_worker_processes_leave_exactly_one_trial_per_measurement(
    sessions: sessionmaker[Session],
) -> None:
    """Three processes on one study, each finishing (and adding the trials it finds missing)
    while the others' writers still hold queued trials: one Optuna trial per measurement."""
    import multiprocessing

    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    start_at = time.time() + 3.0
    spawn = multiprocessing.get_context("spawn")
    workers = [
        spawn.Process(target=_worker_process, args=(url, seed, 24, start_at))
        for seed in (11, 12, 13)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
        assert worker.exitcode == 0
    name = Study(BIG, WARPTILE, ReplayEvaluator(), SqlRecorder(sessions), "random").name
    measured = _measured(sessions, name)
    trials = optuna.load_study(study_name=name, storage=url).trials
    assert len(measured) == len(set(measured)) == 24
    assert sorted(t.user_attrs["config"] for t in trials) == sorted(measured)
