"""Failure injection: a process killed while it creates a new database's schema leaves a
database that the next start (or ``gemmtune db upgrade``) brings to the current schema."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine.reflection import Inspector

import storage.schema
from storage import (
    DeviceIn,
    MeasurementIn,
    ShapeIn,
    StorageError,
    current_revision,
    head_revision,
    make_engine,
    open_database,
    record_measurement,
    upgrade,
)
from storage.models import Base

ROOT = Path(__file__).resolve().parents[2]
# A child that exits hard (no cleanup, as kill -9 would) when Alembic is about to create its
# table number ``sys.argv[2]``.
DIE_AT_TABLE = textwrap.dedent(
    """
    import os, sys
    from alembic.operations import Operations
    import storage
    real, made = Operations.create_table, [0]
    def create_table(self, *args, **kwargs):
        made[0] += 1
        if made[0] == int(sys.argv[2]):
            os._exit(9)
        return real(self, *args, **kwargs)
    Operations.create_table = create_table
    storage.open_database(sys.argv[1])
    """
)
OPEN = "import sys, storage; storage.open_database(sys.argv[1], optuna_tables=True)"


def _child(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", *args], env=env, cwd=ROOT)


def _write_one(url: str) -> None:
    """The database is usable: a measurement goes in and reads back."""
    sessions = open_database(url)
    with sessions.begin() as session:
        record_measurement(
            session,
            DeviceIn("H100", "sm_90", 132),
            ShapeIn(64, 64, 64),
            MeasurementIn("smem_tiling", "smem_32x32x8", {"BM": 32}, ms=0.01),
        )
    with sessions() as session:
        assert session.execute(text("SELECT count(*) FROM measurement")).scalar_one() == 1
    sessions.kw["bind"].dispose()


@pytest.mark.parametrize("dies_at", [2, 4, 6])
def test_exit_between_tables_leaves_no_half_schema(tmp_path: Path, dies_at: int) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert _child(DIE_AT_TABLE, url, str(dies_at)).wait() == 9
    engine = make_engine(url)
    try:  # nothing of the schema committed: the next start makes all of it
        assert not set(inspect(engine).get_table_names()) & set(Base.metadata.tables)
    finally:
        engine.dispose()
    _write_one(url)


def test_kill_9_at_random_moments_of_first_start(tmp_path: Path) -> None:
    rng = random.Random(23)
    for attempt in range(8):
        path = tmp_path / f"new-{attempt}.db"
        child = _child(OPEN, f"sqlite:///{path}")
        while not path.exists() and child.poll() is None:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _child(OPEN, f"sqlite:///{path}").wait() == 0  # the next start
        _write_one(f"sqlite:///{path}")


def _half_made(url: str) -> Engine:
    """What an older gemmtune left when killed during its first start: some tables, no stamp."""
    engine = make_engine(url)
    with engine.begin() as connection:
        for name in ("device", "shape"):
            Base.metadata.tables[name].create(connection)
    return engine


def test_upgrade_repairs_an_unstamped_half_schema(db_url: str) -> None:
    engine = _half_made(db_url)
    try:
        upgrade(db_url)  # what `gemmtune db upgrade` does
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()
    _write_one(db_url)


def test_unstamped_tables_with_rows_are_refused_not_dropped(db_url: str) -> None:
    engine = _half_made(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO device (name, arch, sm_count) VALUES ('A', 'x', 1)")
            )
        with pytest.raises(StorageError, match=r"rows \(device\) but no schema version"):
            upgrade(engine)
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM device")).scalar_one() == 1
    finally:
        engine.dispose()


def _waits_for_advisory_lock(engine: Engine) -> bool:
    """Some session of ``engine``'s database waits for an advisory lock."""
    query = (
        "SELECT count(*) FROM pg_locks JOIN pg_database ON pg_database.oid = database "
        "WHERE datname = current_database() AND locktype = 'advisory' AND NOT granted"
    )
    with engine.connect() as connection:
        return bool(connection.execute(text(query)).scalar_one())


def test_a_schema_another_start_committed_meanwhile_is_kept(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first starts on PostgreSQL: the first finds no stamp and, before it lists the tables,
    the second makes and commits the whole schema. The first must not take those tables for a
    half-made schema and drop them (its upgrade then stamps nothing new: the schema would be
    gone with the stamp kept). Its schema lock makes the second wait for it instead."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite's BEGIN IMMEDIATE serialises first starts; this is PostgreSQL's lock")
    watcher = make_engine(db_url)
    first = threading.get_ident()
    first_found_no_stamp, second_done = threading.Event(), threading.Event()
    real_revision = MigrationContext.get_current_revision

    def revision(context: MigrationContext) -> str | None:
        found = real_revision(context)
        if threading.get_ident() == first:
            first_found_no_stamp.set()
        return found

    def inspect_once_the_second_is_done_or_held(connection: Connection) -> Inspector:
        if threading.get_ident() == first:
            while not second_done.is_set() and not _waits_for_advisory_lock(watcher):
                time.sleep(0.01)
        return inspect(connection)  # the function storage.schema calls

    monkeypatch.setattr(MigrationContext, "get_current_revision", revision)
    monkeypatch.setattr(storage.schema, "inspect", inspect_once_the_second_is_done_or_held)
    errors: list[BaseException] = []

    def second_start() -> None:
        first_found_no_stamp.wait(timeout=60)
        try:
            upgrade(db_url)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            second_done.set()

    second = threading.Thread(target=second_start)
    second.start()
    try:
        upgrade(db_url)
    finally:
        second.join(timeout=60)
        watcher.dispose()
    assert not errors, errors
    engine = make_engine(db_url)
    try:
        assert current_revision(engine) == head_revision()
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    _write_one(db_url)
