"""A vendor answer (``cublaslt``) keeps its algorithm's identity from the measurement to the
caller: through storage's export and import, the HTTP answer (which has no kernel source to
give) and the client's answer, which names the words ``tuner.matmul`` replays."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, make_app, measurement
from tuner.client import best

ALGO = [format(0x1000 + word, "016x") for word in range(8)]
VENDOR = {"library": "cublasLt", "version": 130100, "rank": 2, "algo": ALGO, "replayed": False}
NAME = "cublaslt_rk2_pad8"
SHAPE = storage.ShapeIn(4097, 4097, 4097, "bfloat16", "NT")


def _database(path: Path) -> str:
    url = f"sqlite:///{path}"
    storage.upgrade(storage.make_engine(url))
    return url


def _vendor_measurement() -> storage.MeasurementIn:
    return measurement(NAME, 0.30, provenance={"device": H100.name, "vendor": VENDOR})


def test_the_algorithm_survives_export_import_and_is_answered(tmp_path: Path) -> None:
    source = _database(tmp_path / "measured.db")
    sessions = storage.make_session_factory(storage.make_engine(source))
    with sessions.begin() as session:
        storage.record_measurement(session, H100, SHAPE, measurement(
            "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1", 0.45))  # fmt: skip
        storage.record_measurement(session, H100, SHAPE, _vendor_measurement())
    with sessions() as session:
        exported = json.loads(json.dumps(storage.export_json(session)))

    target = _database(tmp_path / "imported.db")
    assert storage.import_json(storage.make_session_factory(storage.make_engine(target)), exported)

    # Measured writing float32 C (a ShapeIn's default).
    kind = {"dtype": "bfloat16", "layout": "NT", "out_dtype": "float32"}
    answer = best(4097, 4097, 4097, db=target, **kind, device=None)
    assert (answer.name, answer.family, dict(answer.params)) == (NAME, "cublaslt", {"RANK": 2})
    assert answer.provenance["vendor"] == VENDOR
    assert answer.vendor_algorithm() == ALGO  # measured on this very shape: replayed as stored
    # A neighbour's answer asks the heuristic for the rank on its own shape instead.
    near = best(4000, 4097, 4097, db=target, **kind, device=None)
    assert near.source == "nearest" and near.name == NAME and near.vendor_algorithm() is None

    app = make_app(target)
    try:
        with TestClient(app) as client:
            body = {"m": 4097, "n": 4097, "k": 4097, **kind}
            response = client.post("/v1/configs/best", json={**body, "include_source": True})
    finally:
        app.state.engine.dispose()
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["name"] == NAME and data["provenance"]["vendor"]["algo"] == ALGO
    assert data["kernel"] is None  # a library call has no CUDA source
