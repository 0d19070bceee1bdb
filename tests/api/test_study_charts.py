"""The study page's chosen chart (:mod:`api.chart_choice`): the x value, the y value and the
colour a reader picks, log scales with log-spaced ticks, ranges that zoom, and a 422 page that
names a choice the study cannot draw and what it can."""

from __future__ import annotations

import html
import itertools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, make_app, seed

NS = "{http://www.w3.org/2000/svg}"
STUDY = "spread"
PAGE = f"/dashboard/studies/{STUDY}"
TILES, DEPTHS = (32, 64, 128, 256), (8, 16, 32)
TRIALS = 24


def spread_ms(number: int) -> float:
    """Trial ``number``'s time: 0.05 ms to 20 ms, evenly on a log scale (orders of magnitude,
    what a linear axis squashes)."""
    return float(0.05 * 400.0 ** (number / (TRIALS - 1)))


def spread_records() -> list[tuple[storage.DeviceIn, storage.ShapeIn, storage.MeasurementIn]]:
    """The study ``spread``: 24 warptile trials of 1024^3 on the H100, over four BM and three
    BK values, with times :func:`spread_ms`."""
    shape = storage.ShapeIn(1024, 1024, 1024)
    records = []
    for number in range(TRIALS):
        bm, bk = TILES[number % 4], DEPTHS[number % 3]
        records.append(
            (
                H100,
                shape,
                storage.MeasurementIn(
                    family="warptile",
                    config_name=f"warptile_bm{bm}_bk{bk}_n{number}",
                    params={"BM": bm, "BK": bk},
                    ms=spread_ms(number),
                    cublas_ms=0.1,
                    registers=64 + number,
                    occupancy=0.5,
                    study=STUDY,
                    trial_number=number,
                    provenance={},
                ),
            )
        )
    return records


def spread_study(url: str) -> None:
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine).begin() as session:
        storage.record_measurements(session, spread_records())
    engine.dispose()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('charts')}/charts.db"
    seed(url)
    spread_study(url)
    app = make_app(url)
    with TestClient(app) as test_client:
        yield test_client
    app.state.engine.dispose()


def chart(page: str, title_start: str) -> ET.Element:
    """The page's SVG chart whose title starts with ``title_start``."""
    for found in re.findall(r"<svg .*?</svg>", page, flags=re.S):
        root = ET.fromstring(found)
        title = root.find(f"{NS}title")
        if title is not None and (title.text or "").startswith(title_start):
            return root
    raise AssertionError(f"no chart titled {title_start!r}")


def ticks(root: ET.Element, axis: str) -> list[tuple[float, float]]:
    """(value, pixel position) of each tick label of ``axis`` ("x" or "y")."""
    at = "x" if axis == "x" else "y"
    return [
        (float(t.text or ""), float(t.get(at, "nan")))
        for t in root.iter(f"{NS}text")
        if t.get("class") == f"{axis}-tick"
    ]


def evenly_spaced(positions: list[float]) -> bool:
    """Whether consecutive ticks are the same distance apart (to the SVG's 0.1 px)."""
    gaps = [b - a for a, b in itertools.pairwise(positions)]
    return len(gaps) >= 2 and max(gaps) - min(gaps) < 0.25


def test_a_log_y_axis_has_log_spaced_ticks_and_places_times_by_their_logarithm(
    client: TestClient,
) -> None:
    linear = chart(client.get(PAGE, params={"y": "ms"}).text, "time, ms against")
    log = chart(client.get(PAGE, params={"y": "ms", "log_y": "true"}).text, "time, ms against")
    values = [v for v, _ in ticks(log, "y")]
    assert values == [0.01, 0.1, 1.0, 10.0, 100.0]  # decades around 0.05-20 ms
    assert evenly_spaced([p for _, p in ticks(log, "y")])  # equal ratios, equal distances
    linear_values = [v for v, _ in ticks(linear, "y")]
    steps = {round(b - a, 6) for a, b in itertools.pairwise(linear_values)}
    assert len(steps) == 1 and linear_values[0] <= 0.05  # linear: a constant step instead
    # A trial's dot sits at the height of its time's logarithm between the decade ticks.
    by_value = dict(ticks(log, "y"))
    top, bottom = by_value[100.0] - 4, by_value[0.01] - 4  # tick labels sit 4 px below a line
    for dot in log.iter(f"{NS}circle"):
        number = int(re.match(r"#(\d+)", dot.findtext(f"{NS}title") or "")[1])  # type: ignore[index]
        share = (math.log10(spread_ms(number)) + 2) / 4
        assert float(dot.get("cy", "nan")) == pytest.approx(
            bottom + share * (top - bottom), abs=0.2
        )


