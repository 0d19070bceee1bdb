"""SVG charts drawn in Python: no JavaScript, no CDN, readable offline and in a README.

The one chart builder of the project: the dashboard (:mod:`api.dashboard`) draws with it inline,
``gemmtune bench`` (:mod:`tuner.report.bench_tables`) writes standalone files with it. Each function
returns :class:`markupsafe.Markup` (a ``str``), ready for a Jinja template or a file; every piece
of text that came from data is escaped. Charts scale to their container (``viewBox``) and carry
``<title>`` tooltips, so hovering a bar or point shows its exact numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from markupsafe import Markup, escape

from tuner.report.svg_axes import Scale, nice_ticks

__all__ = ["Bar", "Point", "Reference", "Scale", "bar_chart", "nice_ticks", "scatter_chart"]

PALETTE = ("#2563eb", "#f97316", "#16a34a", "#db2777", "#7c3aed", "#0891b2", "#ca8a04")
AXIS = "#94a3b8"
GRID = "#e2e8f0"
TEXT = "#334155"
REFERENCE = "#0f172a"


@dataclass(frozen=True)
class Bar:
    """One row of a bar chart. ``value`` None draws no bar but ``note`` (a failed shape);
    ``text`` replaces the value printed after the bar."""

    label: str
    value: float | None
    tooltip: str = ""
    text: str = ""
    note: str = ""


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    group: str = ""
    tooltip: str = ""


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.2e}"


def svg_element(
    width: int, height: int, body: list[str], label: str, *, standalone: bool
) -> Markup:
    """The ``<svg>`` element. Standalone (a file) it has a size and a white background; inline
    (a page) it has the ``chart`` class that the page's CSS sizes."""
    size = f'width="{width}" height="{height}" ' if standalone else ""
    css = "" if standalone else 'class="chart" '
    background = f'<rect width="{width}" height="{height}" fill="white"/>' if standalone else ""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" {size}'
        f'role="img" aria-label="{escape(label)}" {css}'
        f'font-family="system-ui, sans-serif" font-size="12">{background}'
    )
    end = "</svg>\n" if standalone else "</svg>"
    return Markup(head + f"<title>{escape(label)}</title>" + "".join(body) + end)


@dataclass(frozen=True)
class BarLayout:
    """Pixels of a bar chart: the label column, the margin right of the longest bar (for the
    text printed after it), the whole width."""

    label_width: int = 150
    right: int = 60
    width: int = 760


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    unit: str = "",
    reference: float | None = None,
    reference_label: str = "",
    caption: str = "",
    layout: BarLayout = BarLayout(),
    standalone: bool = False,
) -> Markup:
    """Horizontal bars, one per label, from 0; with a dashed ``reference`` line, bars at or
    above it are blue and those below orange. ``unit`` follows tick values and default bar
    texts; ``caption`` is written under the axis."""
    label_w, top, row_h = layout.label_width, 48, 24
    rows = max(len(bars), 1)
    bottom = top + row_h * rows
    height = bottom + 36
    values = [b.value for b in bars if b.value]
    ticks = nice_ticks(0.0, max([*values, reference or 0.0]))
    scale = (layout.width - label_w - layout.right) / ticks[-1]
    body = [f'<text x="10" y="18" fill="{TEXT}" font-weight="600">{escape(title)}</text>']
    for tick in ticks:
        x = label_w + tick * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{TEXT}">'
            f"{_fmt(tick)}{escape(unit)}</text>"
        )
    for i, bar in enumerate(bars):
        body += _bar_row(bar, top + i * row_h, row_h, label_w, scale, unit, reference)
    if reference is not None:
        x = label_w + reference * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="{REFERENCE}" '
            f'stroke-dasharray="4 3"/><text x="{x + 4:.1f}" y="{top - 8}" fill="{REFERENCE}">'
            f"{escape(reference_label)}</text>"
        )
    if caption:
        middle = label_w + (layout.width - label_w - layout.right) / 2
        body.append(
            f'<text x="{middle:.1f}" y="{height - 4}" text-anchor="middle" fill="{TEXT}">'
            f"{escape(caption)}</text>"
        )
    return svg_element(layout.width, height, body, title, standalone=standalone)


def _bar_row(
    bar: Bar,
    y: float,
    row_h: int,
    label_w: int,
    scale: float,
    unit: str,
    reference: float | None,
) -> list[str]:
    mid = y + row_h / 2 + 4
    out = [
        f'<text x="{label_w - 8}" y="{mid:.1f}" text-anchor="end" fill="{TEXT}">'
        f"{escape(bar.label)}</text>"
    ]
    if not bar.value:
        out.append(f'<text x="{label_w + 6}" y="{mid:.1f}" fill="{AXIS}">{escape(bar.note)}</text>')
        return out
    w = max(bar.value, 0.0) * scale
    colour = PALETTE[0] if reference is None or bar.value >= reference else PALETTE[1]
    text = bar.text or f"{bar.value:.1f}{unit}"
    out.append(
        f"<g><title>{escape(bar.tooltip or f'{bar.label}: {text}')}</title>"
        f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" rx="3" '
        f'fill="{colour}"/>'
        f'<text x="{label_w + w + 6:.1f}" y="{mid:.1f}" fill="{TEXT}">{escape(text)}</text></g>'
    )
    return out


