"""Inline SVG charts for the dashboard, drawn in Python: no JavaScript, no CDN, works offline.

Each function returns :class:`markupsafe.Markup` ready to drop into a Jinja template; every piece
of text that came from data is escaped. Charts scale to their container (``viewBox``) and carry
``<title>`` tooltips, so hovering a bar or point shows its exact numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#2563eb", "#f97316", "#16a34a", "#db2777", "#7c3aed", "#0891b2", "#ca8a04")
AXIS = "#94a3b8"
GRID = "#e2e8f0"
TEXT = "#334155"


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    tooltip: str = ""


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    group: str = ""
    tooltip: str = ""


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2 or 5 times a power of ten apart)."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.2e}"


def _svg(width: int, height: int, body: list[str], label: str) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(label)}" class="chart" '
        f'font-family="system-ui, sans-serif" font-size="12">'
    )
    return Markup(head + f"<title>{escape(label)}</title>" + "".join(body) + "</svg>")


def bar_chart(
    bars: Sequence[Bar], *, title: str, unit: str = "%", reference: float | None = 100.0
) -> Markup:
    """Horizontal bars, one per label, with an optional reference line (100 % = cuBLAS)."""
    label_w, right, top, row_h = 150, 60, 28, 26
    width = 760
    height = top + row_h * max(len(bars), 1) + 34
    plot_w = width - label_w - right
    high = max([b.value for b in bars] + [reference or 0.0, 1e-9])
    ticks = nice_ticks(0.0, high)
    scale = plot_w / ticks[-1]
    body = [f'<text x="{label_w}" y="18" fill="{TEXT}" font-weight="600">{escape(title)}</text>']
    bottom = top + row_h * max(len(bars), 1)
    for tick in ticks:
        x = label_w + tick * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{TEXT}">'
            f"{_fmt(tick)}{escape(unit)}</text>"
        )
    for i, bar in enumerate(bars):
        y = top + i * row_h
        w = max(bar.value, 0.0) * scale
        colour = PALETTE[0] if reference is None or bar.value >= reference else PALETTE[1]
        tip = escape(bar.tooltip or f"{bar.label}: {bar.value:.1f}{unit}")
        body.append(
            f'<g class="bar"><title>{tip}</title>'
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{TEXT}">{escape(bar.label)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" rx="3" '
            f'fill="{colour}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + row_h / 2 + 4:.1f}" fill="{TEXT}">'
            f"{bar.value:.1f}{escape(unit)}</text></g>"
        )
    if reference is not None:
        x = label_w + reference * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#0f172a" '
            f'stroke-dasharray="4 3"/><text x="{x + 4:.1f}" y="{top - 6}" fill="#0f172a">'
            f"cuBLAS</text>"
        )
    return _svg(width, height, body, title)


class _Frame:
    """Axes of an x/y plot: maps data to pixels and draws the grid and labels."""

    def __init__(
        self, xs: Sequence[float], ys: Sequence[float], x_label: str, y_label: str, title: str
    ) -> None:
        self.width, self.height = 760, 380
        self.left, self.right, self.top, self.bottom = 64, 24, 34, 48
        self.x_ticks = nice_ticks(min(xs, default=0.0), max(xs, default=1.0))
        self.y_ticks = nice_ticks(min([0.0, *ys]), max(ys, default=1.0))
        self.x_label, self.y_label, self.title = x_label, y_label, title

    def px(self, x: float) -> float:
        lo, hi = self.x_ticks[0], self.x_ticks[-1]
        return self.left + (x - lo) / (hi - lo) * (self.width - self.left - self.right)

    def py(self, y: float) -> float:
        lo, hi = self.y_ticks[0], self.y_ticks[-1]
        return (
            self.height
            - self.bottom
            - (y - lo) / (hi - lo) * (self.height - self.top - self.bottom)
        )

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
                f'<text x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="{TEXT}">'
                f"{_fmt(t)}</text>"
            )
        for t in self.x_ticks:
            x = self.px(t)
            out.append(
                f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y0 + 4:.1f}" stroke="{AXIS}"/>'
                f'<text x="{x:.1f}" y="{y0 + 18:.1f}" text-anchor="middle" fill="{TEXT}">'
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


def best_so_far_chart(
    trials: Sequence[Point], best: Sequence[Point], *, title: str, y_label: str
) -> Markup:
    """Every trial as a faint dot and the best so far as a step line over the trial number."""
    xs = [p.x for p in (*trials, *best)]
    ys = [p.y for p in (*trials, *best)]
    frame = _Frame(xs, ys, "trial", y_label, title)
    body = frame.axes()
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
    return _svg(frame.width, frame.height, body, title)


def scatter_chart(points: Sequence[Point], *, title: str, x_label: str, y_label: str) -> Markup:
    """Points coloured by group (e.g. kernel family), with a legend."""
    frame = _Frame([p.x for p in points], [p.y for p in points], x_label, y_label, title)
    groups = sorted({p.group for p in points})
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    body = frame.axes()
    for p in points:
        body.append(
            f'<circle cx="{frame.px(p.x):.1f}" cy="{frame.py(p.y):.1f}" r="3" '
            f'fill="{colour[p.group]}" fill-opacity="0.55"><title>{escape(p.tooltip)}</title>'
            f"</circle>"
        )
    for i, group in enumerate(groups):
        x = frame.width - frame.right - 150
        y = frame.top + 4 + i * 18
        body.append(
            f'<rect x="{x}" y="{y}" width="12" height="12" rx="2" fill="{colour[group]}"/>'
            f'<text x="{x + 18}" y="{y + 10}" fill="{TEXT}">{escape(group)}</text>'
        )
    return _svg(frame.width, frame.height, body, title)
