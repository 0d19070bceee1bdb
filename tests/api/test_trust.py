"""Fault injection against the trust model, through the API on both backends: no untrusted
upload changes an answer (device spoofing, claims that contradict the known device), no
provenance breaks a page or an answer (deep, lone surrogates, NaN), and no family is served
for a dtype or layout it does not compute."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

import storage
from tests.api.conftest import H100, TOKEN, TRUSTED, make_app, measurement, seed
from tests.api.test_results import upload
from tuner.core.provenance import UNREADABLE_KEY
from tuner.kernels.families import accuracy_of, parse_config

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

UNTRUSTED_AUTH = {"Authorization": f"Bearer {TOKEN}"}
TRUSTED_AUTH = {"Authorization": f"Bearer {TRUSTED}"}
BIG = storage.ShapeIn(4096, 4096, 4096)
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
HMMA_F16 = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0"
HMMA_BF16 = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly0"
WARPTILE = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
H100_4096 = {"m": 4096, "n": 4096, "k": 4096, "device": H100.name}


def nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def post_raw(client: TestClient, body: dict[str, Any], auth: dict[str, str]) -> Any:
    """POST /v1/results with the body as Python's json writes it: NaN and Infinity as those
    tokens, lone surrogates as ``\\ud800`` escapes (what a hostile client can send)."""
    headers = {**auth, "Content-Type": "application/json"}
    return client.post("/v1/results", content=json.dumps(body), headers=headers)


def dmma_record(ms: float = 2.35) -> storage.MeasurementIn:
    config = parse_config(DMMA)
    return storage.MeasurementIn(
        family=config.family,
        config_name=DMMA,
        params=config.as_dict(),
        ms=ms,
        cublas_ms=3.0,
        accuracy=accuracy_of(config.family),
        provenance={"worker": "gpu0"},
    )


def write(
    url: str, *records: tuple[storage.DeviceIn, storage.ShapeIn, storage.MeasurementIn]
) -> list[int]:
    """Store records around the API (as the tuner, or an older version, would have)."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine).begin() as session:
            return [storage.record_measurement(session, *record).id for record in records]
    finally:
        engine.dispose()


def set_provenance(url: str, measurement_id: int, provenance: Any) -> None:
    """Overwrite a stored provenance without any check: a row a version before these rules
    (or a hand-written query) left behind."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine).begin() as session:
            session.execute(
                update(storage.Measurement)
                .where(storage.Measurement.id == measurement_id)
                .values(provenance=provenance)
            )
    finally:
        engine.dispose()


@contextmanager
def client_on(url: str) -> Iterator[TestClient]:
    app = make_app(url)
    try:
        with TestClient(app) as test_client:
            yield test_client
    finally:
        app.state.engine.dispose()


@pytest.fixture
def with_dmma(seeded: str) -> str:
    """The seeded database with the H100's exact dmma_pipelined answer at 4096^3 (2.35 ms)."""
    write(seeded, (H100, BIG, dmma_record()))
    return seeded


@pytest.fixture
def app_client(with_dmma: str) -> Iterator[TestClient]:
    with client_on(with_dmma) as test_client:
        yield test_client


def refresh(client: TestClient) -> None:
    client.app.state.index.refresh()  # type: ignore[attr-defined]


def answer(client: TestClient, **asked: Any) -> dict[str, Any]:
    response = client.post("/v1/configs/best", json={**H100_4096, **asked})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_h100_answer_holds(client: TestClient) -> None:
    got = answer(client)
    assert (got["source"], got["name"], got["ms"]) == ("exact", DMMA, 2.35)
    assert got["measured_on_device"] == {"name": H100.name, "arch": "sm_90", "sm_count": 132}


def spoof_upload(arch: str, sm_count: int, name: str = H100.name) -> dict[str, Any]:
    body = upload(50.0, WARPTILE)
    body["measurements"][0]["cublas_ms"] = 40.0
    body["device"] = {"name": name, "arch": arch, "sm_count": sm_count}
    body["shape"] = {"m": 4096, "n": 4096, "k": 4096}
    return body


def test_an_upload_under_a_known_name_with_another_arch_is_refused(
    app_client: TestClient, seeded: str
) -> None:
    assert_h100_answer_holds(app_client)
    for auth in (UNTRUSTED_AUTH, TRUSTED_AUTH):
        response = app_client.post("/v1/results", json=spoof_upload("sm_86", 132), headers=auth)
        assert response.status_code == 422, response.text
        (error,) = response.json()["detail"]
        assert error["field"] == "device"
        assert "is known as sm_90 with 132 SMs, not sm_86 with 132 SMs" in error["msg"]
    assert_h100_answer_holds(app_client)


