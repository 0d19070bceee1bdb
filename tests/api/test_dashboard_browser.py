"""Every dashboard page in headless Chromium, as a new user would try it (issue 43, item 6): its
plots are drawn with axes that fit the data, a log scale and the axis, value and colour a reader
chooses; no slice for a one-valued parameter; the studies list searches by readable titles; the
shape form asks what the API is asked and shows the rule branch that applied; refused pages are
HTML; every page works in an 800 px window; nothing is logged as an error and no request leaves
the machine.

Screenshots of each page land in ``$GEMMTUNE_SCREENSHOT_DIR`` when set (CI keeps that folder as
an artifact), else in ``test-artifacts/screenshots/`` under the repository (ignored by git).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.browser import Browser, PageLog, chromium
from tests.api.conftest import H100, LiveServer

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="chromium not installed (.ci/run installs it)"
)

SCREENSHOTS = Path(
    os.environ.get("GEMMTUNE_SCREENSHOT_DIR")
    or Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
)
STUDY = "/dashboard/studies/sweep/2048%20%231"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with Browser(tmp_path / "profile") as opened:
        yield opened


def stays_local(log: PageLog, server: LiveServer, refused: bool = False) -> None:
    """Only the server's own URLs (and inline data) were requested, and no error was logged
    (but, for a page that is ``refused``, the browser's note of its own 4xx status)."""
    away = [u for u in log.requests if not u.startswith((server.url, "data:", "blob:"))]
    assert not away, away
    errors = log.errors
    if refused:
        errors = [e for e in errors if "the server responded with a status of 4" not in e]
    assert not errors, log.errors


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
    """A full-page screenshot of what the browser shows, kept as ``SCREENSHOTS/{name}.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{name}.png"
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


# --- item 6 of issue 43, point by point -------------------------------------------------------

SPREAD = "/dashboard/studies/spread"


def add_spread_study(server: LiveServer) -> None:
    """The 24-trial study of test_study_charts (0.05 to 20 ms, four BM, three BK values)."""
    import storage
    from tests.api.test_study_charts import spread_records

    with server.app.state.sessions.begin() as session:
        storage.record_measurements(session, spread_records())


def chosen_chart(browser: Browser, title_start: str) -> dict[str, Any] | None:
    """What the chart titled ``title_start...`` shows: its tick values, legend and dots."""
    shown: dict[str, Any] | None = browser.evaluate(
        f"""(() => {{
        const svg = [...document.querySelectorAll('svg.chart')].find(s =>
            s.querySelector('title').textContent.startsWith({title_start!r}));
        if (!svg) return null;
        const values = c => [...svg.querySelectorAll('text.' + c)].map(t => +t.textContent);
        return {{
            x: values('x-tick'), y: values('y-tick'),
            legendTitle: svg.querySelector('text.legend-title')?.textContent ?? null,
            legend: [...svg.querySelectorAll('g.legend text')].map(t => t.textContent),
            dots: svg.querySelectorAll('circle').length,
        }};
        }})()"""
    )
    return shown


def test_a_reader_chooses_a_log_scale_the_axes_and_the_colour(
    browser: Browser, live_server: LiveServer
) -> None:
    from tests.api.test_study_charts import TRIALS, spread_ms

    add_spread_study(live_server)
    stays_local(browser.open(f"{live_server.url}{SPREAD}"), live_server)
    choice = {"x": "BM", "y": "ms", "colour": "BK", "log_x": "true", "log_y": "true"}
    stays_local(browser.submit("#chart-form", choice), live_server)
    chart = chosen_chart(browser, "time, ms against BM, coloured by BK")
    assert chart is not None
    assert chart["y"] == [0.01, 0.1, 1, 10, 100]  # log-spaced: decades around 0.05-20 ms
    assert chart["x"] == [32, 64, 128, 256]  # the chosen parameter, doubling
    assert chart["legendTitle"] == "BK" and chart["legend"] == ["8", "16", "32"]
    assert chart["dots"] == TRIALS
    labels_apart(browser)
    keep(browser, "chart-log-scale")
    # Zoom by a range: the form keeps the other choices.
    stays_local(browser.submit("#chart-form", {"y_max": "1"}), live_server)
    zoomed = chosen_chart(browser, "time, ms against BM")
    assert zoomed is not None
    assert zoomed["dots"] == sum(spread_ms(n) <= 1 for n in range(TRIALS))
    assert max(zoomed["y"]) == 1
    keep(browser, "chart-zoomed")
    # A log scale cannot start below 0: the page says so, naming the field.
    stays_local(browser.submit("#chart-form", {"y_min": "-1"}), live_server, refused=True)
    error = browser.evaluate("document.querySelector('#error').innerText")
    assert "`y_min` must be > 0 on a log scale (`log_y`), got -1" in error
    keep(browser, "chart-bad-choice")


def add_narrow_study(server: LiveServer) -> None:
    """The study "narrow" the issue saw squashed: 43 to 58 TFLOP/s at 4096^3 beside cuBLAS's
    55, over BM and BK, with TN always 4."""
    import storage

    shape, flop = storage.ShapeIn(4096, 4096, 4096), 2 * 4096**3
    with server.app.state.sessions.begin() as session:
        for number in range(8):
            bm, bk, tflops = (64, 128)[number % 2], (8, 16, 32, 64)[number % 4], 43 + 2 * number
            storage.record_measurement(
                session,
                H100,
                shape,
                storage.MeasurementIn(
                    family="warptile",
                    config_name=f"warptile_bm{bm}_bk{bk}_n{number}",
                    params={"BM": bm, "BK": bk, "TN": 4},
                    ms=flop / (tflops * 1e9),
                    cublas_ms=flop / 55e9,
                    study="narrow",
                    trial_number=number,
                    provenance={},
                ),
            )


def test_axes_fit_the_data_and_one_valued_parameters_get_no_slice(
    browser: Browser, live_server: LiveServer
) -> None:
    add_narrow_study(live_server)
    page = f"{live_server.url}/dashboard/studies/narrow?x=trial"
    stays_local(browser.open(page), live_server)
    chart = chosen_chart(browser, "TFLOP/s against trial number")
    assert chart is not None
    assert 30 < chart["y"][0] <= 43 and 57 <= chart["y"][-1] < 70
    # A slice for BM and for BK, none for TN (always 4).
    titles = browser.evaluate(
        "[...document.querySelectorAll('.grid svg.chart > title')].map(t => t.textContent)"
    )
    assert sorted(titles) == ["TFLOP/s by BK", "TFLOP/s by BM"]
    keep(browser, "axes-fit-the-data")


def test_the_studies_list_searches_readable_titles(
    browser: Browser, live_server: LiveServer
) -> None:
    add_spread_study(live_server)
    stays_local(browser.open(f"{live_server.url}/dashboard/studies"), live_server)
    assert count(browser, "table.studies tbody tr") == 2
    stays_local(browser.submit("#search", {"q": "2048x2048"}), live_server)
    rows = browser.evaluate(
        "[...document.querySelectorAll('table.studies tbody tr td:first-child')]"
        ".map(td => td.innerText)"
    )
    assert len(rows) == 1 and "2048\u00d72048\u00d72048" in rows[0] and "H100" in rows[0]
    keep(browser, "studies-search")
    stays_local(browser.submit("#search", {"q": "bfloat16"}), live_server)
    assert "No study matches" in browser.evaluate("document.body.innerText")


def test_the_shape_form_asks_the_dtype_and_layout_and_shows_the_branch_that_applied(
    browser: Browser, live_server: LiveServer
) -> None:
    stays_local(browser.open(f"{live_server.url}/dashboard/shapes"), live_server)
    asked = {"shape": "100000x3x7", "dtype": "bfloat16", "layout": "NT"}
    stays_local(browser.submit("#ask", asked), live_server)
    heading = browser.evaluate("document.querySelector('#answer h2').innerText")
    assert heading.startswith("100000\u00d73\u00d77 bfloat16 NT") and "hmma" in heading
    note = browser.evaluate(
        "[...document.querySelectorAll('#answer dt')].find(d => d.innerText === 'note')"
        ".nextElementSibling.innerText"
    )
    # The branch of the default rule that applied, with this shape's numbers: not the whole
    # rule (571-688 characters).
    assert "ceil(100000/128)*ceil(3/128) = 782 >= 132" in note and len(note) < 400
    keep(browser, "shape-form-bfloat16")


def test_a_refused_page_is_html(browser: Browser, live_server: LiveServer) -> None:
    refused = browser.open(f"{live_server.url}/dashboard/studies/no-such-study")
    stays_local(refused, live_server, refused=True)
    assert browser.evaluate("document.querySelector('h1').innerText").startswith("404")
    assert "no-such-study" in browser.evaluate("document.querySelector('#error').innerText")
    keep(browser, "error-404")


# The page lays out inside an 800 px window: nothing wider than it; each table's box and each
# chart inside it; a wide table scrolls inside its box (its last column reachable there).
FITS = """(() => {
  const width = document.documentElement.clientWidth;
  const outside = [...document.querySelectorAll('.scroll, svg.chart, form, h1, p')]
    .filter(e => {
      const r = e.getBoundingClientRect();
      return r.left < 0 || r.right > width + 0.5;
    })
    .map(e => e.tagName + '.' + e.getAttribute('class'));
  const unreachable = [...document.querySelectorAll('.scroll')].filter(box => {
    box.scrollLeft = box.scrollWidth;
    const cells = box.querySelectorAll('tr:first-child > *');
    const last = cells[cells.length - 1];
    const edge = box.getBoundingClientRect().right + 1;
    const seen = !last || last.getBoundingClientRect().right <= edge;
    box.scrollLeft = 0;
    return !seen;
  }).length;
  return {page: document.documentElement.scrollWidth, width, outside, unreachable};
})()"""


@pytest.mark.parametrize(
    ("name", "page"),
    [
        ("dashboard", "/dashboard"),
        ("studies", "/dashboard/studies"),
        ("study", STUDY),
        ("shapes", "/dashboard/shapes?shape=3x5x7"),
        ("error", "/dashboard/studies/no-such-study"),
    ],
)
def test_every_page_works_in_an_800_px_window(
    browser: Browser, live_server: LiveServer, name: str, page: str
) -> None:
    browser.resize(800, 900)
    stays_local(browser.open(f"{live_server.url}{page}"), live_server, refused=name == "error")
    layout = browser.evaluate(FITS)
    assert layout["width"] <= 800
    assert layout["page"] <= layout["width"], layout  # no sideways scroll of the page
    assert layout["outside"] == [] and layout["unreachable"] == 0, layout
    labels_apart(browser)
    keep(browser, f"{name}-800px")


def test_the_trial_table_scrolls_inside_its_box_at_800_px(
    browser: Browser, live_server: LiveServer
) -> None:
    browser.resize(800, 900)
    stays_local(browser.open(f"{live_server.url}{STUDY}"), live_server)
    box = browser.evaluate(
        """(() => { const box = document.querySelector('table.trials').closest('.scroll');
        const r = box.getBoundingClientRect();
        return {left: r.left, right: r.right, scrolls: box.scrollWidth > box.clientWidth,
                overflow: getComputedStyle(box).overflowX}; })()"""
    )
    assert box["left"] >= 0 and box["right"] <= 800
    assert box["scrolls"] and box["overflow"] == "auto"  # wider than the window: it scrolls
