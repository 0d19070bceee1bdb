"""The one SVG chart builder: ticks, bar charts standalone and inline, escaping."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tuner.data import results_dir
from tuner.report.bench_tables import chart_title, ratio_chart
from tuner.report.svg_charts import Bar, bar_chart, nice_ticks

# The charts the documents show, drawn by gemmtune bench from the suite files it wrote.
CHARTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("low", "high", "ticks"),
    [
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0.0, 1.3, [0.0, 0.5, 1.0, 1.5]),
        (0.0, 1.2, [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]),  # a 2.5 step
        (0.0, 2.4, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]),
        (0.0, 230.0, [0.0, 50.0, 100.0, 150.0, 200.0, 250.0]),
        (96.0, 168.0, [80.0, 100.0, 120.0, 140.0, 160.0, 180.0]),
        (3.0, 3.0, [3.0, 3.2, 3.4, 3.6, 3.8, 4.0]),  # empty range: one unit from low
    ],
)
def test_nice_ticks(low: float, high: float, ticks: list[float]) -> None:
    assert nice_ticks(low, high) == ticks


@pytest.mark.parametrize("device", ["h100", "h200"])
def test_the_committed_suite_charts_render_unchanged(device: str) -> None:
    doc = json.loads((results_dir() / f"{device}-suite.json").read_text())
    svg = ratio_chart(doc["shapes"], chart_title(doc))
    assert svg == (CHARTS / f"{device}-suite.svg").read_text()


def test_inline_and_standalone_bar_charts() -> None:
    bars = [Bar("a<b", 150.0), Bar("half", 50.0, tooltip="half of it"), Bar("x", None, note="n/a")]
    inline = bar_chart(bars, title="t & u", unit="%", reference=100.0, reference_label="ref")
    root = ET.fromstring(str(inline))  # well-formed, text escaped
    assert root.get("class") == "chart" and root.get("width") is None
    rects = root.findall(f"{NS}g/{NS}rect")
    assert [r.get("fill") for r in rects] == ["#2563eb", "#f97316"]  # at/above, below the line
    assert float(rects[0].get("width", 0)) == pytest.approx(
        3 * float(rects[1].get("width", 0)), abs=0.2
    )
    assert "a&lt;b" in inline and "150.0%" in inline and "half of it" in inline and "n/a" in inline
    standalone = ET.fromstring(str(bar_chart(bars, title="t", standalone=True)))
    assert standalone.get("width") == "760" and standalone.find(f"{NS}rect") is not None


def test_thinned_bounds_the_count_and_keeps_the_best_of_each_cell() -> None:
    from tuner.report.svg_charts import more_here, thinned

    xs = [i % 100 for i in range(10_000)]
    ys = [(i * 7919) % 1000 / 10 for i in range(10_000)]
    groups = ["a" if i % 2 else "b" for i in range(10_000)]
    kept = thinned(xs, ys, groups, 300)
    assert 0 < len(kept) <= 300
    assert sum(n for _, n in kept) == len(xs)  # every point is stood for once
    assert max(ys[i] for i, _ in kept) == max(ys)  # the best is drawn
    assert {groups[i] for i, _ in kept} == {"a", "b"}  # no group swallowed by another
    assert [i for i, _ in kept] == sorted(i for i, _ in kept)  # in the points' own order
    assert thinned(xs[:50], ys[:50], groups[:50], 300) == [(i, 1) for i in range(50)]
    assert more_here(3) == " (and 2 more here)" and more_here(1) == ""


def test_scatter_legend_sits_right_of_the_plot_and_the_reference_is_drawn() -> None:
    from tuner.report.svg_charts import Point, Reference, scatter_chart

    points = [Point(x, x, group) for x in range(10) for group in ("warptile", "streamk")]
    root = ET.fromstring(str(scatter_chart(
        points, title="t", x_label="x", y_label="y", reference=Reference(20.0, "cuBLAS")
    )))  # fmt: skip
    rightmost = max(float(c.get("cx", 0)) for c in root.iter(f"{NS}circle"))
    legend = [float(r.get("x", 0)) for r in root.iter(f"{NS}rect")]
    assert len(legend) == 2 and min(legend) > rightmost + 5  # no point under the legend
    line = root.find(f"{NS}g[@class='reference']/{NS}line")
    assert line is not None
    tops = [float(c.get("cy", 0)) for c in root.iter(f"{NS}circle")]
    assert float(line.get("y1", 0)) < min(tops)  # 20 is above every point (y up)


def test_a_scatter_y_axis_fits_the_data() -> None:
    """43-58 TFLOP/s spread over the plot, not squeezed into its top quarter by an axis from 0:
    the lowest point sits near the bottom, the highest near the top."""
    from tuner.report.svg_charts import Point, scatter_chart

    points = [Point(100.0 + i, 43.0 + i, "") for i in range(16)]
    root = ET.fromstring(str(scatter_chart(points, title="t", x_label="x", y_label="TFLOP/s")))
    ys = [float(c.get("cy", 0)) for c in root.iter(f"{NS}circle")]
    height = float(root.get("viewBox", "0 0 0 0").split()[3])
    assert max(ys) - min(ys) > 0.5 * height  # the points use most of the plot's height
    labels = {t.text for t in root.iter(f"{NS}text")}
    assert "0" not in labels and "40" in labels  # the axis starts at the data's tick


def test_parallel_coordinates_draw_one_line_per_trial_best_on_top() -> None:
    from tuner.report.svg_parallel import Line, parallel_coordinates_chart

    lines = [
        Line({"BM": bm, "BK": 16}, score, f"t{score}") for bm, score in ((64, 3.0), (128, 9.0))
    ]
    root = ET.fromstring(
        str(parallel_coordinates_chart(["BM", "BK"], lines, title="p", score_label="TFLOP/s"))
    )
    drawn = list(root.iter(f"{NS}polyline"))
    assert [p.find(f"{NS}title").text for p in drawn] == ["t3.0", "t9.0"]  # type: ignore[union-attr]
    assert all(len(p.get("points", "").split()) == 3 for p in drawn)  # BM, BK, the score
