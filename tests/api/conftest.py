"""API tests run on both storage backends: a SQLite file and a throwaway PostgreSQL database
(``new_database`` from tests/conftest.py). ``seeded`` is a small known data set; ``client`` an app
with an upload token whose index is not refreshed in the background (uploads through it are
answered at once; tests that write around it call ``index.refresh()``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

import storage
from api.app import create_app
from api.settings import Settings
from tests.conftest import NewDatabase

TOKEN = "test-token-123"  # uploads stored as untrusted
TRUSTED = "trusted-token-456"  # uploads that compete for the best config
H100 = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
A100 = storage.DeviceIn("NVIDIA A100-SXM4-40GB", "sm_80", 108)
FAST = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
SLOW = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
PIPE = "pipelined_bm64_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t128_s2"


def measurement(name: str, ms: float | None, **extra: object) -> storage.MeasurementIn:
    from tuner.kernels.families import parse_config

    config = parse_config(name)
    values: dict[str, object] = {
        "family": config.family,
        "config_name": name,
        "params": config.as_dict(),
        "ms": ms,
        "cublas_ms": 1.0 if ms is not None else None,
        "provenance": {"test": True},
    }
    values.update(extra)
    return storage.MeasurementIn(**values)  # type: ignore[arg-type]


def seed(url: str) -> None:
    """1024^3 on the H100 (FAST wins), 4096^3 on both GPUs, and a study of 4 trials."""
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    cube = storage.ShapeIn(1024, 1024, 1024)
    big = storage.ShapeIn(4096, 4096, 4096)
    with sessions.begin() as s:
        storage.record_measurement(s, H100, cube, measurement(SLOW, 2.0))
        storage.record_measurement(s, H100, cube, measurement(FAST, 0.5))
        storage.record_measurement(s, H100, big, measurement(PIPE, 3.0))
        storage.record_measurement(s, A100, big, measurement(SLOW, 9.0))
        trials = [
            (SLOW, 4.0, "ok"),
            (PIPE, None, "compile_failed"),
            (FAST, 3.5, "ok"),
            (PIPE, 3.8, "ok"),
        ]
        for number, (name, ms, status) in enumerate(trials):
            extra = {
                "status": status,
                "study": "sweep/2048 #1",
                "trial_number": number,
                "registers": 100 + number,
                "occupancy": 0.5,
            }
            if status != "ok":
                extra["reason"] = "nvrtc failed"
            storage.record_measurement(
                s, H100, storage.ShapeIn(2048, 2048, 2048), measurement(name, ms, **extra)
            )
    engine.dispose()


@pytest.fixture
def db_url(new_database: NewDatabase) -> str:
    """An empty database of this test's backend (SQLite file, throwaway PostgreSQL)."""
    return new_database()


@pytest.fixture
def seeded(db_url: str) -> str:
    seed(db_url)
    return db_url


def make_app(
    url: str, token: str | None = TOKEN, trusted: str | None = TRUSTED, **settings: Any
) -> FastAPI:
    # No background refresh during a test unless it asks: what a test sees does not depend on
    # when the refresher ran (uploads through the app are merged at once).
    settings.setdefault("cache_ttl_s", 3600)
    return create_app(
        Settings(database_url=url, api_token=token, trusted_token=trusted, **settings)
    )


@contextmanager
def seeded_sqlite_app(folder: Path, **settings: Any) -> Iterator[FastAPI]:
    """An app (both tokens, no background refresh) on a seeded SQLite file in ``folder``."""
    url = f"sqlite:///{folder}/api.db"
    seed(url)
    app = make_app(url, **settings)
    try:
        yield app
    finally:
        app.state.engine.dispose()


@pytest.fixture
def client(seeded: str) -> Iterator[TestClient]:
    app = make_app(seeded)
    with TestClient(app) as test_client:
        yield test_client
    app.state.engine.dispose()


@pytest.fixture
def sqlite_client(tmp_path: Path) -> Iterator[TestClient]:
    """A seeded SQLite app, for tests whose outcome cannot depend on the backend."""
    with seeded_sqlite_app(tmp_path) as app, TestClient(app) as test_client:
        yield test_client


@dataclass
class LiveServer:
    url: str
    app: FastAPI


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` on a real uvicorn server in a thread; its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not server.started:
        time.sleep(0.05)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A real uvicorn server in a thread, on a seeded SQLite database."""
    with seeded_sqlite_app(tmp_path) as app, serving(app) as base:
        yield LiveServer(base, app)
