"""A worker prepares its next study while its current study's finalists are re-measured
(``tuner.run.lookahead``; the workers of ``tuner.run.multi_gpu`` and the queue workers of
``tuner.run.queue_worker``): on a replay whose re-measurement of the first shape waits to see the
second shape's preparation, with the order of events recorded."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import select

from storage import open_database, tune_queue
from storage.models import QueueEntry
from storage.tune_queue import DONE, Problem
from tests.tuner.fakes import Forwarding
from tuner.core.config import Config
from tuner.core.result import Comparison
from tuner.core.shape import Shape
from tuner.run.lookahead import Lookahead, StartOnce
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.queue_worker import WorkerSettings, run_worker
from tuner.run.request import TuneRequest
from tuner.run.tune import tune
from tuner.search.replay import ReplayEvaluator

FIRST, SECOND = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000)
# How long the first shape's finalists wait to see the second shape prepared: long enough for a
# loaded machine, and only ever waited in full when nothing prepares beside them.
WAIT_S = 20.0


class Watching(Forwarding):
    """Records when the first shape's finalists begin and end and when the second shape's study
    first asks what it can measure (its preparation). Each waits for the other, up to
    :data:`WAIT_S`: the finalists for the preparation, the preparation for the finalists to
    begin (the study may be prepared a moment before the finalists' first request)."""

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.events: list[str] = []
        self.finalists_begun = threading.Event()
        self.second_seen = threading.Event()

    def measured_configs(self, shape: Shape) -> set[str] | None:
        if shape == SECOND and not self.second_seen.is_set():
            self.finalists_begun.wait(WAIT_S)
            self.events.append("second shape prepared")
            self.second_seen.set()
        return super().measured_configs(shape)

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        if shape == FIRST and "first finalists begin" not in self.events:
            self.events.append("first finalists begin")
            self.finalists_begun.set()
            self.second_seen.wait(WAIT_S)
            self.events.append("first finalists end")
        return super().compare(configs, shape, rounds, budget_ms)


def test_the_next_shape_is_prepared_while_the_finalists_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ahead.db'}"
    watching = Watching(ReplayEvaluator())
    request = TuneRequest((FIRST, SECOND), ("warptile",), trials=4, warm_start=0, database_url=url)
    outcomes = tune(request, workers=Workers([Worker(0, watching)]), sessions=open_database(url))
    assert watching.events == [
        "first finalists begin",
        "second shape prepared",
        "first finalists end",
    ]
    # Both studies ran to the end, each re-measuring its finalists, in the request's order.
    assert [o.study.split("|")[1] for o in outcomes] == [str(FIRST), str(SECOND)]
    assert all(o.evaluated == 4 and o.finalists for o in outcomes)


def test_a_lookahead_hands_over_what_it_built_or_what_it_raised() -> None:
    assert Lookahead(lambda: 42).take() == 42

    def broken() -> int:
        raise RuntimeError("the database went away")

    with pytest.raises(RuntimeError, match="went away"):
        Lookahead(broken).take()


def test_start_once_builds_at_most_once() -> None:
    builds: list[int] = []
    ahead = StartOnce(lambda: builds.append(1) or len(builds))
    assert ahead.started is None and not builds  # nothing until asked
    ahead.start()
    ahead.start()
    assert ahead.started is not None and ahead.started.take() == 1 and builds == [1]


def test_a_queue_worker_prepares_its_next_problem_while_the_finalists_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    sessions = open_database(url)
    with sessions.begin() as session:
        problems = [Problem(s, "exact", "", ("warptile",), 4) for s in (FIRST, SECOND)]
        tune_queue.enqueue(session, problems)
    watching = Watching(ReplayEvaluator())
    ready: list[str] = []
    settings = WorkerSettings(sampler="random", seed=3, warm_start=0, database_url=url)
    summary = run_worker(settings, watching, sessions, "gpu0", on_ready=ready.append)
    assert watching.events == [
        "first finalists begin",
        "second shape prepared",
        "first finalists end",
    ]
    assert [o.study.split("|")[1] for o in summary.finished] == [str(FIRST), str(SECOND)]
    assert all(o.evaluated == 4 and o.finalists for o in summary.finished)
    # Each outcome's seconds count the worker's writes to the queue around its study.
    assert all(o.seconds["queue"] > 0 for o in summary.finished)
    assert not summary.failures
    with sessions() as session:
        states = session.scalars(select(QueueEntry.state).order_by(QueueEntry.id)).all()
    assert states == [DONE, DONE]
    # Told once, before any study, where the cost model's rates came from.
    assert len(ready) == 1 and "rates" in ready[0]


def test_a_queue_worker_takes_its_next_problem_before_its_search_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the moment a search has nothing more to propose, beside its last measurements; and
    never the problem it is leaving."""
    from tests.tuner.searches_under_way import watch_searches
    from tuner.run.queue_worker import _QueueWorker

    searching = watch_searches(monkeypatch)
    taken: list[tuple[str, list[str]]] = []  # (problem taken, searches under way then)
    next_study = _QueueWorker.next_study

    def watched_next(self: _QueueWorker, *args: object) -> object:
        under_way = list(searching)
        made = next_study(self, *args)  # type: ignore[arg-type]
        if made is not None:
            taken.append((str(made.taken.problem.shape), under_way))
        return made

    monkeypatch.setattr(_QueueWorker, "next_study", watched_next)
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    sessions = open_database(url)
    with sessions.begin() as session:
        problems = [Problem(s, "exact", "", ("warptile",), 4) for s in (FIRST, SECOND)]
        tune_queue.enqueue(session, problems)
    settings = WorkerSettings(sampler="random", seed=3, warm_start=0, database_url=url)
    summary = run_worker(settings, ReplayEvaluator(), sessions, "gpu0")
    assert [o.study.split("|")[1] for o in summary.finished] == [str(FIRST), str(SECOND)]
    assert taken == [(str(FIRST), []), (str(SECOND), [str(FIRST)])]
