"""A worker whose studies keep failing stops taking problems, so that a broken GPU (or worker
process) does not spend the attempts of every problem in the queue; its problems go back to the
queue and a healthy worker tunes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from storage import open_database, tune_queue
from storage.models import QueueEntry
from storage.tune_queue import DONE, FAILED, QUEUED, Problem
from tests.tuner.fakes import Forwarding
from tuner.core.config import Config
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.run import queue_worker
from tuner.run.queue_worker import MAX_ATTEMPTS, WorkerSettings, WorkerStopped, run_worker
from tuner.search.replay import ReplayEvaluator

# The shapes the replay table holds for warptile.
SHAPES = [Shape(4096, 4096, 4096), Shape(1000, 1000, 1000), Shape(128, 4096, 4096)]


class BrokenOn(Forwarding):
    """Replay, except that every measurement of the shapes in ``broken`` raises, as a GPU that
    fell off the bus (or a poisoned worker process) does."""

    def __init__(self, inner: ReplayEvaluator, broken: set[Shape]) -> None:
        super().__init__(inner)
        self.broken = broken

    def evaluate(self, config: Config, shape: Shape) -> Result:
        if shape in self.broken:
            raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")
        return self.inner.evaluate(config, shape)


def _queue(tmp_path: Path, shapes: list[Shape]) -> tuple[str, object]:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    sessions = open_database(url)
    with sessions.begin() as session:
        tune_queue.enqueue(session, [Problem(s, "exact", "", ("warptile",), 3) for s in shapes])
    return url, sessions


def _states(sessions: object) -> list[tuple[str, int]]:
    with sessions() as session:  # type: ignore[operator]
        rows = session.execute(select(QueueEntry.state, QueueEntry.attempt).order_by(QueueEntry.id))
        return [(state, attempt) for state, attempt in rows]


def test_a_worker_whose_studies_keep_failing_stops_and_leaves_its_problems_to_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue_worker, "FAILURES_IN_A_ROW", 2)  # one problem is left untaken
    url, sessions = _queue(tmp_path, SHAPES)
    settings = WorkerSettings(sampler="random", seed=1, warm_start=0, database_url=url)
    replay = ReplayEvaluator()
    broken = BrokenOn(replay, set(SHAPES))
    with pytest.raises(WorkerStopped, match="2 problems failed in a row"):
        run_worker(settings, broken, sessions, "gpu1")  # type: ignore[arg-type]
    states = _states(sessions)
    # The two it failed are queued again after one attempt each (none failed for good: a
    # problem it failed comes after the others for its next take), the third is untouched.
    assert states == [(QUEUED, 1), (QUEUED, 1), (QUEUED, 0)]

    summary = run_worker(settings, replay, sessions, "gpu0")  # type: ignore[arg-type]
    assert len(summary.finished) == len(SHAPES) and not summary.failures
    assert {state for state, _ in _states(sessions)} == {DONE}


def test_a_worker_goes_on_while_its_failures_are_not_in_a_row(tmp_path: Path) -> None:
    """Some problems failing, with successes between, is the problems' matter, not the GPU's."""
    url, sessions = _queue(tmp_path, SHAPES)
    settings = WorkerSettings(sampler="random", seed=1, warm_start=0, database_url=url)
    broken = BrokenOn(ReplayEvaluator(), {SHAPES[0], SHAPES[2]})
    summary = run_worker(settings, broken, sessions, "gpu0")  # type: ignore[arg-type]
    assert [o.study.split("|")[1] for o in summary.finished] == [str(SHAPES[1])]
    # Each broken problem was tried until it failed for good; their failures came in a row,
    # but of two problems only, fewer than FAILURES_IN_A_ROW: the worker never stopped.
    assert len(summary.failures) == 2 * MAX_ATTEMPTS
    assert [state for state, _ in _states(sessions)] == [FAILED, DONE, FAILED]
