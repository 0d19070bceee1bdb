"""Schema versions, owned by Alembic and run from code (no alembic.ini needed at run time).

The migration scripts live inside the package so they install with it; ``gemmtune db upgrade``
calls :func:`upgrade`, and the API calls :func:`check_schema` at start-up so that a database
left behind by an older gemmtune fails with the command to fix it, not with a missing column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine

from storage.engine import make_engine
from storage.errors import StorageError

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
UPGRADE_COMMAND = "gemmtune db upgrade"
# Not Alembic's default `alembic_version`: Optuna's storage, which shares the database, runs its
# own Alembic migrations and owns that table.
VERSION_TABLE = "gemmtune_alembic_version"

_Step = Callable[[Config], None]


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged scripts; env.py uses ``connection`` if given.

    Also the entry point for writing new revisions, e.g.
    ``command.revision(alembic_config(conn), message="...", autogenerate=True)``.
    """
    config = Config()
    # configparser interpolates "%", so escape it in the path.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The revision this code expects."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "storage/migrations/versions holds no revision"
    return head


def upgrade(target: str | Engine, revision: str = "head") -> None:
    """Bring the database at ``target`` (URL or engine) to ``revision`` (default: head)."""
    _run(target, lambda config: command.upgrade(config, revision))


def downgrade(target: str | Engine, revision: str) -> None:
    """Step the schema back to ``revision`` (``"base"`` drops every gemmtune table)."""
    _run(target, lambda config: command.downgrade(config, revision))


def current_revision(engine: Engine) -> str | None:
    """The revision stamped in the database, or ``None`` for an empty one."""
    with engine.connect() as connection:
        return MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE}
        ).get_current_revision()


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
    try:
        ScriptDirectory.from_config(alembic_config()).get_revision(current)
    except CommandError as exc:
        raise StorageError(
            f"database {where} is at schema revision {current!r}, which this gemmtune does not "
            "know (written by a newer version?); upgrade gemmtune"
        ) from exc
    raise StorageError(
        f"database {where} is at schema revision {current}, older than this code's {head}; "
        f"run `{UPGRADE_COMMAND}`"
    )


def _run(target: str | Engine, step: _Step) -> None:
    engine = make_engine(target) if isinstance(target, str) else target
    try:
        with engine.begin() as connection:
            step(alembic_config(connection))
    finally:
        if isinstance(target, str):
            engine.dispose()