def more_here(count: int) -> str:
    """What a thinned point's tooltip adds: how many points it stands for besides itself."""
    return f" (and {count - 1} more here)" if count > 1 else ""


def thinned(
    xs: Sequence[float], ys: Sequence[float], groups: Sequence[str], limit: int
) -> list[tuple[int, int]]:
    """Which of the points (``xs[i]``, ``ys[i]``) of group ``groups[i]`` to draw, at most
    ``limit``, and how many each stands for: points of a group that fall in one cell of a
    grid over the data are drawn once, by the highest (the best of them). The grid (up to
    256 x 256 cells) is halved until few enough cells are filled, so a page of a 10 000-trial
    study stays small. Order is kept. Works on columns: a caller with thousands of points
    makes only the kept ones."""
    if len(xs) <= limit:
        return [(i, 1) for i in range(len(xs))]
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    codes: dict[str, int] = {}
    group = np.fromiter((codes.setdefault(g, len(codes)) for g in groups), np.int64, len(groups))
    gx = ((x - x.min()) * (255 / ((x.max() - x.min()) or 1.0))).astype(np.int64)
    gy = ((y - y.min()) * (255 / ((y.max() - y.min()) or 1.0))).astype(np.int64)
    index = np.arange(len(x))
    # Start near the grid whose cells could hold ``limit`` points: fewer passes.
    first = max(0, 8 - math.ceil(math.log2(math.sqrt(4 * limit))))
    for shift in range(first, 9):
        cell = (group << 16) | ((gx >> shift) << 8) | (gy >> shift)
        order = np.lexsort((index, -y, cell))  # by cell, the highest first, then the earliest
        starts = np.flatnonzero(np.r_[True, cell[order][1:] != cell[order][:-1]])
        if len(starts) <= limit:
            break
    counts = np.diff(np.r_[starts, len(order)])
    best = order[starts]
    shown = np.argsort(best, kind="stable")  # drawn in the points' own order
    return [(int(best[j]), int(counts[j])) for j in shown]


def group_order(group: str) -> tuple[float, str]:
    """Groups in reading order: numbers by value (32 before 128), then names."""
    try:
        return (float(group), group)
    except ValueError:
        return (math.inf, group)


@dataclass(frozen=True)
class Reference:
    """A horizontal dashed line at ``value`` (e.g. cuBLAS's TFLOP/s), labelled at its end."""

    value: float
    label: str


class _Frame:
    """Axes of an x/y plot: maps data to pixels and draws the grid and labels."""

    def __init__(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        x_label: str,
        y_label: str,
        title: str,
        *,
        size: tuple[int, int] = (760, 380),
        right: int = 24,
        x_scale: Scale | None = None,
        y_scale: Scale | None = None,
    ) -> None:
        self.width, self.height = size
        self.left, self.right, self.top, self.bottom = 64, right, 34, 48
        # The y axis fits the data (43-58 TFLOP/s drawn from 0 filled a quarter of the plot);
        # bar charts, whose lengths are the values, start at 0 (bar_chart).
        self.x_scale = x_scale or Scale.fit(xs)
        self.y_scale = y_scale or Scale.fit(ys)
        self.x_ticks, self.y_ticks = self.x_scale.ticks, self.y_scale.ticks
        self.x_label, self.y_label, self.title = x_label, y_label, title

    def px(self, x: float) -> float:
        return self.left + self.x_scale.fraction(x) * (self.width - self.left - self.right)

    def py(self, y: float) -> float:
        span = self.height - self.top - self.bottom
        return self.height - self.bottom - self.y_scale.fraction(y) * span

    def axes(self) -> list[str]:
        out = [
            f'<text x="{self.left}" y="20" fill="{TEXT}" font-weight="600">'
            f"{escape(self.title)}</text>"
        ]
        y0, y1 = self.py(self.y_ticks[0]), self.py(self.y_ticks[-1])
        x0, x1 = self.px(self.x_ticks[0]), self.px(self.x_ticks[-1])
        for t in self.y_ticks:
            y = self.py(t)
            out.append(
                f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{GRID}"/>'
                f'<text class="y-tick" x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" '
                f'fill="{TEXT}">'
                f"{_fmt(t)}</text>"
            )
        for t in self.x_ticks:
            x = self.px(t)
            out.append(
                f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y0 + 4:.1f}" stroke="{AXIS}"/>'
                f'<text class="x-tick" x="{x:.1f}" y="{y0 + 18:.1f}" text-anchor="middle" '
                f'fill="{TEXT}">'
                f"{_fmt(t)}</text>"
            )
        out.append(
            f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y0:.1f}" stroke="{AXIS}"/>'
            f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x0:.1f}" y2="{y1:.1f}" stroke="{AXIS}"/>'
            f'<text x="{(x0 + x1) / 2:.1f}" y="{self.height - 8}" text-anchor="middle" '
            f'fill="{TEXT}">{escape(self.x_label)}</text>'
            f'<text transform="translate(16 {(y0 + y1) / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" fill="{TEXT}">{escape(self.y_label)}</text>'
        )
        return out

    def reference(self, line: Reference | None) -> list[str]:
        if line is None:
            return []
        x0, x1, y = self.px(self.x_ticks[0]), self.px(self.x_ticks[-1]), self.py(line.value)
        return [
            f'<g class="reference"><line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" '
            f'stroke="{REFERENCE}" stroke-dasharray="5 4"/><text x="{x1 - 4:.1f}" '
            f'y="{y - 5:.1f}" text-anchor="end" fill="{REFERENCE}">{escape(line.label)}</text></g>'
        ]


