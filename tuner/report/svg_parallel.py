"""Parallel coordinates in SVG: one vertical axis per parameter, one line per trial.

What a parameter did shows as where the good (dark) lines cross its axis. Drawn in Python like
:mod:`tuner.report.svg_charts` (whose palette and text colours it uses): no JavaScript, no CDN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from tuner.report.svg_charts import AXIS, TEXT, group_order, svg_element


@dataclass(frozen=True)
class Line:
    """One trial: its value on each axis (by axis name; a missing one breaks the line) and
    its score (TFLOP/s), which sets the colour."""

    values: Mapping[str, float | str]
    score: float
    tooltip: str = ""


def _shade(fraction: float) -> str:
    """Pale orange (worst) to deep blue (best)."""
    low, high = (253, 186, 116), (30, 64, 175)
    rgb = (round(a + (b - a) * fraction) for a, b in zip(low, high, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _positions(values: Sequence[float | str]) -> dict[float | str, float]:
    """Where each distinct value of an axis sits, 0 (bottom) to 1 (top), evenly spaced: the
    values of a tile parameter are few and powers of two, so ranks read better than a scale."""
    distinct = sorted(set(values), key=lambda v: group_order(str(v)))
    if len(distinct) == 1:
        return {distinct[0]: 0.5}
    return {v: i / (len(distinct) - 1) for i, v in enumerate(distinct)}


def parallel_coordinates_chart(
    axes: Sequence[str], lines: Sequence[Line], *, title: str, score_label: str
) -> Markup:
    """Lines drawn worst first, so the best lie on top; the last axis is the score itself."""
    width, height, left, right, top, bottom = 760, 380, 40, 70, 48, 40
    names = [*axes, score_label]
    step = (width - left - right) / max(len(names) - 1, 1)
    scores = [line.score for line in lines]
    low, high = min(scores, default=0.0), max(scores, default=1.0)
    span = (high - low) or 1.0
    where = {
        name: _positions([line.values[name] for line in lines if name in line.values])
        for name in axes
    }
    body = [f'<text x="10" y="18" fill="{TEXT}" font-weight="600">{escape(title)}</text>']

    def y(fraction: float) -> float:
        return height - bottom - fraction * (height - top - bottom)

    for line in sorted(lines, key=lambda item: item.score):
        points = [
            f"{left + i * step:.1f},{y(where[name][line.values[name]]):.1f}"
            for i, name in enumerate(axes)
            if name in line.values
        ]
        points.append(f"{left + len(axes) * step:.1f},{y((line.score - low) / span):.1f}")
        colour = _shade((line.score - low) / span)
        body.append(
            f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" '
            f'stroke-opacity="0.55"><title>{escape(line.tooltip)}</title></polyline>'
        )
    for i, name in enumerate(names):
        x = left + i * step
        body.append(
            f'<line x1="{x:.1f}" y1="{y(0):.1f}" x2="{x:.1f}" y2="{y(1):.1f}" stroke="{AXIS}"/>'
            f'<text x="{x:.1f}" y="{top - 14}" text-anchor="middle" fill="{TEXT}" '
            f'font-weight="600">{escape(name)}</text>'
        )
        ticks = (
            {f"{low:.3g}": 0.0, f"{high:.3g}": 1.0}
            if i == len(axes)
            else {str(v): f for v, f in where[name].items()}
        )
        if len(ticks) > 9:  # too many to label: the ends only
            ends = sorted(ticks.items(), key=lambda item: item[1])
            ticks = dict([ends[0], ends[-1]])
        for label, fraction in ticks.items():
            body.append(
                f'<text x="{x + 5:.1f}" y="{y(fraction) + 4:.1f}" fill="{TEXT}" '
                f'font-size="11" paint-order="stroke" stroke="white" stroke-width="3">'
                f"{escape(label)}</text>"
            )
    return svg_element(width, height, body, title, standalone=False)
