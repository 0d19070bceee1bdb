"""A replay run (``gemmtune tune --evaluator replay``) on a database whose device has a measured
best: the served answer stays the measured one, over the command line and HTTP alike, and the
replayed rows are listed as replayed (``GET /v1/results``, the dashboard's studies)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import make_app
from tests.tuner.cli.running import cli
from tuner.core.shape import Shape
from tuner.search.replay import ReplayEvaluator

BIG = Shape(4096, 4096, 4096)


def test_a_replay_run_leaves_the_measured_answer_served_and_says_what_it_replayed(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = ReplayEvaluator()
    device = storage.DeviceIn(replay.device.name, replay.device.arch, replay.device.sm_count)
    # The served answer: the table's slowest ok warptile config of 4096^3, as if measured so
    # (every replayed finalist is faster, so the old rule would have replaced it).
    rows = [r for (s, _), r in replay.rows.items() if s == BIG and r.family == "warptile"]
    slowest = max((r for r in rows if r.ok_ms is not None), key=lambda r: r.ok_ms or 0.0)
    assert slowest.ms is not None
    measured_ms = slowest.ms
    url = f"sqlite:///{tmp_path}/served.db"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    with storage.make_session_factory(engine).begin() as session:
        storage.record_measurement(
            session,
            device,
            storage.ShapeIn(BIG.m, BIG.n, BIG.k),
            storage.MeasurementIn(
                "warptile",
                slowest.config_name,
                {},
                ms=measured_ms,
                cublas_ms=measured_ms * 1.13,
                phase="final",
            ),
        )
    engine.dispose()

    code, _, err = cli(
        capsys, "tune", "--evaluator", "replay", "--family", "warptile", "--shape", str(BIG),
        "--trials", "6", "--sampler", "random", "--db", url,
    )  # fmt: skip
    assert code == 0, err

    code, out, _ = cli(capsys, "best", "--shape", str(BIG), "--device", device.name, "--db", url)
    assert code == 0 and out.splitlines()[0] == slowest.config_name
    assert f"{measured_ms:.4f} ms" in out

    app = make_app(url)
    with TestClient(app) as client:
        body = {"m": BIG.m, "n": BIG.n, "k": BIG.k, "device": device.name}
        answer = client.post("/v1/configs/best", json=body).json()
        assert (answer["name"], answer["source"], answer["ms"]) == (
            slowest.config_name,
            "exact",
            measured_ms,
        )
        listed = client.get("/v1/results", params={"limit": 500}).json()["items"]
        kinds = {(item["config_name"], item["ms"], item["evaluator"]) for item in listed}
        assert (slowest.config_name, measured_ms, "gpu") in kinds
        replayed = [item for item in listed if item["evaluator"] == "replay"]
        assert len(replayed) >= 6  # the trials, and their finalists
        assert all("replayed_from" in item["provenance"] for item in replayed)
        page = client.get("/dashboard/studies").text
        assert "replayed, not measured" in page
        [study] = {item["study"] for item in replayed}
        study_page = client.get(f"/dashboard/studies/{study}").text
        assert "Replayed, not measured." in study_page
    app.state.engine.dispose()
