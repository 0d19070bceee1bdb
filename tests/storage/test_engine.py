"""Engine set-up: URL choice, SQLite pragmas, and one-line errors for unusable databases."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from storage import (
    DEFAULT_URL,
    URL_ENV_VAR,
    StorageError,
    count_measurements,
    database_url,
    make_engine,
    open_database,
    open_existing_database,
    with_connection_settings,
)
from tests.conftest import needs_psycopg


def _one_line_error(url: str) -> str:
    with pytest.raises(StorageError) as info:
        make_engine(url)
    message = str(info.value)
    assert message and "\n" not in message
    return message


def test_database_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV_VAR, raising=False)
    assert database_url(None) == DEFAULT_URL == "sqlite:///gemmtune.db"
    monkeypatch.setenv(URL_ENV_VAR, "postgresql+psycopg://u@h/db")
    assert database_url(None) == "postgresql+psycopg://u@h/db"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    yield engine
    engine.dispose()


def test_sqlite_connections_get_wal_busy_timeout_and_foreign_keys(sqlite_engine: Engine) -> None:
    with sqlite_engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert (connection.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) >= 1000
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == SYNCHRONOUS_NORMAL


SYNCHRONOUS_NORMAL = 1  # SQLite's numbering: OFF 0, NORMAL 1, FULL 2 (its default)


def test_optunas_own_engine_gets_the_same_sqlite_settings(tmp_path: Path) -> None:
    """Optuna's storage makes its own engine; its connections to a SQLite file wait for the
    disk at every commit (synchronous FULL) unless given the settings of ours."""
    engine = create_engine(f"sqlite:///{tmp_path / 'o.db'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() != SYNCHRONOUS_NORMAL
    with_connection_settings(engine)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == SYNCHRONOUS_NORMAL
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


@needs_psycopg
def test_plain_postgresql_url_means_psycopg() -> None:
    engine = make_engine("postgresql://postgres@127.0.0.1:5432/postgres", verify=False)
    assert engine.url.drivername == "postgresql+psycopg"
    engine.dispose()


@needs_psycopg
def test_unreachable_postgres_is_one_line() -> None:
    message = _one_line_error("postgresql+psycopg://postgres@127.0.0.1:1/test")
    assert message.startswith(
        "cannot connect to database postgresql+psycopg://postgres@127.0.0.1:1"
    )


@needs_psycopg
def test_password_is_not_shown() -> None:
    message = _one_line_error("postgresql+psycopg://postgres:s3cret@127.0.0.1:1/test")
    assert "s3cret" not in message


def test_unknown_driver_and_bad_url() -> None:
    assert "unknown database driver 'nosuchdb'" in _one_line_error("nosuchdb://x/y")
    assert "cannot parse database URL" in _one_line_error("not a url")


def _make_sqlite_file(path: Path) -> None:
    sqlite3.connect(path).close()


def test_read_only_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    _make_sqlite_file(path)
    path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        message = _one_line_error(f"sqlite:///{path}")
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert f"SQLite database file {path} is read-only" in message


def test_read_only_sqlite_directory(tmp_path: Path) -> None:
    directory = tmp_path / "ro_dir"
    directory.mkdir()
    _make_sqlite_file(directory / "x.db")
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        message = _one_line_error(f"sqlite:///{directory / 'x.db'}")
    finally:
        directory.chmod(stat.S_IRWXU)
    assert f"directory {directory} holding SQLite database x.db is read-only" in message


@pytest.mark.parametrize(
    ("query", "flag"),
    [
        ("?mode=ro&uri=true", "mode=ro"),
        ("?mode=ro", "mode=ro"),
        ("?immutable=1&uri=true", "immutable=1"),
    ],
)
@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_a_url_that_opens_sqlite_read_only_is_refused_for_writing(
    tmp_path: Path, query: str, flag: str, wal: bool
) -> None:
    # A WAL file opened with mode=ro passed the old write check (BEGIN IMMEDIATE) and failed
    # deep inside a study; without uri=true pysqlite ignored mode=ro and wrote anyway.
    path = tmp_path / "driver_ro.db"
    _make_sqlite_file(path)
    if wal:
        make_engine(f"sqlite:///{path}").dispose()
    prefix = "file:" if "uri=true" in query else ""
    before = path.read_bytes()
    message = _one_line_error(f"sqlite:///{prefix}{path}{query}")
    assert f"opened read-only by {flag} in its URL" in message and str(path) in message
    assert path.read_bytes() == before
    make_engine(f"sqlite:///file:{path}?mode=ro&uri=true", writable=False).dispose()


def test_reading_never_creates_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    with pytest.raises(StorageError, match=f"no SQLite database at {path}"):
        make_engine(f"sqlite:///{path}", writable=False)
    assert not path.exists()


def test_an_existing_database_must_hold_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    _make_sqlite_file(path)
    with pytest.raises(StorageError, match="holds no gemmtune tables"):
        open_existing_database(f"sqlite:///{path}")
    open_database(f"sqlite:///{path}")  # creates the schema
    with open_existing_database(f"sqlite:///{path}")() as session:
        assert count_measurements(session) == 0


def test_missing_sqlite_directory(tmp_path: Path) -> None:
    message = _one_line_error(f"sqlite:///{tmp_path / 'nope' / 'x.db'}")
    assert "does not exist" in message
    assert not os.path.exists(tmp_path / "nope")
