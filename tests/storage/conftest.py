"""Backends for the storage conformance suite: every test taking ``db_url`` (or a fixture built
on it) runs once on a SQLite file and once on a throwaway PostgreSQL database (``new_database``
lives in ``tests/conftest.py``, shared with the tuner's tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import make_engine, make_session_factory, upgrade
from tests.conftest import NewDatabase


@pytest.fixture
def db_url(new_database: NewDatabase) -> str:
    """An empty database (no schema) of the current backend."""
    return new_database()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a database migrated to head."""
    engine = make_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """A session for one test; tests commit explicitly where commit matters."""
    with make_session_factory(engine)() as session:
        yield session
