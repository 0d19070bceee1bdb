"""Engines and sessions for the two supported backends, with one-line errors when unusable.

SQLite (a file, the embedded default) gets WAL (commits not waiting for the disk), a busy
timeout and foreign keys on every connection, so several tuning processes can write one file.
PostgreSQL goes through psycopg 3. Connection problems are found here, at start-up, and turned
into a :class:`StorageError` that names the database and the fix, instead of a driver traceback
at the first query.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import StorageError

DEFAULT_URL = "sqlite:///gemmtune.db"
URL_ENV_VAR = "GEMMTUNE_DATABASE_URL"
SQLITE_BUSY_TIMEOUT_MS = 30_000
POSTGRES_CONNECT_TIMEOUT_S = 5
_SUPPORTED = "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"


@dataclass(frozen=True)
class PoolLimits:
    """How many PostgreSQL connections one process keeps open (``size``), may open beyond them
    in a burst (``overflow``), and how long a session waits for one before the database counts
    as unavailable (``timeout_s``). SQLite connections are files, not servers: it ignores them.

    The defaults are SQLAlchemy's own; the API server sets its own (``api.settings``).
    """

    size: int = 5
    overflow: int = 10
    timeout_s: float = 30.0


def database_url(explicit: str | None = None) -> str:
    """The URL to use: ``explicit`` if given, else ``$GEMMTUNE_DATABASE_URL``, else the default."""
    if explicit:
        return explicit
    return os.environ.get(URL_ENV_VAR) or DEFAULT_URL


def make_engine(
    url: str | None = None,
    *,
    verify: bool = True,
    writable: bool = True,
    pool: PoolLimits | None = None,
) -> Engine:
    """Create an engine for ``url`` (see :func:`database_url`) and, by default, try it once.

    Args:
        url: SQLAlchemy URL; ``postgresql://`` and ``postgres://`` mean psycopg 3.
        verify: open one connection now, so an unreachable or read-only database fails here.
        writable: SQLite only: check that a write transaction can start, and switch to WAL.
            ``False`` opens an existing file for reading (a read-only one too, e.g. a
            published snapshot) and never creates one: a mistyped path is an error.
        pool: PostgreSQL's connection pool (:class:`PoolLimits`; None: its defaults).

    Raises:
        StorageError: bad URL, unknown or missing driver, unreachable server, read-only SQLite
            (or a URL that opens it read-only, ``mode=ro``) where writing is needed, a missing
            SQLite file where it is not.
    """
    parsed = _parse_url(database_url(url))
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_path(parsed, writable=writable)
    try:
        engine = create_engine(parsed, **_engine_options(parsed, pool or PoolLimits()))
    except NoSuchModuleError as exc:
        raise StorageError(
            f"unknown database driver {parsed.drivername!r} in URL {_safe(parsed)}; "
            f"use {_SUPPORTED}"
        ) from exc
    except ImportError as exc:
        raise StorageError(
            f"the Python driver for {parsed.drivername!r} is not installed ({exc}); "
            "for PostgreSQL run: pip install 'gemmtune[postgres]'"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect if writable else _sqlite_on_connect_ro)
    if verify:
        _verify(engine, parsed, writable=writable)
    return engine


def with_connection_settings(engine: Engine) -> Engine:
    """``engine`` (made elsewhere: Optuna's storage makes its own) with the settings
    :func:`make_engine` gives every connection to a SQLite file: WAL, its commits not waiting
    for the disk, the busy timeout. Other databases are returned as they are."""
    if engine.url.get_backend_name() == "sqlite" and _sqlite_file(engine.url) is not None:
        event.listen(engine, "connect", _sqlite_on_connect)
        engine.dispose()  # connections opened before the listener are closed, not reused
    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose rows stay readable after commit (the API returns them after the session).

    Use ``with factory.begin() as session:`` to commit (or roll back) one unit of work.
    """
    return sessionmaker(engine, expire_on_commit=False)


def _parse_url(text: str) -> URL:
    try:
        url = make_url(text)
    except ArgumentError as exc:
        masked = re.sub(r"://[^/@]*@", "://***@", text)
        raise StorageError(f"cannot parse database URL {masked!r}; expected {_SUPPORTED}") from exc
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def _engine_options(url: URL, pool: PoolLimits) -> dict[str, Any]:
    if url.get_backend_name() == "postgresql":
        connect_args: dict[str, Any] = {}
        if "connect_timeout" not in url.query:
            connect_args["connect_timeout"] = POSTGRES_CONNECT_TIMEOUT_S
        return {
            "pool_pre_ping": True,
            "pool_size": pool.size,
            "max_overflow": pool.overflow,
            "pool_timeout": pool.timeout_s,
            "connect_args": connect_args,
        }
    return {}


def _sqlite_pragmas(dbapi_connection: Any, *, wal: bool) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if wal:  # readers never block the writer; switching needs write access
            _switch_to_wal(cursor)
            # In WAL a commit need not wait for the disk: a process killed at any point loses
            # nothing (the log is in the OS's cache), and only a crash of the OS itself can
            # lose the last commits, never corrupt the file. Waiting for the disk at every
            # claim, measurement and trial made the writers of a four-GPU host take turns.
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """Switch a file to WAL, waiting for other processes as the busy timeout would.

    SQLite does not call its busy handler for this switch: a process that opens a fresh file
    while another one is switching it gets "database is locked" at once. Retry until the
    busy timeout instead (seen with two tuning workers started together on a new file).
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    _sqlite_pragmas(dbapi_connection, wal=True)


def _sqlite_on_connect_ro(dbapi_connection: Any, _record: Any) -> None:
    _sqlite_pragmas(dbapi_connection, wal=False)


def _sqlite_file(url: URL) -> Path | None:
    database = url.database
    if not database or database == ":memory:" or url.query.get("uri") == "true":
        return None  # URI filenames may carry mode=ro; the verify step reports those
    return Path(database)


def _read_only(path: Path) -> bool:
    # Permission bits count even for root: a file chmod'ed read-only is meant to stay unchanged.
    return not os.access(path, os.W_OK) or not path.stat().st_mode & (
        stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    )


def _read_only_flag(url: URL) -> str | None:
    """The query parameter that makes SQLite open the file read-only, if the URL has one."""
    if url.query.get("mode") == "ro":
        return "mode=ro"
    if url.query.get("immutable") in ("1", "true"):
        return f"immutable={url.query['immutable']}"
    return None


def _check_sqlite_path(url: URL, *, writable: bool) -> None:
    flag = _read_only_flag(url)
    if writable and flag is not None:
        # Without uri=true pysqlite ignores the flag and would write; with it, SQLite refuses
        # only at the first write, deep inside a study.
        raise StorageError(
            f"SQLite database {url.database} is opened read-only by {flag} in its URL, and "
            f"this command writes to it; drop {flag} from the URL"
        )
    path = _sqlite_file(url)
    if path is None:
        return
    if not writable:
        if not path.is_file():
            raise StorageError(
                f"no SQLite database at {path} (from URL {_safe(url)}); check the path: "
                "commands that only read never create one"
            )
        return
    directory = path.resolve().parent
    if not directory.is_dir():
        raise StorageError(f"directory {directory} for the SQLite database does not exist")
    if path.exists() and _read_only(path):
        raise StorageError(
            f"SQLite database file {path} is read-only; make it writable or set "
            f"{URL_ENV_VAR} to another database"
        )
    if _read_only(directory):
        raise StorageError(
            f"directory {directory} holding SQLite database {path.name} is read-only "
            "(SQLite must create its -wal and -shm files there); make it writable or set "
            f"{URL_ENV_VAR} to another database"
        )


def _verify(engine: Engine, url: URL, *, writable: bool) -> None:
    sqlite = url.get_backend_name() == "sqlite"
    try:
        with engine.connect() as connection:
            if sqlite and writable:
                connection.exec_driver_sql("BEGIN IMMEDIATE")  # fails on a read-only database
                connection.exec_driver_sql("ROLLBACK")
            else:
                connection.exec_driver_sql("SELECT 1")
    except DBAPIError as exc:
        engine.dispose()
        raise StorageError(_describe(exc, url)) from exc


def _describe(exc: DBAPIError, url: URL) -> str:
    detail = " ".join(str(exc.orig).split())
    if url.get_backend_name() == "sqlite":
        if "readonly" in detail or "read-only" in detail:
            return (
                f"SQLite database {url.database} is read-only ({detail}); make it writable or "
                f"set {URL_ENV_VAR} to another database"
            )
        return f"cannot open SQLite database {url.database}: {detail}"
    return f"cannot connect to database {_safe(url)}: {detail}"


def _safe(url: URL) -> str:
    return url.render_as_string(hide_password=True)
