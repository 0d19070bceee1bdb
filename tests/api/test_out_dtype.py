"""out_dtype through the API, the client and the CLI: a half C is the default for half inputs,
float32 C stays available, each is answered from its own rows, a bad value is a 422 naming it,
and an upload without the field means float32 C."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, TRUSTED, LiveServer, make_app, seed
from tests.tuner.cli.running import cli
from tuner.client import best

HMMA = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
HALF = {"m": 4096, "n": 4096, "k": 4096, "dtype": "bfloat16", "layout": "NT"}


@pytest.fixture
def half_client(tmp_path: Path) -> Any:
    """The seeded database plus bfloat16 NT 4096^3 measured writing float32 C (0.4 ms) and
    writing bfloat16 C (0.3 ms)."""
    url = f"sqlite:///{tmp_path / 'half.db'}"
    seed(url)
    sessions = storage.make_session_factory(storage.make_engine(url))
    with sessions.begin() as session:
        for out, name, ms in (("float32", HMMA, 0.4), ("bfloat16", HMMA + "_out2", 0.3)):
            shape = storage.ShapeIn(4096, 4096, 4096, "bfloat16", "NT", out)
            measured = storage.MeasurementIn("hmma", name, {"BM": 128}, ms=ms, cublas_ms=0.2)
            storage.record_measurement(session, H100, shape, measured)
    app = make_app(url)
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def test_half_inputs_get_a_half_c_by_default_and_float32_c_when_asked(
    half_client: TestClient,
) -> None:
    default = half_client.post("/v1/configs/best", json=HALF).json()
    assert (default["source"], default["name"], default["out_dtype"]) == (
        "exact",
        HMMA + "_out2",
        "bfloat16",
    )
    assert default["ms"] == 0.3
    wide = half_client.post("/v1/configs/best", json={**HALF, "out_dtype": "float32"}).json()
    assert (wide["source"], wide["name"], wide["out_dtype"], wide["ms"]) == (
        "exact",
        HMMA,
        "float32",
        0.4,
    )
    assert (
        half_client.post("/v1/configs/best", json={"m": 8, "n": 8, "k": 8}).json()["out_dtype"]
        == "float32"
    )


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"out_dtype": "bfloat16"}, "must be one of float32 for float32 inputs, got 'bfloat16'"),
        ({"dtype": "float16", "out_dtype": "bfloat16"}, "float32, float16 for float16 inputs"),
        ({"dtype": "float16", "out_dtype": "int8"}, "float32"),
    ],
)
def test_a_type_of_c_the_inputs_cannot_write_is_a_422_naming_out_dtype(
    client: TestClient, body: dict[str, str], needle: str
) -> None:
    response = client.post("/v1/configs/best", json={"m": 8, "n": 8, "k": 8, **body})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == "out_dtype" and needle in error["msg"]


def test_an_upload_without_out_dtype_is_float32_c(
    sqlite_client: TestClient, tmp_path: Path
) -> None:
    from tests.api.test_results import upload

    auth = {"Authorization": f"Bearer {TRUSTED}"}
    old = upload(0.25)
    assert sqlite_client.post("/v1/results", json=old, headers=auth).status_code == 201
    rows = sqlite_client.get("/v1/results").json()["items"]
    assert {r["out_dtype"] for r in rows} == {"float32"}
    bad = upload(0.25)
    bad["shape"]["out_dtype"] = "bfloat16"  # float32 inputs
    response = sqlite_client.post("/v1/results", json=bad, headers=auth)
    assert response.status_code == 422 and "shape.out_dtype" in response.text


def test_the_client_sends_out_dtype_over_http_and_reads_it_from_the_database(
    live_server: LiveServer,
) -> None:
    db = live_server.app.state.settings.database_url
    for where in ({"url": live_server.url}, {"db": db}):
        half = best(64, 64, 64, dtype="bfloat16", layout="NT", device=None, **where)
        assert half.out_dtype == "bfloat16" and half.name.endswith("_dt1_ly1_out2")
        wide = best(
            64, 64, 64, dtype="bfloat16", layout="NT", device=None, out_dtype="float32", **where
        )
        assert wide.out_dtype == "float32" and wide.name.endswith("_dt1_ly1")


def test_the_cli_takes_out_dtype(
    half_client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    db = half_client.app.state.settings.database_url  # type: ignore[attr-defined]
    args = ("best", "--shape", "4096x4096x4096", "--dtype", "bfloat16", "--layout", "NT")
    code, out, err = cli(capsys, *args, "--db", db)
    assert code == 0, err
    assert out.splitlines()[0] == HMMA + "_out2" and "C written as bfloat16" in out
    code, out, err = cli(capsys, *args, "--out-dtype", "float32", "--db", db)
    assert code == 0, err
    assert out.splitlines()[0] == HMMA and "C written as float32" in out
    code, out, err = cli(capsys, *args, "--out-dtype", "float16", "--db", db)
    assert code == 2 and "`out_dtype` must be one of float32, bfloat16" in err
