"""The dashboard: HTML with the table and inline SVG charts, and the real thing in Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import LiveServer

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_dashboard_html_has_table_chart_and_studies(sqlite_client: TestClient) -> None:
    html = sqlite_client.get("/dashboard").text
    assert '<table class="best-configs">' in html
    assert html.count("<svg") == 2  # one % of cuBLAS chart per device
    assert "1024\u00d71024\u00d71024" in html and "200.0 %" in html
    assert 'href="/dashboard/studies/sweep/2048%20%231"' in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org', "")


def test_study_page_has_curve_and_scatter(sqlite_client: TestClient) -> None:
    response = sqlite_client.get("/dashboard/studies/sweep/2048%20%231")
    assert response.status_code == 200
    html = response.text
    assert 'class="best-so-far"' in html
    assert "registers per thread" in html and html.count("<svg") == 2
    assert sqlite_client.get("/dashboard/studies/none").status_code == 404


def test_empty_dashboard_says_how_to_get_data(db_url: str) -> None:
    from tests.api.conftest import make_app

    app = make_app(db_url)
    with TestClient(app) as client:
        html = client.get("/dashboard").text
    app.state.engine.dispose()
    assert "No results yet" in html


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def headless(url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    browser = chromium()
    assert browser is not None
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp}",
            "--window-size=1280,1400",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "HOME": str(tmp)},
    )


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (.ci/run installs it)")
def test_dashboard_in_headless_chromium(live_server: LiveServer, tmp_path: Path) -> None:
    url = f"{live_server.url}/dashboard"
    dom = headless(url, tmp_path / "dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert re.search(r'<table class="best-configs">.*NVIDIA H100', dom.stdout, re.S)
    assert "<svg" in dom.stdout and "% of cuBLAS per shape" in dom.stdout
    ARTIFACTS.mkdir(exist_ok=True)
    for name, page in (
        ("dashboard", url),
        ("study", f"{live_server.url}/dashboard/studies/sweep/2048%20%231"),
    ):
        shot = ARTIFACTS / f"{name}.png"
        shot.unlink(missing_ok=True)
        done = headless(page, tmp_path / name, f"--screenshot={shot}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
