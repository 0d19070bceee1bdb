"""Rows uploaded without the trusted token never enter a study: its history, its claims, its
finalists or its priors (study names are deterministic and shown on the dashboard, so anyone
holding the plain token can name one). Both backends."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

import storage
from storage import open_database
from tests.api.conftest import TOKEN, make_app
from tests.conftest import NewDatabase
from tests.tuner.fakes import AsMeasured
from tuner.core.phases import Phase
from tuner.core.shape import Shape
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

BIG = Shape(4096, 4096, 4096)
TRIALS = 20


def hijack(url: str, study: Study, names: list[str]) -> None:
    """Upload, with the plain token, one slow screening row per name and a final row for the
    first, all naming ``study``: what an outsider can do knowing the study's name."""
    device = study.device
    rows: list[dict[str, Any]] = []
    for number, name in enumerate(names):
        config = study.candidates[name]
        rows.append(
            {
                "family": config.family,
                "config_name": name,
                "params": config.as_dict(),
                "ms": 500.0 + number,
                "cublas_ms": 2.0,
                "study": study.name,
                "trial_number": number,
                "provenance": {"trusted": False, "worker": "outsider"},
            }
        )
    rows.append({**rows[0], "phase": Phase.FINAL.value, "trial_number": None})
    body = {
        "device": {"name": device.name, "arch": device.arch, "sm_count": device.sm_count},
        "shape": {"m": BIG.m, "n": BIG.n, "k": BIG.k},
        "measurements": rows,
    }
    app = make_app(url)
    try:
        with TestClient(app) as client:
            response = client.post(
                "/v1/results", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
            )
            assert response.status_code == 201, response.text
    finally:
        app.state.engine.dispose()


def test_untrusted_rows_naming_a_study_do_not_take_its_trials(
    new_database: NewDatabase,
) -> None:
    url = new_database()
    sessions = open_database(url)
    replay = ReplayEvaluator()
    # Reported as measured on the device, so that its finalist can become the best config (a
    # replayed time never does).
    study = Study(BIG, ("warptile",), AsMeasured(replay), SqlRecorder(sessions), "random", seed=5)
    study.prepare()
    planted = sorted(study.candidates)[: TRIALS + 5]  # more than the whole budget
    hijack(url, study, planted)

    progress = study.run(trials=TRIALS)

    with sessions() as session:
        screened = storage.measurements_for_study(session, study.name)
        finals = storage.measurements_for_study(session, study.name, phase=Phase.FINAL)
        best = storage.best_for(session, replay.device.name, BIG.m, BIG.n, BIG.k)
        uploaded, _ = storage.list_measurements(session, limit=1000)
    # Twenty real candidates were measured (by the replay), none taken from the uploads.
    assert progress.evaluated == TRIALS and len(screened) == TRIALS
    assert all(row.trusted and row.ms is not None and row.ms < 500 for row in screened)
    measured = {r.config_name: r.ms for r in progress.history}
    for name, ms in measured.items():
        assert ms == replay.evaluate(study.candidates[name], BIG).ms
    # The finalists are the study's own fastest, re-measured and trusted; one is the best.
    own_fastest = sorted((r.ms, r.config_name) for r in screened if r.status == "ok")[:3]
    assert {r.config_name for r in finals} >= {name for _, name in own_fastest[:1]}
    assert finals and all(row.trusted for row in finals)
    assert best is not None and best[1].trusted and best[1].phase == Phase.FINAL
    assert best[1].id in {row.id for row in finals}
    # The uploads are still stored and listed, untrusted.
    outsiders = [row for row in uploaded if not row.trusted]
    assert len(outsiders) == len(planted) + 1
    assert all(row.study == study.name for row in outsiders)


def test_untrusted_rows_are_no_prior_for_a_new_shape(new_database: NewDatabase) -> None:
    """A device's history (what a model-based sampler transfers to a new shape) is trusted
    rows only."""
    url = new_database()
    sessions = open_database(url)
    replay = ReplayEvaluator()
    study = Study(BIG, ("warptile",), replay, SqlRecorder(sessions), "random", seed=5)
    study.prepare()
    planted = sorted(study.candidates)[:3]
    hijack(url, study, planted)
    recorder = SqlRecorder(sessions)
    assert recorder.history(replay.device, "float32", "NN", "float32") == []
    assert recorder.evaluated(study.name) == {}


def test_an_uploaded_row_is_never_numbered_as_a_trial(new_database: NewDatabase) -> None:
    """A study gives its trial number to its own unnumbered screening row of a config, not to
    an upload of the same config naming the study."""
    sessions = open_database(new_database())
    device = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
    shape = storage.ShapeIn(64, 64, 64)
    name = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
    params = {"BM": 64, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WNITER": 1, "TM": 4, "TN": 4,
              "THREADS": 128}  # fmt: skip
    with sessions.begin() as session:
        for trusted in (False, True):
            row = storage.MeasurementIn(
                "warptile", name, params, ms=1.0, study="s", trusted=trusted
            )
            storage.record_measurement(session, device, shape, row)
        storage.number_measurement(session, "s", name, 7)
    with sessions() as session:
        rows, _ = storage.list_measurements(session)
        assert {row.trusted: row.trial_number for row in rows} == {True: 7, False: None}
