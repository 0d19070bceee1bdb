"""Conformance: two processes recording at once lose nothing and agree on one best config."""

from __future__ import annotations

import multiprocessing
import random
from typing import Any

from sqlalchemy import Engine, func, select

from storage import (
    BestConfig,
    Measurement,
    make_engine,
    make_session_factory,
    record_measurement,
)

from .factories import H100, SQUARE, measurement

PER_PROCESS = 50


def write_measurements(url: str, worker: int, times: list[float], start: Any) -> None:
    """Child process: one transaction per measurement, as a tuning worker does."""
    engine = make_engine(url)
    factory = make_session_factory(engine)
    start.wait(timeout=60)  # both workers are connected: now they really overlap
    for i, ms in enumerate(times):
        with factory.begin() as session:
            record_measurement(
                session, H100, SQUARE, measurement(ms=ms, config_name=f"w{worker}_{i}")
            )
    engine.dispose()


def test_two_processes_record_concurrently(engine: Engine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    # Mostly decreasing, interleaved between the workers: nearly every write is a new best,
    # so the two processes keep contending for the same best_config row.
    times = [
        round(2.0 - 0.01 * i + random.Random(i).uniform(0, 0.015), 6)
        for i in range(2 * PER_PROCESS)
    ]
    assert len(set(times)) == len(times)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [
        context.Process(
            target=write_measurements,
            args=(url, w, times[w::2], start),
        )
        for w in range(2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0]

    with make_session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(Measurement)) == 2 * PER_PROCESS
        bests = session.scalars(select(BestConfig)).all()
        assert len(bests) == 1
        assert bests[0].measurement.ms == min(times)
        stored = session.scalars(select(Measurement.ms)).all()
        assert sorted(ms for ms in stored if ms is not None) == sorted(times)
        assert len(stored) == len(times)