def test_a_spoofed_device_row_already_stored_never_resolves_the_name(
    app_client: TestClient, seeded: str
) -> None:
    """A database written before device rows carried trust may hold an untrusted upload under
    the H100's name with another arch: the H100 is still resolved by its trusted row alone (it
    once lost its dmma answer to a `far` warptile default)."""
    spoof = storage.DeviceIn(H100.name, "sm_86", 132)
    write(seeded, (spoof, BIG, measurement(WARPTILE, 50.0, trusted=False)))
    refresh(app_client)
    assert_h100_answer_holds(app_client)


def test_a_name_only_untrusted_uploads_used_is_not_a_known_device(
    app_client: TestClient,
) -> None:
    other = "NVIDIA H200"
    stored = app_client.post(
        "/v1/results", json=spoof_upload("sm_86", 132, other), headers=UNTRUSTED_AUTH
    )
    assert stored.status_code == 201, stored.text  # kept, untrusted
    listed = {(d["name"], d["arch"]): d["trusted"] for d in app_client.get("/v1/devices").json()}
    assert listed[(other, "sm_86")] is False  # listed, and flagged as only a claim
    assert listed[(H100.name, "sm_90")] is True
    unknown = app_client.post("/v1/configs/best", json={**H100_4096, "device": other})
    assert unknown.status_code == 422
    assert "not a known device" in unknown.json()["detail"][0]["msg"]
    # Asked with its real description it gets the H100's answer (same kind), not sm_86's.
    kind = answer(app_client, device=other, device_arch="sm_90", device_sm_count=132)
    assert (kind["device_match"], kind["name"]) == ("same_kind", DMMA)
    # The untrusted claim reserved nothing: the trusted writer may store the real one.
    real = app_client.post(
        "/v1/results", json=spoof_upload("sm_90", 132, other), headers=TRUSTED_AUTH
    )
    assert real.status_code == 201, real.text


@pytest.mark.parametrize(
    ("sm_count", "ms", "field", "needle"),
    [
        (100_000, 0.0021, "device.sm_count", "must be at most 1024"),  # 0.0021 ms at 4096^3
        (114, 5.0, "device", "is known as sm_90 with 132 SMs, not sm_90 with 114 SMs"),
    ],
)
def test_a_trusted_upload_claiming_other_sms_under_a_known_name_is_refused(
    app_client: TestClient, sm_count: int, ms: float, field: str, needle: str
) -> None:
    body = spoof_upload("sm_90", sm_count)
    body["measurements"][0]["ms"] = ms
    response = app_client.post("/v1/results", json=body, headers=TRUSTED_AUTH)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert [e["field"] for e in errors] == [field] and needle in errors[0]["msg"]
    assert_h100_answer_holds(app_client)


BAD_PROVENANCE = {
    "deep": (nested(256), "nests deeper than 8 levels"),
    "surrogate": ({"worker": "gpu\ud8000"}, "lone surrogate"),
    "surrogate key": ({"gpu\udc00": 1}, "lone surrogate"),
    "nan": ({"clock": float("nan")}, "must be a finite number, got nan"),
    "infinity": ({"clock": [1.0, float("inf")]}, "must be a finite number, got inf"),
    "keys": ({f"k{i}": i for i in range(65)}, "at most 64 keys"),
    "size": ({"log": "x" * 17_000}, "at most 16384 bytes"),
}


@pytest.mark.parametrize("kind", list(BAD_PROVENANCE))
def test_an_upload_with_a_bad_provenance_is_one_422_naming_it(
    app_client: TestClient, kind: str
) -> None:
    provenance, needle = BAD_PROVENANCE[kind]
    total = app_client.get("/v1/results").json()["total"]
    body = upload(0.25)
    body["measurements"][1]["provenance"] = provenance
    response = post_raw(app_client, body, TRUSTED_AUTH)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"].startswith("measurements.1.provenance")
    assert error["loc"][:4] == ["body", "measurements", 1, "provenance"]
    assert needle in error["msg"]
    assert app_client.get("/v1/results").json()["total"] == total


@pytest.mark.parametrize("kind", ["deep", "surrogate", "surrogate key", "keys", "size"])
def test_a_stored_bad_provenance_breaks_no_page_and_no_answer(with_dmma: str, kind: str) -> None:
    """Rows written before these rules: every page holding them, and the answer they are the
    best config of, still answer 200, with the provenance replaced by one key saying why."""
    provenance, needle = BAD_PROVENANCE[kind]
    best_id = _best_measurement_id(with_dmma)
    set_provenance(with_dmma, best_id, provenance)
    with client_on(with_dmma) as client:
        _assert_pages_and_answers_hold(client, best_id, needle)


