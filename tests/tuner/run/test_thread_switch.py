"""Studies run with a short thread switch interval (``tuner.run.thread_switch``), and the
process gets its own interval back when the last of them ends."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storage import open_database, tune_queue
from storage.tune_queue import Problem
from tuner.core.shape import Shape
from tuner.run.queue_worker import WorkerSettings, run_worker
from tuner.run.request import TuneRequest
from tuner.run.thread_switch import STUDY_SWITCH_INTERVAL_S, quick_thread_switches
from tuner.run.tune import tune
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import Progress

SHAPE = Shape(1000, 1000, 1000)
USUAL_S = 0.005  # Python's default


@pytest.fixture(autouse=True)
def usual_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(USUAL_S)
    yield
    sys.setswitchinterval(before)


def test_the_interval_is_short_inside_and_given_back_after() -> None:
    with quick_thread_switches():
        assert sys.getswitchinterval() == pytest.approx(STUDY_SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() == pytest.approx(USUAL_S)


def test_the_interval_comes_back_when_the_last_of_two_threads_leaves() -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with quick_thread_switches():
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert entered.wait(10)
    with quick_thread_switches():
        pass
    still_short = sys.getswitchinterval()  # the other thread's block has not ended
    leave.set()
    thread.join()
    assert still_short == pytest.approx(STUDY_SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() == pytest.approx(USUAL_S)


def test_a_shorter_interval_of_the_process_is_kept() -> None:
    sys.setswitchinterval(STUDY_SWITCH_INTERVAL_S / 2)
    with quick_thread_switches():
        assert sys.getswitchinterval() == pytest.approx(STUDY_SWITCH_INTERVAL_S / 2)


def test_an_error_inside_gives_the_interval_back() -> None:
    with pytest.raises(RuntimeError), quick_thread_switches():
        raise RuntimeError("a study failed")
    assert sys.getswitchinterval() == pytest.approx(USUAL_S)


def _intervals_seen() -> tuple[list[float], Callable[[Progress], None]]:
    """A list, and an ``on_done`` that adds the switch interval as each study ends."""
    seen: list[float] = []

    def done(_: Progress) -> None:
        seen.append(sys.getswitchinterval())

    return seen, done


def test_a_tune_runs_its_studies_with_the_short_interval(tmp_path: Path) -> None:
    seen, done = _intervals_seen()
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    request = TuneRequest((SHAPE,), ("warptile",), trials=2, evaluator="replay", database_url=url)
    [outcome] = tune(request, sessions=open_database(url), on_done=done)
    assert outcome.evaluated == 2
    assert seen == [pytest.approx(STUDY_SWITCH_INTERVAL_S)]
    assert sys.getswitchinterval() == pytest.approx(USUAL_S)


def test_a_queue_worker_runs_its_studies_with_the_short_interval(tmp_path: Path) -> None:
    seen, done = _intervals_seen()
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    sessions = open_database(url)
    with sessions.begin() as session:
        tune_queue.enqueue(session, [Problem(SHAPE, "exact", "", ("warptile",), 2)])
    settings = WorkerSettings(sampler="random", seed=3, warm_start=0, database_url=url)
    summary = run_worker(settings, ReplayEvaluator(), sessions, "gpu0", on_done=done)
    assert len(summary.finished) == 1
    assert seen == [pytest.approx(STUDY_SWITCH_INTERVAL_S)]
    assert sys.getswitchinterval() == pytest.approx(USUAL_S)
