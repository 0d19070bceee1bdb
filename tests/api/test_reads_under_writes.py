"""Answers served from memory while others write, on both backends: no SQL on the answer's path,
an upload merged by delta (no full read), the refresh and the upload (its validation and its
merge) on worker threads, never on the event loop's, and PostgreSQL's pool as the settings size
it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event
from sqlalchemy.exc import TimeoutError as PoolTimeout

import api.routes.results as results_routes
import tuner.answers.index as index_module
from tests.api.conftest import FAST, H100, TRUSTED, make_app
from tuner.answers.index import BestIndex
from tuner.kernels.families import parse_config

CUBE = {"m": 1024, "n": 1024, "k": 1024}
ASKED = [CUBE, {"m": 3000, "n": 3000, "k": 3000}, {"m": 7, "n": 9, "k": 11}]


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every SQL statement ``engine`` sends while the block runs."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def upload_body(m: int, n: int, k: int, ms: float) -> dict[str, Any]:
    return {
        "device": {"name": H100.name, "arch": H100.arch, "sm_count": H100.sm_count},
        "shape": {"m": m, "n": n, "k": k},
        "measurements": [
            {
                "family": "warptile",
                "config_name": FAST,
                "params": parse_config(FAST).as_dict(),
                "status": "ok",
                "ms": ms,
                "cublas_ms": 1.0,
            }
        ],
    }


def test_a_warm_index_answers_without_sql(seeded: str) -> None:
    app = make_app(seeded)
    with TestClient(app) as client:
        client.post("/v1/configs/best", json=CUBE)  # the index is read (at start, or here)
        with statements(app.state.engine) as sent:
            for body in ASKED * 3:  # new requests (answered) and repeated ones (cached)
                assert client.post("/v1/configs/best", json=body).status_code == 200
        with statements(app.state.engine) as control:  # the listener does see this app's SQL
            assert client.get("/v1/devices").status_code == 200
    app.state.engine.dispose()
    assert sent == []
    assert control


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """The threads that call ``tuner.answers.index.<name>`` from now on (the real one runs)."""
    threads: list[int] = []
    real: Callable[..., Any] = getattr(index_module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(index_module, name, counted)
    return threads


def test_a_trusted_upload_is_answered_exact_without_a_full_read(
    seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(seeded)
    shape = ASKED[1]
    with TestClient(app) as client:
        assert client.post("/v1/configs/best", json=shape).json()["source"] == "nearest"
        cube_before = client.post("/v1/configs/best", json=CUBE).content
        full_reads = counting(monkeypatch, "load_snapshot")
        headers = {"Authorization": f"Bearer {TRUSTED}"}
        stored = client.post(
            "/v1/results", json=upload_body(3000, 3000, 3000, 2.0), headers=headers
        )
        assert stored.status_code == 201, stored.text
        answer = client.post("/v1/configs/best", json=shape).json()
        cube_after = client.post("/v1/configs/best", json=CUBE).content
    app.state.engine.dispose()
    assert answer["source"] == "exact" and answer["ms"] == 2.0
    assert full_reads == []
    assert cube_after == cube_before  # 1024^3 is tuned: the new shape cannot change it


def test_the_refresh_and_the_upload_run_off_the_event_loop(
    seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refreshed: list[int] = []
    merged: list[int] = []
    parsed: list[int] = []
    refresh, apply_written = BestIndex.refresh, BestIndex.apply_written
    parse = results_routes.parse_upload

    def recorded_parse(*args: Any) -> Any:
        parsed.append(threading.get_ident())
        return parse(*args)

    def recorded_refresh(self: BestIndex) -> None:
        refreshed.append(threading.get_ident())
        refresh(self)

    def recorded_merge(self: BestIndex, ids: Any) -> None:
        merged.append(threading.get_ident())
        apply_written(self, ids)

    monkeypatch.setattr(BestIndex, "refresh", recorded_refresh)
    monkeypatch.setattr(BestIndex, "apply_written", recorded_merge)
    monkeypatch.setattr(results_routes, "parse_upload", recorded_parse)
    app = make_app(seeded, cache_ttl_s=0)  # the refresher runs every 50 ms
    with TestClient(app) as client:
        loop_thread = client.portal.call(threading.get_ident)  # type: ignore[union-attr]
        headers = {"Authorization": f"Bearer {TRUSTED}"}
        body = upload_body(3000, 3000, 3000, 2.0)
        assert client.post("/v1/results", json=body, headers=headers).status_code == 201
        # Polled, not timed: the bound only ends a hung test.
        done = threading.Event()
        for _ in range(600):
            if len(refreshed) >= 3:
                break
            done.wait(0.05)
    app.state.engine.dispose()
    assert len(refreshed) >= 3 and merged and parsed
    assert loop_thread not in refreshed + merged + parsed


def test_a_first_read_after_a_failed_start_runs_off_the_event_loop(
    seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loops: list[bool] = []
    real = index_module.load_snapshot

    def recorded(session: Any) -> Any:
        try:
            asyncio.get_running_loop()
            loops.append(True)
        except RuntimeError:  # no event loop runs in this thread
            loops.append(False)
        return real(session)

    monkeypatch.setattr(index_module, "load_snapshot", recorded)
    app = make_app(seeded)
    client = TestClient(app)  # no lifespan: nothing is read before the first answer
    answer = client.post("/v1/configs/best", json=CUBE)
    app.state.engine.dispose()
    assert answer.status_code == 200 and answer.json()["source"] == "exact"
    assert loops == [False]


def test_the_postgresql_pool_follows_the_settings(db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite keeps no server connections: the pool settings are PostgreSQL's")
    app = make_app(db_url, db_pool_size=2, db_pool_overflow=1, db_pool_timeout_s=0.2)
    engine = app.state.engine
    held = [engine.connect() for _ in range(3)]  # the pool's two and the one overflow
    try:
        assert engine.pool.size() == 2
        with pytest.raises(PoolTimeout):
            engine.connect()
    finally:
        for connection in held:
            connection.close()
        engine.dispose()


@pytest.mark.parametrize(
    ("content", "content_type", "needle"),
    [
        (b"m=1", "application/json", "not valid JSON (Expecting value at character 0)"),
        (b'{"device": 1,', "application/json", "not valid JSON"),
        (b"[1, 2]", "application/json", "must be a JSON object, got [1, 2]"),
        (b'"\xff\x85O', "application/json", "in UTF-8; byte 1 is not UTF-8"),
        (b'{"device": {}}', "text/plain", "'Content-Type: application/json', got"),
    ],
)
def test_an_upload_body_validated_in_its_thread_is_refused_in_one_line(
    sqlite_client: TestClient, content: bytes, content_type: str, needle: str
) -> None:
    headers = {"content-type": content_type, "Authorization": f"Bearer {TRUSTED}"}
    response = sqlite_client.post("/v1/results", content=content, headers=headers)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == "body" and needle in error["msg"]


def test_an_empty_upload_and_a_bad_field_are_named(sqlite_client: TestClient) -> None:
    headers = {"Authorization": f"Bearer {TRUSTED}"}
    empty = sqlite_client.post("/v1/results", content=b"", headers=headers)
    body = upload_body(3000, 3000, 3000, 2.0)
    body["measurements"][0]["ms"] = "fast"
    bad = sqlite_client.post("/v1/results", json=body, headers=headers)
    assert empty.status_code == 422 and empty.json()["detail"][0]["loc"] == ["body"]
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "measurements", 0, "ms"]