def test_the_chosen_parameter_is_on_x_and_the_dots_take_the_colour_of_their_legend_entry(
    client: TestClient,
) -> None:
    page = client.get(PAGE, params={"x": "BM", "colour": "BK", "log_x": "true"}).text
    root = chart(page, "TFLOP/s against BM, coloured by BK")
    assert [v for v, _ in ticks(root, "x")] == [32.0, 64.0, 128.0, 256.0]  # log2 tile sizes
    assert evenly_spaced([p for _, p in ticks(root, "x")])
    labels = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "x-tick"]
    assert labels == ["32", "64", "128", "256"]
    assert root.findtext(f".//{NS}text[@class='legend-title']") == "BK"
    legend = {
        g.findtext(f"{NS}text"): g.find(f"{NS}rect").get("fill")  # type: ignore[union-attr]
        for g in root.iter(f"{NS}g")
        if g.get("class") == "legend"
    }
    assert list(legend) == ["8", "16", "32"]
    assert len(set(legend.values())) == 3
    x_at = dict(ticks(root, "x"))
    dots = list(root.iter(f"{NS}circle"))
    assert len(dots) == TRIALS
    for dot in dots:
        name = re.search(r"warptile_bm(\d+)_bk(\d+)", dot.findtext(f"{NS}title") or "")
        assert name is not None
        assert dot.get("fill") == legend[name[2]]  # coloured by its BK
        assert float(dot.get("cx", "nan")) == pytest.approx(x_at[float(name[1])], abs=0.2)


def test_a_range_zooms_in_and_the_choices_stay_in_the_tables_links(client: TestClient) -> None:
    page = client.get(PAGE, params={"y": "ms", "y_max": "1", "x": "trial"}).text
    root = chart(page, "time, ms against trial number")
    inside = [n for n in range(TRIALS) if spread_ms(n) <= 1]
    assert 0 < len(inside) < TRIALS
    assert len(list(root.iter(f"{NS}circle"))) == len(inside)
    assert max(v for v, _ in ticks(root, "y")) == 1.0  # the axis ends at the chosen bound
    # The table's sort links and filter form keep the chart as chosen.
    assert "y=ms" in page and "y_max=1" in page
    assert '<input type="hidden" name="y_max" value="1">' in page
    # The slices follow the chosen y value.
    assert chart(page, "time, ms by BM") is not None


def test_percent_of_cublas_is_drawn_against_its_100_percent_line(client: TestClient) -> None:
    root = chart(client.get(PAGE, params={"y": "pct_cublas"}).text, "% of cuBLAS")
    reference = root.find(f".//{NS}g[@class='reference']")
    assert reference is not None and reference.findtext(f"{NS}text") == "cuBLAS"
    tallest = max(float(d.get("cy", "nan")) for d in root.iter(f"{NS}circle"))
    assert tallest > float(reference.find(f"{NS}line").get("y1", "nan"))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"y": "speed"}, "`y` must be one of ['tflops', 'ms', 'pct_cublas'], got 'speed'"),
        ({"x": "WM"}, "`x` must be one of ['registers', 'smem', 'occupancy', 'trial', 'BM', 'BK']"),
        (
            {"colour": "registers"},
            "`colour` must be one of ['family', 'BM', 'BK'], got 'registers'",
        ),
        ({"x": "trial", "log_x": "true"}, "`log_x` needs values > 0 on the x axis, and it has 0"),
        ({"x_min": "5", "x_max": "3"}, "`x_min` must be below `x_max`, got 5 and 3"),
        ({"y_min": "fast"}, "`y_min` must be a number or empty, got 'fast'"),
        ({"y_min": "-1", "log_y": "true"}, "`y_min` must be > 0 on a log scale (`log_y`)"),
    ],
)
def test_a_bad_choice_is_a_page_that_names_it_and_what_is_allowed(
    client: TestClient, query: dict[str, str], message: str
) -> None:
    answer = client.get(PAGE, params=query)
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("text/html")
    assert message in html.unescape(answer.text)


def test_empty_range_fields_mean_no_bound(client: TestClient) -> None:
    # What the form sends when its range fields are left empty.
    query = {"x_min": "", "x_max": "", "y_min": "", "y_max": ""}
    root = chart(client.get(PAGE, params=query).text, "TFLOP/s against registers")
    assert len(list(root.iter(f"{NS}circle"))) == TRIALS
