"""Schema versions, owned by Alembic and run from code (no alembic.ini needed at run time).

The migration scripts live inside the package so they install with it; ``gemmtune db upgrade``
calls :func:`upgrade`, and the API calls :func:`check_schema` at start-up so that a database
left behind by an older gemmtune fails with the command to fix it, not with a missing column.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, column, func, inspect, select
from sqlalchemy import table as table_clause

from storage.engine import make_engine
from storage.errors import StorageError
from storage.models import Base

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
UPGRADE_COMMAND = "gemmtune db upgrade"
# Not Alembic's default `alembic_version`: Optuna's storage, which shares the database, runs its
# own Alembic migrations and owns that table.
VERSION_TABLE = "gemmtune_alembic_version"
# PostgreSQL advisory lock held while a schema is made or changed: the two-key form, whose key
# space is apart from the one-key locks that claims take per study.
SCHEMA_LOCK = (0x67746E65, 1)

_Step = Callable[["Config"], None]
# The two lines of a revision script that place it in the chain (``revision: str = "0009"``,
# ``down_revision: str | None = "0008"``), read without importing Alembic (below).
_REVISION_LINE = re.compile(r'^(down_revision|revision)\b[^=]*=\s*(?:"([^"]+)"|None)', re.M)


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged scripts; env.py uses ``connection`` if given.

    Also the entry point for writing new revisions, e.g.
    ``command.revision(alembic_config(conn), message="...", autogenerate=True)``.
    """
    from alembic.config import Config

    config = Config()
    # configparser interpolates "%", so escape it in the path.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def known_revisions() -> dict[str, str | None]:
    """Each revision of the packaged scripts and the one it follows (None for the first), read
    from the scripts' text: checking a database's schema, which every command that opens one
    does, then costs no import of Alembic (a third of a second, most of a quick command's
    start-up). Alembic itself reads the same lines when it migrates; a test checks that the two
    agree."""
    chain: dict[str, str | None] = {}
    for script in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        found = dict(
            (key, value or None) for key, value in _REVISION_LINE.findall(script.read_text())
        )
        if "revision" in found and found["revision"] is not None:
            chain[found["revision"]] = found.get("down_revision")
    return chain


def head_revision() -> str:
    """The revision this code expects: the one no other revision follows."""
    chain = known_revisions()
    heads = set(chain) - {down for down in chain.values() if down is not None}
    assert len(heads) == 1, f"storage/migrations/versions must hold one head, found {sorted(heads)}"
    return heads.pop()


def upgrade(target: str | Engine, revision: str = "head") -> None:
    from alembic import command

    """Bring the database at ``target`` (URL or engine) to ``revision`` (default: head)."""
    _run(target, lambda config: command.upgrade(config, revision))


def downgrade(target: str | Engine, revision: str) -> None:
    """Step the schema back to ``revision`` (``"base"`` drops every gemmtune table)."""
    from alembic import command

    _run(target, lambda config: command.downgrade(config, revision))


def current_revision(engine: Engine) -> str | None:
    """The revision stamped in the database, or ``None`` for an empty one."""
    with engine.connect() as connection:
        return _stamped_revision(connection)


def _stamped_revision(connection: Connection) -> str | None:
    """The revision in the version table (Alembic's one row there), or ``None`` without one."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    stamps = table_clause(VERSION_TABLE, column("version_num"))
    return connection.execute(select(stamps.c.version_num)).scalars().first()


def check_schema(engine: Engine) -> None:
    """Raise :class:`StorageError` unless the database is exactly at this code's head."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise StorageError(
            f"database {where} has no gemmtune schema (expected revision {head}), older than "
            f"this code; run `{UPGRADE_COMMAND}`"
        )
    if current not in known_revisions():
        raise StorageError(
            f"database {where} is at schema revision {current!r}, which this gemmtune does not "
            "know (written by a newer version?); upgrade gemmtune"
        )
    raise StorageError(
        f"database {where} is at schema revision {current}, older than this code's {head}; "
        f"run `{UPGRADE_COMMAND}`"
    )


def _run(target: str | Engine, step: _Step) -> None:
    """Run ``step`` in one transaction: a schema is made (or changed) whole, or not at all.

    SQLite's Python driver opens a transaction only before data changes, so each ``CREATE
    TABLE`` would commit on its own and a process killed part-way through its first start would
    leave a half-made schema. An explicit ``BEGIN IMMEDIATE`` makes the DDL transactional
    there (PostgreSQL's DDL is transactional anyway) and takes the write lock, so two processes
    creating one new file wait for each other instead of colliding. On PostgreSQL an advisory
    lock does the same: without it, a process could find no version stamp, then see the tables
    another had just committed and drop them as a half-made schema, stamp kept.
    """
    engine = make_engine(target) if isinstance(target, str) else target
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # A table that others refer to (shape) is rebuilt in batch mode on SQLite: its
                # drop would fail the children's foreign keys (it deletes every row first), so
                # they are off for the migration, which may only be switched outside a
                # transaction, and checked whole before it commits.
                connection.exec_driver_sql("PRAGMA foreign_keys = OFF")
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            elif connection.dialect.name == "postgresql":
                connection.execute(select(func.pg_advisory_xact_lock(*SCHEMA_LOCK)))
            try:
                _repair_unstamped(connection)
                step(alembic_config(connection))
                if sqlite:
                    _check_foreign_keys(connection)
                connection.commit()
            finally:
                if sqlite:
                    connection.rollback()  # nothing left open when the pragma is switched back
                    connection.exec_driver_sql("PRAGMA foreign_keys = ON")
    finally:
        if isinstance(target, str):
            engine.dispose()


def _check_foreign_keys(connection: Connection) -> None:
    """Raise if a migration run with SQLite's foreign keys off left a row pointing nowhere."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StorageError(f"schema change left rows with broken foreign keys: {broken[:5]}")


def _repair_unstamped(connection: Connection) -> None:
    """Drop the empty tables of a schema an older gemmtune half-made (killed during its first
    start: tables without a version stamp), so that the upgrade can build it whole.

    Tables holding rows are never dropped: that database is refused with what to do.
    """
    if _stamped_revision(connection) is not None:
        return
    present = set(inspect(connection).get_table_names())
    ours = [table for table in Base.metadata.sorted_tables if table.name in present]
    filled = [
        table.name
        for table in ours
        if connection.execute(select(func.count()).select_from(table)).scalar_one()
    ]
    if filled:
        where = connection.engine.url.render_as_string(hide_password=True)
        raise StorageError(
            f"database {where} holds gemmtune tables with rows ({', '.join(filled)}) but no "
            f"schema version; restore it from a backup or move it aside and start a new one"
        )
    for table in reversed(ours):
        table.drop(connection)
