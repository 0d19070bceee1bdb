"""A worker does not stay in a running study whose budget is claimed in full (``Study.
claimed_in_full``): it gives its place up before preparing it, unless every other worker has
left, in which case it stays and finishes the study. On the workers of one process
(``tuner.run.multi_gpu``) and on the queue's (``tuner.run.queue_worker``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import storage
from storage import open_database, tune_queue
from storage.models import QueueEntry
from storage.tune_queue import Problem
from tuner.core.shape import Shape
from tuner.run import multi_gpu
from tuner.run.multi_gpu import Worker
from tuner.run.queue_worker import WorkerSettings, WorkerSummary, _Heartbeat, _QueueWorker
from tuner.run.request import TuneRequest
from tuner.run.runner import build_study
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import Study

SHAPE = Shape(4096, 4096, 4096)
FAMILIES = ("warptile",)
TRIALS = 4


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    factory = open_database(f"sqlite:///{tmp_path / 'joins.db'}", optuna_tables=True)
    yield factory
    factory.kw["bind"].dispose()


def _request(sessions: sessionmaker[Session]) -> TuneRequest:
    url = sessions.kw["bind"].url.render_as_string(hide_password=False)
    return TuneRequest([SHAPE], FAMILIES, trials=TRIALS, evaluator="replay", database_url=url)


def _claim(sessions: sessionmaker[Session], study: Study, count: int) -> None:
    """What the worker searching ``study`` holds: claims on ``count`` of its candidates."""
    study.prepare()
    study.close()  # its Optuna storage: the claims are all this test needs of it
    with sessions.begin() as session:
        for name in sorted(study.candidates)[:count]:
            assert storage.claim_candidate(session, study.name, name, "owner:1", 60.0, TRIALS)


def test_a_study_knows_when_its_budget_is_claimed_in_full(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    owner, _ = build_study(_request(sessions), SHAPE, replay, sessions, "owner")
    joiner, _ = build_study(_request(sessions), SHAPE, replay, sessions, "joiner", joined=1)
    _claim(sessions, owner, TRIALS - 1)
    assert not joiner.claimed_in_full(TRIALS)  # one candidate left to claim
    assert joiner.claimed_in_full(TRIALS - 1)
    assert not joiner.claimed_in_full(None)  # every candidate: not known before the space


def _board_with_a_running_job(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], claimed: int
) -> tuple[multi_gpu._Board, multi_gpu._Job, Worker]:
    owner, joiner = Worker(0, replay), Worker(1, replay.replica())
    job = multi_gpu._Job(SHAPE, replay.device.name, None)
    board = multi_gpu._Board([job], None)
    assert board.next_for(owner) is job
    study, _ = build_study(_request(sessions), SHAPE, replay, sessions, owner.label)
    _claim(sessions, study, claimed)
    return board, job, joiner


def test_a_worker_gives_up_its_place_in_a_study_with_no_room(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    board, job, joiner = _board_with_a_running_job(replay, sessions, TRIALS)
    prepared: list[str] = []
    monkeypatch.setattr(Study, "prepare", lambda self: prepared.append(self.name))
    assert multi_gpu._upcoming(joiner, board, _request(sessions), sessions) is None
    assert prepared == []  # nothing walked or compiled for it
    assert (job.searching, job.devices, job.closed) == (1, [0], True)
    assert board.leave(job)  # the owner, last out, finishes the study as soon as it is done


def test_a_worker_stays_in_a_study_with_room(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    board, job, joiner = _board_with_a_running_job(replay, sessions, TRIALS - 1)
    upcoming = multi_gpu._upcoming(joiner, board, _request(sessions), sessions)
    assert upcoming is not None and upcoming[0] is job  # a candidate left: it joins
    upcoming[1].close()


def test_the_last_worker_left_in_a_study_with_no_room_stays_to_finish_it(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    board, job, joiner = _board_with_a_running_job(replay, sessions, TRIALS)
    assert board.next_for(joiner) is job  # it joins, nothing else to take; then the owner
    assert not board.leave(job)  # leaves first, and the joiner is the last in the study
    prepared = multi_gpu._prepare(joiner, job, board, _request(sessions), sessions)
    assert prepared is not None  # it stays, to finish the study
    prepared[0].close()
    assert board.leave(job)


def test_a_queue_worker_gives_up_its_place_in_a_study_with_no_room(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sessions.kw["bind"].url.render_as_string(hide_password=False)
    with sessions.begin() as session:
        tune_queue.enqueue(session, [Problem(SHAPE, "exact", "", FAMILIES, TRIALS)])
    with sessions() as session:
        owner = tune_queue.take_next(session, "owner:1", replay.device.name)
    assert owner is not None
    monkeypatch.setattr(Study, "claimed_in_full", lambda self, trials: True)
    settings = WorkerSettings(sampler="random", seed=3, warm_start=0, database_url=url)
    heartbeat = _Heartbeat(sessions, settings.lease_s)
    try:
        worker = _QueueWorker(settings, replay, sessions, "gpu1", heartbeat, WorkerSummary(), None)
        assert worker.next_study() is None  # it joined, found no room and left
        with sessions() as session:
            entry = session.scalars(select(QueueEntry)).one()
        assert (entry.searching, entry.joinable) == (1, False)
        with sessions() as session:
            assert tune_queue.leave_entry(session, owner) is True  # the owner finishes it
    finally:
        heartbeat.close()
