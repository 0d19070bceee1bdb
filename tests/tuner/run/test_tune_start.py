"""What a tune does around its studies (``tuner.run.tune``): the spaces' rule step is walked
while the workers start, once per family and pins however many shapes share them, and one GPU
worker serves every shape of the command."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import select

import storage
import tuner.gpu.worker as gpu_worker
import tuner.run.tune as run_tune
from storage import open_database
from tests.tuner.fake_gpu import FakeCompiler, fake_worker
from tests.tuner.gpu.test_gpu_selection import fake_gpu_host
from tuner.core.phases import Phase
from tuner.core.shape import Shape
from tuner.kernels.compile_pool import CompilePools
from tuner.kernels.families import Family
from tuner.kernels.rule_verdicts import rule_verdicts
from tuner.kernels.space import _valid_points, enumerate_rules
from tuner.run.multi_gpu import Worker, Workers, start_workers
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
    walk = enumerate_rules

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


def test_one_gpu_worker_process_serves_every_shape_of_a_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A batch of two shapes on one (fake) GPU: every stored measurement of both studies,
    screening and final, came from the one worker process started for the command, and the
    device's rates were probed and stored once."""
    fake_gpu_host(monkeypatch, 1)
    monkeypatch.setattr(gpu_worker, "_worker_main", fake_worker)
    monkeypatch.setattr(FakeCompiler, "compiled", [])
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path / "cache"))
    workers = start_workers("gpu", (0,), pools=CompilePools(2, FakeCompiler))
    url = f"sqlite:///{tmp_path / 'one-worker.db'}"
    request = TuneRequest((BIG, MID), ("warptile",), trials=3, warm_start=0, database_url=url)
    try:
        outcomes = run_tune.tune(request, workers=workers)
    finally:
        workers.close()
    assert [o.evaluated for o in outcomes] == [3, 3]
    sessions = open_database(url)
    with sessions() as session:
        rows = [
            row
            for o in outcomes
            for phase in (Phase.SCREENING, Phase.FINAL)
            for row in storage.measurements_for_study(session, o.study, phase=phase)
        ]
        rates = session.scalars(select(storage.DeviceRates)).all()
    assert len(rows) >= 6 and len({row.provenance["worker_pid"] for row in rows}) == 1
    assert len(rates) == 1
