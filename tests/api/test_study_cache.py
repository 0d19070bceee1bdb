"""The study page keeps what it computed per study state, and reads the study again when the
study changes: a new trial, or a trial numbered after it was stored."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

import storage
from api import study_cache
from api.study_cache import CachedStudy, Importances, StudyCache
from api.study_data import Study, load_study
from tests.api.conftest import FAST, H100, measurement

STUDY, PAGE = "sweep/2048 #1", "/dashboard/studies/sweep/2048%20%231"
SHAPE = storage.ShapeIn(2048, 2048, 2048)


def reads(client: TestClient) -> int:
    cache: StudyCache = client.app.state.study_cache  # type: ignore[attr-defined]
    return cache.reads


def add_trial(client: TestClient, ms: float, trial_number: int | None) -> None:
    sessions = client.app.state.sessions  # type: ignore[attr-defined]
    record = measurement(FAST, ms, study=STUDY, trial_number=trial_number)
    with sessions.begin() as session:
        storage.record_measurement(session, H100, SHAPE, record)


def trial_numbers(html: str) -> list[str]:
    body = html.split('<table class="trials">')[1]
    return re.findall(r"<tr><td>(\d+)</td>", body)


def test_an_unchanged_study_is_read_once_for_every_view(sqlite_client: TestClient) -> None:
    first = sqlite_client.get(PAGE).text
    assert reads(sqlite_client) == 1
    again = sqlite_client.get(PAGE).text
    sorted_ = sqlite_client.get(PAGE, params={"sort": "tflops", "x": "BM"}).text
    assert reads(sqlite_client) == 1 and again == first
    assert "TFLOP/s against BM" in sorted_


def test_a_new_trial_is_on_the_next_page_view(sqlite_client: TestClient) -> None:
    before = sqlite_client.get(PAGE).text
    assert "4 of 4 trials" in before
    add_trial(sqlite_client, 0.25, trial_number=4)  # faster than every trial so far
    after = sqlite_client.get(PAGE).text
    assert reads(sqlite_client) == 2
    assert "5 of 5 trials" in after and "trial 4 of 5" in after  # the new best, as the best
    assert trial_numbers(after) == ["0", "1", "2", "3", "4"]


def test_numbering_a_stored_trial_is_a_change_too(sqlite_client: TestClient) -> None:
    add_trial(sqlite_client, 9.0, trial_number=None)  # stored before its Optuna trial
    unnumbered = sqlite_client.get(PAGE).text
    sessions = sqlite_client.app.state.sessions  # type: ignore[attr-defined]
    session: Session
    with sessions.begin() as session:
        storage.number_measurement(session, STUDY, FAST, 7)
    numbered = sqlite_client.get(PAGE).text
    assert reads(sqlite_client) == 2
    assert "7" not in trial_numbers(unnumbered) and trial_numbers(numbered)[-1] == "7"


def test_the_cache_keeps_the_latest_studies_only(sqlite_client: TestClient) -> None:
    sessions = sqlite_client.app.state.sessions  # type: ignore[attr-defined]
    with sessions.begin() as session:
        other = measurement(FAST, 1.0, study="another", trial_number=0)
        storage.record_measurement(session, H100, SHAPE, other)
    cache = StudyCache(size=1)
    with sessions() as session:
        assert cache.get(session, "no such study") is None and cache.reads == 0
        assert cache.get(session, STUDY) is not None and cache.get(session, STUDY) is not None
        assert cache.reads == 1
        assert cache.get(session, "another") is not None  # pushes the first one out
        assert cache.get(session, STUDY) is not None and cache.reads == 3


def test_a_small_study_computes_its_importances_again_on_every_new_trial(
    sqlite_client: TestClient,
) -> None:
    panel, study = "/dashboard/importances", {"study": STUDY}
    first = sqlite_client.get(panel, params=study).text
    assert "parameter importance (Optuna" in first and "as of" not in first
    add_trial(sqlite_client, 0.25, trial_number=4)  # 4 -> 5 trials: more than 5 % more
    changed = sqlite_client.get(panel, params=study).text
    assert "parameter importance (Optuna" in changed and "as of" not in changed
    assert reads(sqlite_client) == 2  # the panel reads the study as the page does


def test_a_growing_study_shows_its_last_importances_until_it_has_grown_enough(
    sqlite_client: TestClient,
) -> None:
    cache = StudyCache(stale_share=0.5)  # 4 trials: again from the 7th
    sessions = sqlite_client.app.state.sessions  # type: ignore[attr-defined]
    computed: list[int] = []

    def importances_now() -> Importances:
        with sessions() as session:
            found = cache.get(session, STUDY)
        assert found is not None
        trials = len(found.study.trials)
        return found.importances(None, lambda: computed.append(trials) or {"BM": trials})

    assert importances_now() == Importances({"BM": 4}, 4, current=True)
    add_trial(sqlite_client, 0.25, trial_number=4)
    add_trial(sqlite_client, 0.3, trial_number=5)
    assert importances_now() == Importances({"BM": 4}, 4, current=False)  # 6 trials
    add_trial(sqlite_client, 0.35, trial_number=6)
    assert importances_now() == Importances({"BM": 7}, 7, current=True)
    assert importances_now().current and computed == [4, 7]  # kept for the state


def test_trials_appended_to_a_running_study_are_read_alone(
    sqlite_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole: list[str] = []
    monkeypatch.setattr(
        study_cache,
        "load_study",
        lambda s, name, phase: whole.append(name) or load_study(s, name, phase),
    )
    cache = StudyCache()
    sessions = sqlite_client.app.state.sessions  # type: ignore[attr-defined]

    def cached() -> CachedStudy:
        with sessions() as session:
            found = cache.get(session, STUDY)
        assert found is not None
        return found

    def read_whole() -> Study:
        with sessions() as session:
            found = load_study(session, STUDY)
        assert found is not None
        return found

    cached()
    add_trial(sqlite_client, 0.25, trial_number=4)
    add_trial(sqlite_client, 5.0, trial_number=5)
    appended = cached().study
    assert whole == [STUDY]  # the two new rows only
    assert appended == read_whole() and appended.best is not None and appended.best.ms == 0.25
    add_trial(sqlite_client, 6.0, trial_number=1)  # a resumed study's late trial: not at the end
    reordered = cached().study
    assert whole == [STUDY, STUDY] and reordered == read_whole()
    assert [t.number for t in reordered.trials] == [0, 1, 1, 2, 3, 4, 5]
