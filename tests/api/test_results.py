"""GET /v1/results, /v1/devices, /v1/studies/{id}, /healthz; POST /v1/results with its token."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import FAST, SLOW, TOKEN, TRUSTED, make_app


def test_results_filter_and_paginate(client: TestClient) -> None:
    everything = client.get("/v1/results").json()
    assert everything["total"] == 8
    assert len(everything["items"]) == 8
    page = client.get("/v1/results", params={"limit": 3, "offset": 6}).json()
    assert (page["total"], page["limit"], page["offset"], len(page["items"])) == (8, 3, 6, 2)
    a100 = client.get("/v1/results", params={"device": "NVIDIA A100-SXM4-40GB"}).json()
    assert a100["total"] == 1 and a100["items"][0]["config_name"] == SLOW
    cube = client.get("/v1/results", params={"m_min": 1024, "m_max": 1024, "k_max": 1024}).json()
    assert cube["total"] == 2
    assert {i["shape"]["m"] for i in cube["items"]} == {1024}
    failed = client.get("/v1/results", params={"status": "compile_failed"}).json()
    assert failed["total"] == 1 and failed["items"][0]["reason"] == "nvrtc failed"
    fam = client.get("/v1/results", params={"family": "pipelined", "status": "ok"}).json()
    assert fam["total"] == 2


def test_results_page_by_cursor(client: TestClient) -> None:
    ids: list[int] = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        page = client.get("/v1/results", params=params).json()
        ids += [item["id"] for item in page["items"]]
        if page["next_cursor"] is None:
            break
        assert page["next_cursor"] == page["items"][-1]["id"]
        params["cursor"] = page["next_cursor"]
    everything = [item["id"] for item in client.get("/v1/results").json()["items"]]
    assert ids == everything and len(ids) == 8


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 5000}, "limit"),
        ({"offset": -1}, "offset"),
        ({"m_min": 0}, "m_min"),
        ({"status": "great"}, "status"),
    ],
)
def test_results_bad_query_is_422(
    sqlite_client: TestClient, params: dict[str, Any], field: str
) -> None:
    response = sqlite_client.get("/v1/results", params=params)
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"].startswith(f"`{field}`")


def test_devices(client: TestClient) -> None:
    names = [d["name"] for d in client.get("/v1/devices").json()]
    assert names == ["NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"]


def test_study_trials_in_order_with_best_so_far(client: TestClient) -> None:
    response = client.get("/v1/studies/sweep%2F2048%20%231")
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["study"] == "sweep/2048 #1"
    assert [t["trial_number"] for t in data["trials"]] == [0, 1, 2, 3]
    assert [t["status"] for t in data["trials"]] == ["ok", "compile_failed", "ok", "ok"]
    assert [t["best_so_far_ms"] for t in data["trials"]] == [4.0, 4.0, 3.5, 3.5]
    assert data["best"]["config_name"] == FAST
    assert client.get("/v1/studies/nope").status_code == 404


def test_healthz(client: TestClient) -> None:
    data = client.get("/healthz").json()
    assert data["status"] == "ok" and data["database"] in ("sqlite", "postgresql")
    assert data["best_configs"] == 4


def upload(ms: float, name: str = SLOW) -> dict[str, Any]:
    from tuner.kernels.families import parse_config

    return {
        "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132},
        "shape": {"m": 1024, "n": 1024, "k": 1024},
        "measurements": [
            {
                "family": "warptile",
                "config_name": name,
                "params": parse_config(name).as_dict(),
                "ms": ms,
                "cublas_ms": 1.0,
                "provenance": {"worker": "test"},
            },
            {
                "family": "warptile",
                "config_name": name,
                "params": parse_config(name).as_dict(),
                "status": "timeout",
                "reason": "over budget",
            },
        ],
    }


def test_upload_needs_the_bearer_token(client: TestClient) -> None:
    assert client.post("/v1/results", json=upload(0.1)).status_code == 401
    wrong = client.post("/v1/results", json=upload(0.1), headers={"Authorization": "Bearer no"})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"] == "Bearer"
    assert "GEMMTUNE_API_TOKEN" in wrong.json()["detail"]
    assert client.get("/v1/results").json()["total"] == 8  # nothing stored


def test_a_trusted_upload_is_stored_and_the_next_answer_sees_it(client: TestClient) -> None:
    auth = {"Authorization": f"Bearer {TRUSTED}"}
    response = client.post("/v1/results", json=upload(0.25), headers=auth)
    assert response.status_code == 201, response.text
    assert response.json()["stored"] == 2
    best = client.post("/v1/configs/best", json={"m": 1024, "n": 1024, "k": 1024}).json()
    assert (best["name"], best["ms"]) == (SLOW, 0.25)
    assert best["provenance"] == {"worker": "test"}
    assert client.get("/v1/results", params={"status": "timeout"}).json()["total"] == 1


def test_an_upload_takes_its_familys_accuracy_class_and_answers_only_that_floor(
    client: TestClient,
) -> None:
    from tuner.kernels.families import parse_config

    auth = {"Authorization": f"Bearer {TRUSTED}"}
    name = "wgmma_bf16x3_bm128_bn128_bk64_wgm1_s4_sw4_dt1_ly0"
    body = upload(0.1)
    body["measurements"] = [
        {
            "family": "wgmma_bf16x3",
            "config_name": name,
            "params": parse_config(name).as_dict(),
            "ms": 0.1,
            "cublas_ms": 1.0,
        }
    ]
    assert client.post("/v1/results", json=body, headers=auth).status_code == 201
    listed = client.get("/v1/results", params={"family": "wgmma_bf16x3"}).json()["items"]
    assert [item["accuracy"] for item in listed] == ["bf16x3"]
    cube = {"m": 1024, "n": 1024, "k": 1024}
    assert client.post("/v1/configs/best", json=cube).json()["name"] == FAST
    loose = client.post("/v1/configs/best", json={**cube, "accuracy": "bf16x3"}).json()
    assert (loose["name"], loose["accuracy"]) == (name, "bf16x3")
    # The sender cannot name the class: it is the family's.
    body["measurements"][0]["accuracy"] = "exact"
    refused = client.post("/v1/results", json=body, headers=auth)
    assert refused.status_code == 422 and "accuracy" in refused.text


def test_an_untrusted_upload_is_listed_but_never_the_best(client: TestClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = upload(0.25)
    body["measurements"][0]["provenance"]["trusted"] = True  # the sender cannot claim it
    assert client.post("/v1/results", json=body, headers=auth).status_code == 201
    best = client.post("/v1/configs/best", json={"m": 1024, "n": 1024, "k": 1024}).json()
    assert (best["name"], best["ms"]) == (FAST, 0.5)
    listed = client.get("/v1/results", params={"m_min": 1024, "m_max": 1024}).json()["items"]
    uploaded = [item for item in listed if item["ms"] == 0.25]
    assert [(item["trusted"], item["provenance"]) for item in uploaded] == [
        (False, {"worker": "test"})
    ]


@pytest.mark.parametrize(
    "said",
    [
        {"phase": "final"},
        {"provenance": {"worker": "test", "phase": "final"}},  # as uploads said it before
        {"study": "s|finalists"},
    ],
)
def test_a_trusted_final_upload_outranks_a_faster_screening_best(
    client: TestClient, said: dict[str, Any]
) -> None:
    body = upload(0.7)
    body["measurements"] = [{**body["measurements"][0], "study": "s", **said}]
    auth = {"Authorization": f"Bearer {TRUSTED}"}
    assert client.post("/v1/results", json=body, headers=auth).status_code == 201
    best = client.post("/v1/configs/best", json={"m": 1024, "n": 1024, "k": 1024}).json()
    assert (best["name"], best["ms"], best["provenance"]) == (SLOW, 0.7, {"worker": "test"})
    (stored,) = client.get("/v1/results", params={"family": "warptile", "limit": 1}).json()["items"]
    assert (stored["study"], stored["phase"], stored["trusted"]) == ("s", "final", True)


def test_upload_invalidates_a_cached_snapshot(seeded: str) -> None:
    from api.app import create_app
    from api.settings import Settings

    app = create_app(Settings(database_url=seeded, trusted_token=TRUSTED, cache_ttl_s=3600))
    with TestClient(app) as client:
        body = {"m": 1024, "n": 1024, "k": 1024}
        assert client.post("/v1/configs/best", json=body).json()["ms"] == 0.5
        auth = {"Authorization": f"Bearer {TRUSTED}"}
        assert client.post("/v1/results", json=upload(0.2), headers=auth).status_code == 201
        assert client.post("/v1/configs/best", json=body).json()["ms"] == 0.2
    app.state.engine.dispose()


def test_upload_is_off_without_a_configured_token(seeded: str) -> None:
    app = make_app(seeded, token=None, trusted=None)
    with TestClient(app) as client:
        response = client.post(
            "/v1/results", json=upload(0.1), headers={"Authorization": "Bearer anything"}
        )
    app.state.engine.dispose()
    assert response.status_code == 403
    assert "disabled" in response.json()["detail"]


def test_upload_bad_body_is_422(sqlite_client: TestClient) -> None:
    body = upload(0.1)
    body["measurements"][0]["status"] = "great"
    body["shape"]["m"] = 0
    auth = {"Authorization": f"Bearer {TOKEN}"}
    response = sqlite_client.post("/v1/results", json=body, headers=auth)
    assert response.status_code == 422
    fields = {e["field"] for e in response.json()["detail"]}
    assert fields == {"shape.m", "measurements.0.status"}
