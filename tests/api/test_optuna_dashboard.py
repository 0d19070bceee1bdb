"""optuna-dashboard opens the Optuna studies that ``gemmtune tune`` keeps in its own database
(docs/service.md: ``optuna-dashboard sqlite:///gemmtune.db``): its JSON API, which its pages read,
lists a replayed study and returns its trials with their values and parameters."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import storage
from tests.tuner.search.test_priors import TABLE
from tuner.core.shape import Shape
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study

optuna_dashboard = pytest.importorskip("optuna_dashboard")


def get(app: Any, path: str) -> Any:
    """GET ``path`` from a WSGI app; the decoded JSON body."""
    route, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": route,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
    }
    status: list[str] = []
    body = b"".join(app(environ, lambda code, headers, *rest: status.append(code)))
    assert status[0].startswith("200"), (status, body[:500])
    return json.loads(body)


def test_optuna_dashboard_reads_a_tuned_study_from_the_gemmtune_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/gemmtune.db"
    sessions = storage.open_database(url)
    replay = ReplayEvaluator(TABLE)
    study = Study(
        Shape(4096, 4096, 4096),
        ("warptile",),
        replay,
        SqlRecorder(sessions),
        "random",
        seed=0,
        optuna_storage=url,
    )
    study.run(4)
    app = optuna_dashboard.wsgi(url)
    listed = get(app, "/api/studies")["study_summaries"]
    assert [s["study_name"] for s in listed] == [study.name]
    detail = get(app, f"/api/studies/{listed[0]['study_id']}?after=0")
    complete = [t for t in detail["trials"] if t["state"] == "Complete"]
    assert len(complete) >= 4
    params = {p["name"] for t in complete for p in t["params"]}
    assert {"warptile.BM", "warptile.BN", "warptile.BK"} <= params  # the study's own names
    with sessions() as session:
        stored = storage.measurements_for_study(session, study.name)
    fastest = min(r.ms for r in stored if r.ms is not None)
    assert min(t["values"][0] for t in complete) == pytest.approx(fastest)
