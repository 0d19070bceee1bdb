"""Opening a results database: the one way the CLI, the API and the client get their sessions.

An empty database is brought to the current schema; one left by an older gemmtune is refused
with the upgrade command (:func:`storage.check_schema`). Workers started together on a fresh
database race to create the same tables; a loser's error is retried once the winner has
committed.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from storage.engine import PoolLimits, database_url, make_engine, make_session_factory
from storage.errors import StorageError
from storage.schema import check_schema, current_revision, upgrade

SETUP_ATTEMPTS = 5


def open_engine(
    url: str | None = None, *, optuna_tables: bool = False, pool: PoolLimits | None = None
) -> Engine:
    """An engine on ``url`` (see :func:`storage.database_url`) whose schema is current.

    Args:
        optuna_tables: also create Optuna's tables (studies share the database with Optuna's
            RDB storage), so that several workers starting at once do not race to make them.
        pool: PostgreSQL's connection pool (:class:`storage.engine.PoolLimits`).
    """
    engine = make_engine(url, pool=pool)
    retry: tuple[type[Exception], ...] = (DBAPIError,)
    if optuna_tables:
        import optuna  # only the tuner needs Optuna's tables; the API never loads Optuna

        retry += (optuna.exceptions.StorageInternalError,)
    for attempt in range(SETUP_ATTEMPTS):
        try:
            if current_revision(engine) is None:
                upgrade(engine)
            if optuna_tables:
                optuna.storages.RDBStorage(database_url(url)).engine.dispose()
            break
        except retry:
            if attempt == SETUP_ATTEMPTS - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    check_schema(engine)
    return engine


def open_database(url: str | None = None, *, optuna_tables: bool = False) -> sessionmaker[Session]:
    """Sessions on ``url`` whose schema is current (see :func:`open_engine`)."""
    return make_session_factory(open_engine(url, optuna_tables=optuna_tables))


def open_existing_database(url: str | None = None) -> sessionmaker[Session]:
    """Sessions on a database that already holds gemmtune's current schema, for readers.

    Commands that only read (``best``, ``results``, ``export``) and the client use this, so a
    mistyped path or URL is an error naming it rather than a new, empty database.
    """
    engine = make_engine(url, writable=False)
    if current_revision(engine) is None:
        where = engine.url.render_as_string(hide_password=True)
        engine.dispose()
        raise StorageError(
            f"database {where} holds no gemmtune tables; check the URL (results are written by "
            "`gemmtune tune`, `gemmtune import` or `gemmtune serve`)"
        )
    check_schema(engine)
    return make_session_factory(engine)
