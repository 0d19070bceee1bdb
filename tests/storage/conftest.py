"""Backends for the storage conformance suite: every test taking ``db_url`` (or a fixture built
on it) runs once on a SQLite file and once on a throwaway PostgreSQL database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from storage import make_engine, make_session_factory, upgrade

PG_ADMIN_URL = os.environ.get(
    "GEMMTUNE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine | str]:
    """An AUTOCOMMIT engine on the ``postgres`` database, or why it cannot be reached."""
    engine = create_engine(
        PG_ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
    )
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except OperationalError as exc:
        engine.dispose()
        yield f"PostgreSQL not reachable at {PG_ADMIN_URL}: {' '.join(str(exc.orig).split())}"
        return
    yield engine
    engine.dispose()


NewDatabase = Callable[[], str]


@pytest.fixture(params=BACKENDS)
def new_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NewDatabase]:
    """A factory of URLs of fresh, empty databases of this test's backend; dropped afterwards."""
    created: list[str] = []
    backend: str = request.param
    admin: Engine | str | None = None
    if backend == "postgresql":
        admin = request.getfixturevalue("pg_admin")
        if isinstance(admin, str):
            pytest.skip(admin)

    def make() -> str:
        name = f"gemmtune_test_{uuid.uuid4().hex[:16]}"
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / name}.db"
        assert isinstance(admin, Engine)
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        created.append(name)
        return admin.url.set(database=name).render_as_string(hide_password=False)

    yield make
    if isinstance(admin, Engine):
        with admin.connect() as connection:
            for name in created:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


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
