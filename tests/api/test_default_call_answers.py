"""The default cuBLAS call (``cublas``) as a stored best: it wins over a slower kernel of ours,
keeps its identity (library, version, function) through storage, and is answered over HTTP and
to the client as a vendor answer: no source, no algorithm to replay, the call by its name."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, make_app, measurement
from tuner.client import best, chosen
from tuner.core.shape import Shape

CALL = {"library": "cublas", "version": 130100, "call": "cublasGemmEx"}
OURS = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0"
SHAPE = storage.ShapeIn(4096, 4096, 4096, "float16", "NN")
KIND = {"dtype": "float16", "layout": "NN", "out_dtype": "float32"}


def _database(path: Path) -> str:
    url = f"sqlite:///{path}"
    storage.upgrade(storage.make_engine(url))
    sessions = storage.make_session_factory(storage.make_engine(url))
    with sessions.begin() as session:
        storage.record_measurement(session, H100, SHAPE, measurement(OURS, 0.26))
        provenance = {"device": H100.name, "vendor": CALL}
        storage.record_measurement(
            session, H100, SHAPE, measurement("cublas", 0.24, provenance=provenance)
        )
    return url


def test_the_default_call_is_stored_as_the_best_and_answered(tmp_path: Path) -> None:
    db = _database(tmp_path / "measured.db")
    answer = best(4096, 4096, 4096, db=db, **KIND, device=None)
    assert (answer.source, answer.name, answer.family) == ("exact", "cublas", "cublas")
    assert dict(answer.params) == {}
    assert answer.provenance["vendor"] == CALL
    assert answer.vendor_algorithm() is None  # cuBLAS picks its own algorithm: nothing to replay
    # What tuner.matmul and tuner.torch run for the shape: the call, by its name.
    shape = Shape(4096, 4096, 4096, "float16", "NN", "float32")
    assert chosen(shape, db=db, device=None) == ("cublas", None)

    app = make_app(db)
    try:
        with TestClient(app) as client:
            body = {"m": 4096, "n": 4096, "k": 4096, **KIND, "include_source": True}
            response = client.post("/v1/configs/best", json=body)
    finally:
        app.state.engine.dispose()
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["name"] == "cublas" and data["provenance"]["vendor"] == CALL
    assert data["kernel"] is None  # a library call has no CUDA source


def test_a_slower_default_call_leaves_our_kernel_the_answer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ours.db'}"
    storage.upgrade(storage.make_engine(url))
    sessions = storage.make_session_factory(storage.make_engine(url))
    with sessions.begin() as session:
        storage.record_measurement(session, H100, SHAPE, measurement("cublas_pad8", 0.30))
        storage.record_measurement(session, H100, SHAPE, measurement(OURS, 0.26))
    assert best(4096, 4096, 4096, db=url, **KIND, device=None).name == OURS
