"""The database fails under a running server: privileges revoked, database dropped, SQLite file
deleted or replaced. Every endpoint answers a JSON 503 saying why (never a bare 500), the best
lookup keeps answering from memory with ``X-Gemmtune-Stale``, /healthz tells the truth, and
nothing acknowledged is lost."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

import storage
from tests.api.conftest import TRUSTED, make_app, seed
from tests.api.test_results import upload
from tuner.answers.index import BestIndex

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

AUTH = {"Authorization": f"Bearer {TRUSTED}"}
CUBE = {"m": 1024, "n": 1024, "k": 1024}
READS = ["/v1/results", "/v1/devices", "/v1/studies/sweep%2F2048%20%231", "/dashboard"]


def assert_unavailable(client: TestClient, needle: str) -> None:
    """Every endpoint but the best lookup: a JSON 503 whose message contains ``needle``."""
    for path in [*READS, "/healthz"]:
        response = client.get(path)
        assert response.status_code == 503, (path, response.text)
        assert needle in response.json()["detail"], (path, response.text)
    stored = client.post("/v1/results", json=upload(0.3), headers=AUTH)
    assert stored.status_code == 503 and needle in stored.json()["detail"]


def assert_answers_from_memory(client: TestClient, ms: float) -> None:
    """After a refresh that met the failure (what the background refresher does every
    interval), the best lookup answers ``ms`` from memory and says the data may be stale."""
    index: BestIndex = client.app.state.index  # type: ignore[attr-defined]
    index.refresh()
    response = client.post("/v1/configs/best", json=CUBE)
    assert response.status_code == 200
    assert response.json()["ms"] == ms
    assert "answers come from memory" in response.headers["X-Gemmtune-Stale"]


def count(url: str) -> int:
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine)() as session:
        total = storage.count_measurements(session)
    engine.dispose()
    return total


# --- PostgreSQL: a role whose privileges are revoked, a database dropped -------------------


@pytest.fixture
def postgres_url(pg_admin: Engine | str) -> Iterator[tuple[Engine, str, str]]:
    """(admin engine, URL of a seeded database, URL of the same as a role of its own)."""
    if isinstance(pg_admin, str):
        pytest.skip(pg_admin)
    name = f"gemmtune_test_{uuid.uuid4().hex[:16]}"
    role = f"gemmtune_role_{uuid.uuid4().hex[:8]}"
    with pg_admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
        connection.execute(text(f'CREATE ROLE "{role}" LOGIN'))
    url = pg_admin.url.set(database=name)
    seed(url.render_as_string(hide_password=False))
    owner = storage.make_engine(url.render_as_string(hide_password=False))
    with owner.begin() as connection:
        connection.execute(text(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"'))
        connection.execute(text(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"'))
    owner.dispose()
    as_role = url.set(username=role).render_as_string(hide_password=False)
    yield pg_admin, url.render_as_string(hide_password=False), as_role
    with pg_admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'DROP ROLE IF EXISTS "{role}"'))


def grant(url: str, role: str, verb: str) -> None:
    engine = storage.make_engine(url)
    with engine.begin() as connection:
        direction = "TO" if verb == "GRANT" else "FROM"
        connection.execute(text(f'{verb} ALL ON ALL TABLES IN SCHEMA public {direction} "{role}"'))
    engine.dispose()


def test_privileges_revoked_under_a_running_server(
    postgres_url: tuple[Engine, str, str],
) -> None:
    _, owner_url, role_url = postgres_url
    role = make_url(role_url).username
    assert role is not None
    app = make_app(role_url)
    with TestClient(app) as client:
        assert client.post("/v1/configs/best", json=CUBE).json()["ms"] == 0.5
        acknowledged = client.post("/v1/results", json=upload(0.3), headers=AUTH)
        assert acknowledged.status_code == 201
        grant(owner_url, role, "REVOKE")
        assert_unavailable(client, "permission denied")
        assert_answers_from_memory(client, 0.3)  # the upload was merged when it was stored
        grant(owner_url, role, "GRANT")
        assert client.get("/healthz").status_code == 200
        fresh = client.post("/v1/configs/best", json=CUBE)
        assert "X-Gemmtune-Stale" not in fresh.headers and fresh.json()["ms"] == 0.3
    app.state.engine.dispose()
    assert count(owner_url) == 8 + 2  # the seed and the acknowledged upload


def test_database_dropped_under_a_running_server(postgres_url: tuple[Engine, str, str]) -> None:
    admin, owner_url, _ = postgres_url
    app = make_app(owner_url)
    with TestClient(app) as client:
        assert client.post("/v1/configs/best", json=CUBE).json()["ms"] == 0.5
        name = make_url(owner_url).database
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        assert_unavailable(client, "does not exist")
        assert_answers_from_memory(client, 0.5)  # the seeded best
    app.state.engine.dispose()


# --- SQLite: the file deleted or replaced while the server runs -----------------------------


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "served.db"
    seed(f"sqlite:///{path}")
    return path


def test_sqlite_file_deleted_under_a_running_server(sqlite_file: Path, tmp_path: Path) -> None:
    app = make_app(f"sqlite:///{sqlite_file}")
    with TestClient(app) as client:
        assert client.post("/v1/results", json=upload(0.3), headers=AUTH).status_code == 201
        kept = tmp_path / "kept.db"  # the deleted file's content, to count what was stored
        shutil.copy(sqlite_file, kept)
        for suffix in ("-wal", "-shm"):
            if Path(f"{sqlite_file}{suffix}").exists():
                shutil.copy(f"{sqlite_file}{suffix}", f"{kept}{suffix}")
        sqlite_file.unlink()
        refused = client.post("/v1/results", json=upload(0.2), headers=AUTH)
        assert refused.status_code == 503 and "was deleted" in refused.json()["detail"]
        health = client.get("/healthz")
        assert health.status_code == 503 and "was deleted" in health.json()["detail"]
        assert client.post("/v1/configs/best", json=CUBE).json()["ms"] == 0.3
    app.state.engine.dispose()
    assert count(f"sqlite:///{kept}") == 8 + 2  # the acknowledged upload is there; no other


def test_sqlite_file_replaced_under_a_running_server(sqlite_file: Path, tmp_path: Path) -> None:
    app = make_app(f"sqlite:///{sqlite_file}")
    with TestClient(app) as client:
        other = tmp_path / "other.db"
        seed(f"sqlite:///{other}")
        os.replace(other, sqlite_file)
        refused = client.post("/v1/results", json=upload(0.2), headers=AUTH)
        assert refused.status_code == 503 and "was replaced" in refused.json()["detail"]
        assert "was replaced" in client.get("/healthz").json()["detail"]
    app.state.engine.dispose()
    assert count(f"sqlite:///{sqlite_file}") == 8  # the new file untouched


def test_sqlite_file_moved_away_under_a_busy_server(sqlite_file: Path, tmp_path: Path) -> None:
    """A new connection would create an empty file in its place and drop the log that holds
    the acknowledged upload; none is opened, and moving the file back loses nothing."""
    app = make_app(f"sqlite:///{sqlite_file}")
    engine: Engine = app.state.engine
    with TestClient(app) as client:
        assert client.post("/v1/results", json=upload(0.3), headers=AUTH).status_code == 201
        moved = tmp_path / "moved.db"
        os.rename(sqlite_file, moved)
        with engine.connect():  # a request in flight holds the pooled connection: busy
            for path in ("/v1/results", "/healthz"):
                refused = client.get(path)
                assert refused.status_code == 503, (path, refused.text)
                assert f"was moved to {moved}" in refused.json()["detail"]
            stored = client.post("/v1/results", json=upload(0.2), headers=AUTH)
            assert stored.status_code == 503 and "move it back" in stored.json()["detail"]
        assert not sqlite_file.exists()  # no empty file was made in its place
        assert Path(f"{sqlite_file}-wal").exists()  # the log that holds the upload is kept
        os.rename(moved, sqlite_file)
        assert client.get("/healthz").status_code == 200
        assert client.post("/v1/results", json=upload(0.25), headers=AUTH).status_code == 201
    engine.dispose()
    assert count(f"sqlite:///{sqlite_file}") == 8 + 2 + 2  # both acknowledged uploads


def test_sqlite_wal_deleted_under_a_running_server(sqlite_file: Path) -> None:
    app = make_app(f"sqlite:///{sqlite_file}")
    with TestClient(app) as client:
        assert client.post("/v1/results", json=upload(0.3), headers=AUTH).status_code == 201
        Path(f"{sqlite_file}-wal").unlink()
        refused = client.post("/v1/results", json=upload(0.2), headers=AUTH)
        assert refused.status_code == 503
        assert "write-ahead log" in refused.json()["detail"]
        assert "was deleted" in refused.json()["detail"]
        health = client.get("/healthz")
        assert health.status_code == 503 and "write-ahead log" in health.json()["detail"]
    # The app stopped cleanly (the client's exit ran its lifespan): its last connection wrote
    # the log it held into the file, so the upload acknowledged before the deletion is kept.
    assert count(f"sqlite:///{sqlite_file}") == 8 + 2


# --- The index on its own ---------------------------------------------------------------


def test_the_index_keeps_its_snapshot_while_the_database_fails(sqlite_file: Path) -> None:
    engine = storage.make_engine(f"sqlite:///{sqlite_file}")
    good = storage.make_session_factory(engine)
    failing = {"now": False}

    def sessions() -> object:
        if failing["now"]:
            raise OperationalError("SELECT", {}, Exception("server closed the connection"))
        return good()

    index = BestIndex(sessions, ttl_s=0)  # type: ignore[arg-type]
    first = index.snapshot()
    assert index.stale is None and len(first.entries) == 4
    failing["now"] = True
    index.refresh()
    assert index.snapshot() is first
    assert index.stale is not None and "server closed the connection" in index.stale
    failing["now"] = False
    index.refresh()
    assert index.snapshot() is first and index.stale is None  # nothing changed meanwhile
    engine.dispose()


def test_with_no_snapshot_yet_a_failing_database_is_an_error(sqlite_file: Path) -> None:
    def sessions() -> object:
        raise OperationalError("SELECT", {}, Exception("down"))

    with pytest.raises(OperationalError):
        BestIndex(sessions, ttl_s=0).snapshot()  # type: ignore[arg-type]
    with pytest.raises(OperationalError):
        BestIndex(sessions, ttl_s=0).refresh()  # type: ignore[arg-type]
