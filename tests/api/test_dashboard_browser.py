"""Every dashboard page in headless Chromium: its plots are drawn, its table filters, nothing
is logged as an error and no request leaves the machine. Screenshots of each page are kept in
``test-artifacts/`` (ignored by git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.browser import Browser, PageLog, chromium
from tests.api.conftest import LiveServer

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="chromium not installed (.ci/run installs it)"
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
STUDY = "/dashboard/studies/sweep/2048%20%231"


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    with Browser(tmp_path / "profile") as opened:
        yield opened  # type: ignore[misc]


def stays_local(log: PageLog, server: LiveServer) -> None:
    """Only the server's own URLs (and inline data) were requested, and no error was logged."""
    away = [u for u in log.requests if not u.startswith((server.url, "data:", "blob:"))]
    assert not away, away
    assert not log.errors, log.errors


# Pairs of texts of one chart whose boxes, as laid out, overlap (a label over a title).
OVERLAPS = """
[...document.querySelectorAll('svg.chart')].flatMap(svg => {
  const boxes = [...svg.querySelectorAll('text')]
    .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
  const hits = [];
  boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
    if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1
        && q.top < p.bottom - 1) hits.push(a + ' / ' + b);
  }));
  return hits;
})
"""


def labels_apart(browser: Browser) -> None:
    assert browser.evaluate(OVERLAPS) == []


def keep(browser: Browser, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
    return shot


def count(browser: Browser, selector: str) -> int:
    return int(browser.evaluate(f"document.querySelectorAll({selector!r}).length"))


IMPORTANCES_LOADED = "document.querySelector('#importances').dataset.loaded === 'true'"


def test_overview_page(browser: Browser, live_server: LiveServer) -> None:
    stays_local(browser.open(f"{live_server.url}/dashboard"), live_server)
    assert count(browser, "svg.chart rect") >= 2  # bars of the % of cuBLAS chart
    assert count(browser, "table.best-configs") == 2  # one per device
    assert "NVIDIA H100" in browser.evaluate("document.body.innerText")
    # Fits 1400 px: no horizontal scroll in any table.
    wide = browser.evaluate(
        "[...document.querySelectorAll('.scroll')]"
        ".filter(e => e.scrollWidth > e.clientWidth).length"
    )
    assert wide == 0
    labels_apart(browser)  # the cuBLAS label clear of the title
    keep(browser, "dashboard")


def test_study_page_draws_its_plots_and_its_table_filters(
    browser: Browser, live_server: LiveServer
) -> None:
    stays_local(browser.open(f"{live_server.url}{STUDY}"), live_server)
    # The importances panel comes on its own request, which the page's script makes.
    stays_local(browser.wait_until(IMPORTANCES_LOADED), live_server)
    assert count(browser, "#importances svg.chart rect") >= 2  # a bar per parameter
    panel = browser.evaluate("document.querySelector('#importances').innerText")
    assert "What mattered most" in panel and "parameter importance (Optuna" in panel
    assert count(browser, "svg.chart") >= 5
    assert count(browser, "path.best-so-far") == 1 and count(browser, "g.reference") >= 1
    assert count(browser, "svg.chart polyline") == 3  # parallel coordinates: the ok trials
    assert count(browser, "table.trials tbody tr") == 4
    labels_apart(browser)
    keep(browser, "study")
    # Filter the table the way a person would: choose a status, press the button.
    stays_local(browser.submit("#table-form", {"status": "compile_failed"}), live_server)
    assert count(browser, "table.trials tbody tr") == 1
    assert "nvrtc failed" in browser.evaluate("document.querySelector('table.trials').innerText")


def test_studies_page(browser: Browser, live_server: LiveServer) -> None:
    stays_local(browser.open(f"{live_server.url}/dashboard/studies"), live_server)
    assert count(browser, "table.studies tbody tr") == 1
    keep(browser, "studies")


def test_shape_space_page_answers_a_typed_shape(browser: Browser, live_server: LiveServer) -> None:
    stays_local(browser.open(f"{live_server.url}/dashboard/shapes"), live_server)
    assert count(browser, "svg.chart circle") >= 3  # the tuned shapes
    stays_local(browser.submit("#ask", {"shape": "3x5x7"}), live_server)
    answer = browser.evaluate("document.querySelector('#answer').innerText")
    assert "far" in answer and "distance" in answer and "provenance" in answer
    labels_apart(browser)
    keep(browser, "shapes")


@pytest.mark.parametrize(("page", "ready"), [("/docs", ".opblock"), ("/redoc", "h1")])
def test_api_docs_work_offline(
    browser: Browser, live_server: LiveServer, page: str, ready: str
) -> None:
    stays_local(browser.open(f"{live_server.url}{page}", settle_s=2.0), live_server)
    assert count(browser, ready) >= 1


def test_a_running_study_page_refreshes_itself_when_a_trial_is_stored(
    browser: Browser, live_server: LiveServer
) -> None:
    import storage
    from tests.api.conftest import FAST, H100, measurement

    browser.open(f"{live_server.url}{STUDY}")
    assert browser.evaluate("document.getElementById('live-refresh').checked")  # just seeded
    trial = measurement(FAST, 3.0, study="sweep/2048 #1", trial_number=4, registers=99)
    with live_server.app.state.sessions.begin() as session:
        storage.record_measurement(session, H100, storage.ShapeIn(2048, 2048, 2048), trial)
    stays_local(browser.next_load(timeout=20), live_server)  # polled every 5 s, then reloaded
    assert count(browser, "table.trials tbody tr") == 5
