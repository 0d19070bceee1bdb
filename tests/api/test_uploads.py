"""Uploads that cannot poison answers: each bad measurement is a 422 naming its row and field,
nothing of the request is stored, and a stored config this version cannot read is never served."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, TRUSTED, make_app
from tests.api.test_results import upload

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

CUBE = {"m": 1024, "n": 1024, "k": 1024}
AUTH = {"Authorization": f"Bearer {TRUSTED}"}


def snapshot_of(client: TestClient) -> tuple[int, dict[str, Any]]:
    """How many results are stored, and the answer for 1024^3."""
    total = client.get("/v1/results").json()["total"]
    return total, client.post("/v1/configs/best", json=CUBE).json()


@pytest.mark.parametrize(
    ("changes", "field", "needle"),
    [
        ({"ms": 1e-6}, "ms", "must be >= 0.001"),  # 2 million TFLOP/s: it once became the best
        ({"ms": 0.002}, "ms", "TFLOP/s"),  # 1074 TFLOP/s on an H100
        ({"family": "turbo"}, "family", "must be one of"),
        ({"config_name": "garbage", "params": {}}, "config_name", "must start with a family"),
        ({"family": "pipelined"}, "config_name", "belongs to family warptile, not pipelined"),
        ({"params": {"BM": 64}}, "params", "must be the parameters of"),
    ],
)
def test_a_malicious_measurement_refuses_the_whole_upload(
    client: TestClient, changes: dict[str, Any], field: str, needle: str
) -> None:
    before = snapshot_of(client)
    body = upload(0.25)
    body["measurements"][1].update(changes)  # the first measurement is fine
    response = client.post("/v1/results", json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == f"measurements.1.{field}"
    assert error["loc"] == ["body", "measurements", 1, field]
    assert error["msg"].startswith(f"`measurements.1.{field}`") and needle in error["msg"]
    assert snapshot_of(client) == before  # nothing stored, the answer unchanged


def test_device_and_shape_problems_are_named(sqlite_client: TestClient) -> None:
    body = upload(0.25)
    body["device"]["arch"] = "hopper"
    response = sqlite_client.post("/v1/results", json=body, headers=AUTH)
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["detail"]] == ["device.arch"]


def test_a_blank_reason_is_named_with_its_row(sqlite_client: TestClient) -> None:
    body = upload(0.25)
    body["measurements"][1]["reason"] = "   "
    response = sqlite_client.post("/v1/results", json=body, headers=AUTH)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["field"] == "measurements.1.reason"
    assert error["msg"] == "`measurements.1.reason` must not be blank, got '   '"


def store_unreadable(url: str) -> None:
    """Rows an older or foreign writer left: an unknown family and a name that does not parse,
    each the (very fast) best of its shape, one of them the 1024^3 the seed tuned."""
    engine = storage.make_engine(url)
    sessions = storage.make_session_factory(engine)
    with sessions.begin() as session:
        for shape, family, name in [
            (storage.ShapeIn(1024, 1024, 1024), "mystery", "mystery_x1"),
            (storage.ShapeIn(300, 300, 300), "warptile", "warptile_garbage"),
        ]:
            m = storage.MeasurementIn(family=family, config_name=name, params={}, ms=1e-6)
            storage.record_measurement(session, H100, shape, m)
    engine.dispose()


def test_a_stored_config_this_version_cannot_read_is_never_served(seeded: str) -> None:
    store_unreadable(seeded)
    app = make_app(seeded)
    with TestClient(app) as client:
        for shape in (CUBE, {"m": 300, "n": 300, "k": 300}, {"m": 17, "n": 5000, "k": 3}):
            response = client.post("/v1/configs/best", json={**shape, "include_source": True})
            assert response.status_code == 200, response.text
            answer = response.json()
            assert answer["family"] != "mystery" and "garbage" not in answer["name"]
            assert answer["kernel"]["code"]
            assert response.headers["X-Gemmtune-Unreadable"].startswith("2 stored best config")
        # 1024^3's stored best is unreadable: answered from the nearest readable shape
        answer = client.post("/v1/configs/best", json=CUBE).json()
        assert (answer["source"], answer["measured_on"]) == (
            "nearest",
            {"m": 2048, "n": 2048, "k": 2048},
        )
        health = client.get("/healthz").json()
        assert health["unreadable_configs"] == 2
    app.state.engine.dispose()
