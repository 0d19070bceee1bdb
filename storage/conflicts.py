"""``INSERT ... ON CONFLICT DO NOTHING`` for the two supported backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Insert, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.models import Base


def insert_ignoring_conflicts(session: Session, model: type[Base], values: dict[str, Any]) -> bool:
    """Insert ``values`` unless a row with the same unique key exists (possibly uncommitted);
    True when this call inserted the row."""
    dialect = session.get_bind().dialect.name
    statement: Insert
    if dialect == "postgresql":
        statement = postgresql.insert(model).values(values).on_conflict_do_nothing()
    elif dialect == "sqlite":
        statement = sqlite.insert(model).values(values).on_conflict_do_nothing()
    else:
        raise StorageError(f"unsupported database backend {dialect!r}; use SQLite or PostgreSQL")
    # RETURNING yields the new key only when a row went in (rowcount is -1 on psycopg here).
    key = inspect(model).primary_key[0]
    return session.execute(statement.returning(key)).first() is not None
