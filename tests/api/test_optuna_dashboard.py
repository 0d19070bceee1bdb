"""optuna-dashboard opens the Optuna studies that ``gemmtune tune`` keeps in its own database
(docs/service.md: ``optuna-dashboard sqlite:///gemmtune.db``): its JSON API, which its pages read,
lists a replayed study and returns its trials with their values and parameters."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import optuna
import pytest

import storage
from api.preload import preload
from tests.conftest import NewDatabase
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


def test_every_tuned_study_is_an_optuna_study_and_measurement_only_ones_are_not(
    new_database: NewDatabase, tmp_path: Path
) -> None:
    """The rule docs/service.md states: a study that ``gemmtune tune`` ran (its sampler proposed
    and was told each trial) is an Optuna study, every one of them, with one trial per screened
    measurement; a preloaded sweep table (like an import or an upload) is measurements alone,
    on gemmtune's pages only. The issue's "1 of 80" was one tuned study among preloaded ones."""
    url = new_database()
    sessions = storage.open_database(url, optuna_tables=True)
    sweeps = tmp_path / "results"
    sweeps.mkdir()
    shutil.copy(TABLE.with_name("h100-sweep-streamk-squares.jsonl"), sweeps)
    assert preload(sessions, sweeps).count > 0
    replay = ReplayEvaluator(TABLE)
    tuned = []
    for shape in (Shape(4096, 4096, 4096), Shape(1000, 1000, 1000)):
        study = Study(
            shape,
            ("warptile",),
            replay,
            SqlRecorder(sessions),
            "random",
            seed=0,
            optuna_storage=url,
            finalists=0,
        )
        study.run(3)
        study.close()
        tuned.append(study.name)
    with sessions() as session:
        listed = {s.name for s in storage.study_summaries(session)}
        screened = {n: len(storage.study_table(session, n)) for n in tuned}
    preloaded = listed - set(tuned)
    assert preloaded and all(n.startswith("h100-sweep-streamk-squares-") for n in preloaded)
    summaries = optuna.get_all_study_summaries(storage=url, include_best_trial=False)
    in_optuna = {s.study_name: s.n_trials for s in summaries}
    assert in_optuna == screened  # every tuned study, a trial per measurement; no sweep table
    sessions.kw["bind"].dispose()
