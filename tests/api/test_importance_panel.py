"""A study page never computes parameter importances: it leaves a placeholder that its script
fills from ``/dashboard/importances``, which computes them once per study state."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

import api.importance
from api.importance import importances
from api.study_cache import CachedStudy
from api.study_data import load_study

STUDY, PAGE = "sweep/2048 #1", "/dashboard/studies/sweep/2048%20%231"


def panel_url(page: str) -> str:
    """The URL the page's script fetches its importances panel from."""
    found = re.search(r'id="importances" data-fragment="([^"]+)"', page)
    assert found, "no importances placeholder on the page"
    return html.unescape(found.group(1))


def bar_names(panel: str) -> list[str]:
    """The parameters of the importance chart's bars, top to bottom (from their tooltips)."""
    return re.findall(r"<g><title>([^:<]+): \d+%</title>", panel)


def test_the_page_renders_without_computing_importances(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("importances computed while rendering the page")

    monkeypatch.setattr(api.importance, "_importances", refuse)
    monkeypatch.setattr(CachedStudy, "importances", refuse)
    for params in ({}, {"family": "warptile"}, {"sort": "tflops", "x": "BM"}):
        response = client.get(PAGE, params=params)
        assert response.status_code == 200, response.text
        assert "parameter importance (Optuna" not in response.text
    assert panel_url(response.text) == "/dashboard/importances?study=sweep%2F2048+%231&family="


def test_the_panel_holds_the_importances_of_the_page_s_study(client: TestClient) -> None:
    url = panel_url(client.get(PAGE).text)
    response = client.get(url)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    panel = response.text
    assert "<html" not in panel and "parameter importance (Optuna PED-ANOVA" in panel
    sessions = client.app.state.sessions  # type: ignore[attr-defined]
    with sessions() as session:
        study = load_study(session, STUDY)
    assert study is not None
    expected = importances(study.ok)
    assert len(expected) >= 2  # family and at least one tile size vary among the ok trials
    assert bar_names(panel) == list(expected)  # most important first
    summary = panel.split('id="importances-summary">')[1].split("</p>")[0]
    assert re.findall(r"<b>([^<]+)</b>", summary) == list(expected)[:3]


def test_the_panel_is_computed_once_per_study_state(
    sqlite_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed: list[int] = []
    original = api.importance._importances

    def counted(trials: list[object]) -> dict[str, float]:
        computed.append(len(trials))
        return original(trials)  # type: ignore[arg-type]

    monkeypatch.setattr(api.importance, "_importances", counted)
    url = panel_url(sqlite_client.get(PAGE).text)
    first = sqlite_client.get(url).text
    assert sqlite_client.get(url).text == first and computed == [3]  # the 3 ok trials


def test_the_panel_of_one_family_and_of_a_family_too_small(client: TestClient) -> None:
    warptile = client.get("/dashboard/importances", params={"study": STUDY, "family": "warptile"})
    assert "What mattered most within warptile" in warptile.text
    assert "family" not in bar_names(warptile.text)  # one family: not a parameter there
    single = client.get("/dashboard/importances", params={"study": STUDY, "family": "pipelined"})
    assert single.status_code == 200
    assert "No parameter importances within pipelined" in single.text  # one ok trial


def test_the_panel_names_a_study_or_family_that_is_not_there(client: TestClient) -> None:
    missing = client.get("/dashboard/importances", params={"study": "no such study"})
    assert missing.status_code == 404 and "no such study" in missing.text
    bad = client.get("/dashboard/importances", params={"study": STUDY, "family": "nope"})
    assert bad.status_code == 422 and "`family` must be one of" in bad.text and "nope" in bad.text
