"""Alembic environment for gemmtune: runs on the connection that ``storage.schema`` hands in.

Run outside ``storage.schema`` (plain ``alembic`` CLI with an ini file), it falls back to
``sqlalchemy.url`` from that config, then to ``$GEMMTUNE_DATABASE_URL``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from storage.engine import database_url, make_engine
from storage.models import Base
from storage.schema import VERSION_TABLE


def _ours(name: str | None, type_: str, parent_names: object) -> bool:
    """Only gemmtune's tables: Optuna keeps its own tables in the same database."""
    return type_ != "table" or name in Base.metadata.tables


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables for future revisions.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        version_table=VERSION_TABLE,
        include_name=_ours,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    engine = make_engine(database_url(context.config.get_main_option("sqlalchemy.url")))
    try:
        with engine.begin() as own_connection:
            _configure_and_run(own_connection)
    finally:
        engine.dispose()


def _run_offline() -> None:
    context.configure(
        url=database_url(context.config.get_main_option("sqlalchemy.url")),
        target_metadata=Base.metadata,
        literal_binds=True,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()
