"""/docs and /redoc load their scripts and styles from the package, never from a CDN."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_reference_only_local_assets(sqlite_client: TestClient, page: str) -> None:
    response = sqlite_client.get(page)
    assert response.status_code == 200
    html = response.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(url.startswith("/static/vendor/") for url in assets), assets
    assert "cdn" not in html and "fonts.googleapis" not in html
    for url in assets:
        served = sqlite_client.get(url)
        assert served.status_code == 200, url
        assert served.content and "html" not in served.headers["content-type"], url


def test_swagger_ui_shows_no_validator_badge(sqlite_client: TestClient) -> None:
    assert '"validatorUrl": null' in sqlite_client.get("/docs").text


def test_vendored_assets_ship_their_licences() -> None:
    from api.app import STATIC

    vendor = STATIC / "vendor"
    assert "Apache License" in (vendor / "swagger-ui" / "LICENSE").read_text()
    assert (vendor / "swagger-ui" / "NOTICE").is_file()
    assert "MIT License" in (vendor / "redoc" / "LICENSE").read_text()


def test_the_vendored_scripts_fetch_nothing_from_a_cdn() -> None:
    from api.app import STATIC

    for script in (STATIC / "vendor").glob("*/*.js"):
        assert "cdn." not in script.read_text(encoding="utf-8"), script
