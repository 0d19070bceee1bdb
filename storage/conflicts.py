"""``INSERT ... ON CONFLICT`` for the two supported backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.models import Base


def upsert_statement(session: Session, model: type[Base]) -> Any:
    """The backend's ``INSERT`` for ``model``, which offers ``on_conflict_do_nothing`` and
    ``on_conflict_do_update`` (both dialects spell them alike)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(model)
    if dialect == "sqlite":
        return sqlite.insert(model)
    raise StorageError(f"unsupported database backend {dialect!r}; use SQLite or PostgreSQL")


def insert_ignoring_conflicts(session: Session, model: type[Base], values: dict[str, Any]) -> bool:
    """Insert ``values`` unless a row with the same unique key exists (possibly uncommitted);
    True when this call inserted the row."""
    statement = upsert_statement(session, model).values(values).on_conflict_do_nothing()
    # RETURNING yields the new key only when a row went in (rowcount is -1 on psycopg here).
    key = inspect(model).primary_key[0]
    return session.execute(statement.returning(key)).first() is not None
