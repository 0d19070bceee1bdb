"""Several workers on one study through the SQL recorder, on SQLite and PostgreSQL: a killed
worker's claims lapse and the study finishes; the trial budget is exact; a crash between a
measurement and its Optuna trial leaves neither a missing nor an extra trial."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import optuna
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import storage
import tuner.study
from storage import Claimed, open_database
from tests.conftest import NewDatabase
from tests.tuner.fakes import Forwarding
from tuner.config import Config
from tuner.evaluate import Result
from tuner.replay import ReplayEvaluator
from tuner.shape import Shape
from tuner.sql_recorder import SqlRecorder
from tuner.study import Study

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
    monkeypatch.setattr(tuner.study, "CLAIM_POLL_S", 0.05)


def _measured(sessions: sessionmaker[Session], study: str) -> list[str]:
    with sessions() as session:
        return [row.config_name for row in storage.measurements_for_study(session, study)]


def test_a_killed_workers_claims_lapse_and_the_study_finishes(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    study = Study(SMALL, WARPTILE, replay, SqlRecorder(sessions), "exhaustive", finalists=0)
    orphans = sorted(study.candidates)[:2]
    with sessions.begin() as session:  # what a worker killed mid-measurement leaves behind
        for name in orphans:
            assert storage.claim_candidate(session, study.name, name, "dead:1", lease_s=1.0)
    progress = study.run(trials=None, timeout_s=120)  # the bound only turns a hang into a failure
    assert progress.evaluated == len(study.candidates) == 12
    assert sorted(_measured(sessions, study.name)) == sorted(study.candidates)
    assert progress.notes == []


def test_a_live_claim_is_waited_for_then_reported(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    study = Study(SMALL, WARPTILE, replay, SqlRecorder(sessions), "exhaustive", finalists=0)
    busy = sorted(study.candidates)[-1]
    with sessions.begin() as session:  # a slow worker, alive
        assert storage.claim_candidate(session, study.name, busy, "slow:1", lease_s=600.0)
    progress = study.run(trials=None, timeout_s=10)  # time for the 11 others, even when loaded
    assert progress.evaluated == len(study.candidates) - 1
    assert busy not in _measured(sessions, study.name)
    (note,) = progress.notes
    assert "1 candidate(s) of this study are claimed by other workers" in note
    assert busy in note


def test_a_heartbeat_keeps_a_slow_measurement_claimed(
    replay: ReplayEvaluator, sessions: sessionmaker[Session]
) -> None:
    slow, other = SqlRecorder(sessions, lease_s=0.3), SqlRecorder(sessions)
    config = sorted(Study(SMALL, WARPTILE, replay, slow, "exhaustive").candidates)[0]
    assert slow.claim("s", config) is Claimed.TAKEN
    time.sleep(1.0)  # three leases: only the heartbeat keeps it
    assert other.claim("s", config) is Claimed.HELD
    assert other.held_elsewhere("s") == {config}


class Slow(Forwarding):
    """Replay, a little slower, so that two workers' candidates overlap in time."""

    def evaluate(self, config: Config, shape: Shape) -> Result:
        time.sleep(0.02)
        return self.inner.evaluate(config, shape)


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


class Killed(BaseException):
    """Stands for kill -9 (not an Exception: nothing in the study may catch it)."""


def test_a_kill_between_measurement_and_trial_leaves_one_trial_each(
    replay: ReplayEvaluator, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    recorder = SqlRecorder(sessions)
    study = Study(BIG, WARPTILE, replay, recorder, "random", seed=4, optuna_storage=url)
    writes = {"record": 0, "trial": 0}

    def die_after_the_third_candidates_first_write(kind: str) -> None:
        writes[kind] += 1
        if writes[kind] == 3 and writes[kind] > min(writes.values()):
            raise Killed  # whichever of the two writes comes first, the second never happens

    real_record, real_trial = recorder.record, study.stored.create_new_trial  # type: ignore[union-attr]

    def record(*args: object) -> None:
        real_record(*args)  # type: ignore[arg-type]
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
    resumed = Study(
        BIG, WARPTILE, replay, SqlRecorder(sessions), "random", seed=4, optuna_storage=url
    )
    assert resumed.run(trials=5).evaluated == 5
    trials = optuna.load_study(study_name=study.name, storage=url).trials
    measured = _measured(sessions, study.name)
    assert sorted(t.user_attrs["config"] for t in trials) == sorted(measured)
    assert len(measured) == len(set(measured)) == 5
    with sessions() as session:
        numbers = session.scalars(
            select(func.count()).where(
                storage.Measurement.study == study.name, storage.Measurement.trial_number.is_(None)
            )
        ).one()
    assert numbers == 0  # every measurement knows its trial