def test_a_nan_sqlite_stored_breaks_no_page_and_no_answer(tmp_path: Path) -> None:
    """SQLite stores NaN in JSON (PostgreSQL refuses it, so only SQLite can hold one): a row
    written so before these rules is shown, not a 500, and its answer still comes."""
    url = f"sqlite:///{tmp_path / 'nan.db'}"
    seed(url)
    write(url, (H100, BIG, dmma_record()))
    best_id = _best_measurement_id(url)
    set_provenance(url, best_id, {"clock": float("nan")})
    with client_on(url) as client:
        _assert_pages_and_answers_hold(client, best_id, "must be a finite number, got nan")


def _assert_pages_and_answers_hold(app_client: TestClient, best_id: int, needle: str) -> None:
    for query in ("/v1/results", "/v1/results?limit=1", f"/v1/results?cursor={best_id + 1}"):
        page = app_client.get(query)
        assert page.status_code == 200, page.text
        shown = {item["id"]: item["provenance"] for item in page.json()["items"]}
        assert needle in shown[best_id][UNREADABLE_KEY]
    got = answer(app_client)
    assert got["name"] == DMMA and needle in got["provenance"][UNREADABLE_KEY]
    assert app_client.get("/healthz").status_code == 200
    # Its neighbours (nearest answers from it) answer too.
    near = app_client.post("/v1/configs/best", json={**H100_4096, "m": 4000})
    assert near.status_code == 200 and near.json()["source"] == "nearest"


def _best_measurement_id(url: str) -> int:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            found = storage.best_for(session, H100.name, 4096, 4096, 4096)
            assert found is not None
            return found[1].id
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("dtype", "name", "field", "needle"),
    [
        ("float16", WARPTILE, "family", "warptile computes float32 inputs"),
        ("float32", HMMA_F16, "family", "hmma computes float16/bfloat16 inputs"),
        ("float16", HMMA_BF16, "config_name", "hmma takes DTYPE=0 for it"),
    ],
)
def test_a_trusted_upload_of_a_family_that_does_not_compute_the_dtype_is_refused(
    app_client: TestClient, dtype: str, name: str, field: str, needle: str
) -> None:
    asked = {"m": 1024, "n": 1024, "k": 1024, "dtype": dtype, "device": H100.name}
    before = app_client.post("/v1/configs/best", json=asked).json()
    config = parse_config(name)
    body = upload(0.25)
    body["shape"]["dtype"] = dtype
    body["measurements"] = [
        {
            "family": config.family,
            "config_name": name,
            "params": config.as_dict(),
            "ms": 0.05,
            "cublas_ms": 0.06,
        }
    ]
    response = app_client.post("/v1/results", json=body, headers=TRUSTED_AUTH)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == f"measurements.0.{field}" and needle in error["msg"]
    assert app_client.post("/v1/configs/best", json=asked).json() == before


def test_a_stored_row_of_a_family_that_does_not_compute_the_dtype_is_never_served(
    seeded: str,
) -> None:
    """A row written before uploads were held to the rule (here around the API), a warptile
    time stored as the best of a float16 shape, is skipped like an unreadable config."""
    half = storage.ShapeIn(1024, 1024, 1024, "float16", "NN", "float16")
    write(seeded, (H100, half, measurement(WARPTILE, 0.01)))
    with client_on(seeded) as client:
        asked = {"m": 1024, "n": 1024, "k": 1024, "dtype": "float16", "device": H100.name}
        response = client.post("/v1/configs/best", json=asked)
        assert response.status_code == 200, response.text
        got = response.json()
        assert got["family"] == "hmma" and got["source"] == "default"
        assert response.headers["X-Gemmtune-Unreadable"].startswith("1 stored best config")
        assert client.get("/healthz").json()["unreadable_configs"] == 1


def test_untrusted_rows_naming_a_study_are_no_part_of_it(app_client: TestClient) -> None:
    """Listed by GET /v1/results, but neither a trial of the study they name (its page, its
    best so far) nor a study of their own on the dashboard."""
    total = app_client.get("/v1/results").json()["total"]
    for study in ("sweep/2048 #1", "outsider study"):
        body = upload(0.25)
        body["shape"] = {"m": 2048, "n": 2048, "k": 2048}
        for number, row in enumerate(body["measurements"]):
            row.update(study=study, trial_number=10 + number)
        stored = app_client.post("/v1/results", json=body, headers=UNTRUSTED_AUTH)
        assert stored.status_code == 201, stored.text
    assert app_client.get("/v1/results").json()["total"] == total + 4
    seeded_study = app_client.get("/v1/studies/sweep%2F2048%20%231").json()
    assert [t["trial_number"] for t in seeded_study["trials"]] == [0, 1, 2, 3]
    assert seeded_study["best"]["ms"] == 3.5  # the seed's own, not the upload's 0.25 ms
    assert app_client.get("/v1/studies/outsider%20study").status_code == 404
    assert "outsider study" not in app_client.get("/dashboard/studies").text
