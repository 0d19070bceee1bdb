"""Shared test setup: GPU tests skip cleanly without a device; kernels compile into a temp cache;
``new_database`` gives fresh SQLite and PostgreSQL databases to every conformance suite."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

PG_ADMIN_URL = os.environ.get(
    "GEMMTUNE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("sqlite", "postgresql")
NO_PSYCOPG = "PostgreSQL driver not installed; pip install 'gemmtune[postgres]'"
# For tests that build PostgreSQL engines without a server (no ``new_database``).
needs_psycopg = pytest.mark.skipif(importlib.util.find_spec("psycopg") is None, reason=NO_PSYCOPG)


def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (none found)")
    gpu_folder = Path(__file__).resolve().parent / "gpu"
    for item in items:
        # The marker, not the keyword: every test under tests/tuner/gpu/ has the keyword "gpu"
        # from its folder's name, and most of those run on the CPU.
        if item.get_closest_marker("gpu") is not None or gpu_folder in item.path.parents:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test session compiles into its own cache, so compile tests really compile."""
    folder = tmp_path_factory.mktemp("kernel-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("GEMMTUNE_CACHE_DIR", str(folder))
    yield folder
    mp.undo()


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine | str]:
    """An AUTOCOMMIT engine on the ``postgres`` database, or why it cannot be reached (the
    PostgreSQL tests skip with that reason)."""
    try:
        engine = create_engine(
            PG_ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
        )
    except ImportError as exc:  # the driver: pip install 'gemmtune[postgres]'
        yield f"{NO_PSYCOPG} ({exc})"
        return
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
