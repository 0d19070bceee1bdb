"""What a tune does before its first study (``tuner.run.tune``): the spaces' rule step is walked
while the workers start, and once per family and pins however many shapes share them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

import tuner.run.tune as run_tune
from storage import open_database
from tuner.core.shape import Shape
from tuner.kernels.families import Family
from tuner.kernels.rule_verdicts import rule_verdicts
from tuner.kernels.space import _valid_points
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.request import TuneRequest
from tuner.search.replay import ReplayEvaluator

BIG, MID = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000)
# How long each side waits to see the other: only ever waited in full when they do not overlap.
WAIT_S = 20.0


def test_the_rule_step_is_walked_while_the_workers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    starting, walked = threading.Event(), threading.Event()
    walk = run_tune.enumerate_rules

    def watched_walk(family: str | Family, shape: Shape) -> int:
        if not walked.is_set():
            starting.wait(WAIT_S)
            events.append("rule step walked")
            walked.set()
        return walk(family, shape)

    def slow_start(
        evaluator: str, devices: Sequence[int], tables: Sequence[Path] | None = None
    ) -> Workers:
        events.append("workers starting")
        starting.set()
        walked.wait(WAIT_S)
        events.append("workers started")
        return Workers([Worker(0, ReplayEvaluator())])

    monkeypatch.setattr(run_tune, "enumerate_rules", watched_walk)
    monkeypatch.setattr(run_tune, "start_workers", slow_start)
    url = f"sqlite:///{tmp_path / 'start.db'}"
    request = TuneRequest((MID,), ("warptile",), trials=2, evaluator="replay", database_url=url)
    [outcome] = run_tune.tune(request, sessions=open_database(url))
    assert events == ["workers starting", "rule step walked", "workers started"]
    assert outcome.evaluated == 2


def test_two_shapes_of_one_family_set_walk_each_family_once(tmp_path: Path) -> None:
    """The rule step of a family is walked once per process and pins (the counted cache
    misses), however many shapes and studies read it."""
    rule_verdicts.cache_clear()
    _valid_points.cache_clear()
    url = f"sqlite:///{tmp_path / 'once.db'}"
    families = ("warptile", "pipelined")
    request = TuneRequest((BIG, MID), families, trials=2, warm_start=0, database_url=url)
    workers = Workers([Worker(0, ReplayEvaluator())])
    outcomes = run_tune.tune(request, workers=workers, sessions=open_database(url))
    assert [o.evaluated for o in outcomes] == [2, 2]
    assert rule_verdicts.cache_info().misses == len(families)
    assert _valid_points.cache_info().misses == len(families)
    assert _valid_points.cache_info().hits >= len(families)  # the second shape read them
