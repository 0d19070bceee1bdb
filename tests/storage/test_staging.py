"""Staged imports on both backends: all or nothing whatever fails, the same rows and best
configs as the one-transaction bulk write, and (SQLite) other writers commit while an import
stages its rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

import storage
from storage import staging
from storage.bulk import Record
from tests.conftest import NewDatabase

from .factories import A100, H100, SQUARE, measurement

SMALL = storage.ShapeIn(128, 256, 512)
NEW_GPU = storage.DeviceIn("NVIDIA L4", "sm_89", 58)


def records() -> list[Record]:
    """Eleven records over three devices and two shapes: ties, finals, failures, untrusted."""
    final: dict[str, Any] = {"phase": "final"}
    return [
        (H100, SQUARE, measurement(ms=3.0, config_name="a")),
        (H100, SQUARE, measurement(ms=1.0, config_name="b")),
        (H100, SQUARE, measurement(ms=1.0, config_name="c")),
        (H100, SQUARE, measurement(ms=2.0, config_name="d", **final)),
        (H100, SQUARE, measurement(ms=None, status="timeout", config_name="e")),
        (A100, SMALL, measurement(ms=0.2, config_name="f")),
        (A100, SMALL, measurement(ms=0.1, config_name="g", trusted=False)),
        (A100, SMALL, measurement(ms=0.05, status="wrong_result", config_name="h")),
        (NEW_GPU, SMALL, measurement(ms=0.9, config_name="i")),
        (NEW_GPU, SMALL, measurement(ms=0.7, config_name="j")),
        (NEW_GPU, SQUARE, measurement(ms=5.0, config_name="k")),
    ]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "STAGE_BATCH", 3)


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return storage.make_session_factory(engine)


def summary(sessions: sessionmaker[Session]) -> tuple[Any, ...]:
    """Best configs, measurements in id order, devices and shapes."""
    with sessions() as session:
        bests = sorted(
            (b.device.name, b.shape.m, b.measurement.config_name)
            for b in storage.best_configs(session)
        )
        rows = session.scalars(select(storage.Measurement).order_by(storage.Measurement.id))
        names = [(r.device.name, r.config_name, r.ms) for r in rows]
        devices = session.scalar(select(func.count()).select_from(storage.Device))
        shapes = session.scalar(select(func.count()).select_from(storage.Shape))
    return bests, names, devices, shapes


@pytest.mark.usefixtures("small_batches")
def test_staged_write_stores_what_the_bulk_write_stores(
    sessions: sessionmaker[Session], new_database: NewDatabase
) -> None:
    assert staging.write_staged(sessions, records()) == 11
    other = storage.make_engine(new_database())
    storage.upgrade(other)
    bulk = storage.make_session_factory(other)
    with bulk.begin() as session:
        storage.record_measurements(session, records())
    try:
        assert summary(sessions) == summary(bulk)
        bests = summary(sessions)[0]
        assert ("NVIDIA H100 80GB HBM3", 4096, "d") in bests  # the final outranks faster ones
        assert ("NVIDIA A100-SXM4-80GB", 128, "f") in bests  # untrusted and failed never best
    finally:
        other.dispose()


@pytest.mark.usefixtures("small_batches")
def test_a_failure_while_staging_leaves_nothing(sessions: sessionmaker[Session]) -> None:
    before = summary(sessions)

    def fail_on_second_batch(done: int, total: int) -> None:
        if done > staging.STAGE_BATCH:
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        staging.write_staged(sessions, records(), fail_on_second_batch)
    assert summary(sessions) == before


@pytest.mark.usefixtures("small_batches")
def test_a_failure_in_the_merge_leaves_nothing(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    with sessions.begin() as session:
        storage.record_measurement(session, H100, SQUARE, measurement(ms=9.0, config_name="z"))
    before = summary(sessions)

    def broken(session: Session, offers: list[Any]) -> None:
        raise RuntimeError("merge failed")

    monkeypatch.setattr(staging, "offer_all", broken)
    with pytest.raises(RuntimeError, match="merge failed"):
        staging.write_staged(sessions, records())
    assert summary(sessions) == before  # no measurement, and no new device or shape either
    monkeypatch.undo()
    assert staging.write_staged(sessions, records()) == 11  # the same connection pool works on


@pytest.fixture
def sqlite_sessions(tmp_path: Path) -> Iterator[tuple[sessionmaker[Session], Path]]:
    path = tmp_path / "shared.db"
    engine = storage.make_engine(f"sqlite:///{path}")
    storage.upgrade(engine)
    yield storage.make_session_factory(engine), path
    engine.dispose()


@pytest.mark.usefixtures("small_batches")
def test_other_writers_commit_while_an_import_stages(
    sqlite_sessions: tuple[sessionmaker[Session], Path],
) -> None:
    sessions, path = sqlite_sessions
    seen: list[int] = []

    def another_writer(done: int, total: int) -> None:
        """Between two staging batches: another process's write must not wait at all."""
        if done >= total:
            return
        other = sqlite3.connect(path, timeout=0)  # no busy wait: a held lock fails at once
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute(
                "INSERT INTO device (name, arch, sm_count) VALUES (?, 'sm_75', 40)", (f"T4-{done}",)
            )
            other.commit()
            # Nothing of the import is visible yet.
            seen.append(other.execute("SELECT count(*) FROM measurement").fetchone()[0])
        finally:
            other.close()

    assert staging.write_staged(sessions, records(), another_writer) == 11
    assert seen and set(seen) == {0}
    with sessions() as session:
        names = {d.name for d in storage.list_devices(session)}
        assert {f"T4-{done}" for done in (3, 6, 9)} <= names
        assert storage.count_measurements(session) == 11