def best_so_far_chart(
    trials: Sequence[Point],
    best: Sequence[Point],
    *,
    title: str,
    y_label: str,
    reference: Reference | None = None,
) -> Markup:
    """Every trial as a faint dot and the best so far as a step line over the trial number,
    with the ``reference`` line (cuBLAS) to beat."""
    xs = [p.x for p in (*trials, *best)]
    ys = [p.y for p in (*trials, *best)] + ([reference.value] if reference else [])
    frame = _Frame(xs, ys, "trial", y_label, title)
    body = frame.axes() + frame.reference(reference)
    for p in trials:
        body.append(
            f'<circle cx="{frame.px(p.x):.1f}" cy="{frame.py(p.y):.1f}" r="2" '
            f'fill="{AXIS}" fill-opacity="0.6"><title>{escape(p.tooltip)}</title></circle>'
        )
    if best:
        path = [f"M{frame.px(best[0].x):.1f},{frame.py(best[0].y):.1f}"]
        for p in best[1:]:
            path.append(f"H{frame.px(p.x):.1f}V{frame.py(p.y):.1f}")
        body.append(
            f'<path class="best-so-far" d="{"".join(path)}" fill="none" stroke="{PALETTE[0]}" '
            f'stroke-width="2.5"/>'
        )
    return svg_element(frame.width, frame.height, body, title, standalone=False)


def scatter_chart(
    points: Sequence[Point],
    *,
    title: str,
    x_label: str,
    y_label: str,
    reference: Reference | None = None,
    size: tuple[int, int] = (760, 380),
    legend: bool = True,
    colours: Mapping[str, str] | None = None,
    legend_title: str = "",
    x_scale: Scale | None = None,
    y_scale: Scale | None = None,
) -> Markup:
    """Points coloured by group (e.g. kernel family; ``colours`` fixes some groups' colours),
    the legend right of the plot where it covers no point (the first 16 groups, under
    ``legend_title``). The axes fit the points (and the reference), unless a scale is given
    (a log scale, a chosen range: points outside it are the caller's to leave out)."""
    groups = sorted({p.group for p in points}, key=group_order)
    shown = legend and len(groups) > 1
    ys = [p.y for p in points] + ([reference.value] if reference else [])
    frame = _Frame(
        [p.x for p in points],
        ys,
        x_label,
        y_label,
        title,
        size=size,
        right=150 if shown else 24,
        x_scale=x_scale,
        y_scale=y_scale,
    )
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)} | dict(colours or {})
    body = frame.axes() + frame.reference(reference)
    for p in points:
        body.append(
            f'<circle cx="{frame.px(p.x):.1f}" cy="{frame.py(p.y):.1f}" r="3" '
            f'fill="{colour[p.group]}" fill-opacity="0.55"><title>{escape(p.tooltip)}</title>'
            f"</circle>"
        )
    x, top = frame.width - frame.right + 14, frame.top + 4
    if shown and legend_title:
        body.append(
            f'<text class="legend-title" x="{x}" y="{top + 10}" fill="{TEXT}" '
            f'font-weight="600">{escape(legend_title)}</text>'
        )
        top += 18
    for i, group in enumerate(groups[:16] if shown else []):
        y = top + i * 18
        body.append(
            f'<g class="legend"><rect x="{x}" y="{y}" width="12" height="12" rx="2" '
            f'fill="{colour[group]}"/>'
            f'<text x="{x + 18}" y="{y + 10}" fill="{TEXT}">{escape(group)}</text></g>'
        )
    return svg_element(frame.width, frame.height, body, title, standalone=False)
