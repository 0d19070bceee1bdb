"""The ``gemmtune bench`` JSON as a Markdown table (for the README) and an SVG bar chart.

Both read only the document, so they re-render a committed result without a GPU. The chart is
hand-written SVG with no dependency (the dashboard has its own in ``api.charts``; ``tuner`` does
not import ``api``). Rows without a roofline or cuBLAS ms (older per-shape tuning files) render
too, with "-" where a figure is missing.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from tuner.bench import summarize

DASH = "-"


def _num(value: Any, fmt: str) -> str:
    return DASH if value is None else format(value, fmt)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shape(row: dict[str, Any]) -> str:
    return f"{row['m']}x{row['n']}x{row['k']}"


def _bound(row: dict[str, Any]) -> tuple[str, str, str]:
    """The roofline columns: bound (limit), ours as % of it, cuBLAS as % of it."""
    roof = row.get("roofline")
    if not roof:
        return DASH, DASH, DASH
    bound = f"{roof['bound_tflops']:.1f} ({roof['limit']})"
    return bound, _pct(roof.get("pct_of_bound")), _pct(roof.get("cublas_pct_of_bound"))


def _pct(value: float | None) -> str:
    return DASH if value is None else f"{value:.0f} %"


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| class | MxNxK | config | ms | TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s "
        "| cuBLAS time / ours | roofline bound, TFLOP/s | ours, % of bound "
        "| cuBLAS, % of bound | evaluated |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        config = f"`{row['config']}`" if row.get("config") else DASH
        bound, ours, theirs = _bound(row)
        evaluated = _num(row.get("candidates_evaluated"), "d")
        if row.get("ratio") is None:
            status = row.get("status") or "not measured"
            why = f"{status}: {row['reason']}" if row.get("reason") else status
            lines.append(
                f"| {row.get('class') or DASH} | {_shape(row)} | {config} | {_cell(why)} "
                f"| {DASH} | {DASH} | {DASH} | {DASH} | {bound} | {DASH} | {DASH} | {evaluated} |"
            )
            continue
        lines.append(
            f"| {row.get('class') or DASH} | {_shape(row)} | {config} "
            f"| {_num(row.get('ms'), '.3f')} | {_num(row.get('tflops'), '.1f')} "
            f"| {_num(row.get('cublas_ms'), '.3f')} | {_num(row.get('cublas_tflops'), '.1f')} "
            f"| {row['ratio']:.2f} | {bound} | {ours} | {theirs} | {evaluated} |"
        )
    return "\n".join(lines)


def targets_table(summary: dict[str, Any]) -> str:
    lines = ["| target | needed | measured | met |", "|---|---:|---:|---|"]
    for t in summary["targets"]:
        met = {True: "yes", False: "**no**", None: "not in this suite"}[t["met"]]
        value = _num(t["value"], ".2f")
        if t["met"] is False and value == f"{t['threshold']:.2f}":
            value = _num(t["value"], ".4f")  # a miss that rounds to the threshold shows it
        if t["shapes"] and t["measured"] < t["shapes"]:
            value += f" ({t['measured']} of {t['shapes']} shapes measured)"
        lines.append(f"| {t['name']} | ≥ {t['threshold']:.2f} | {value} | {met} |")
    return "\n".join(lines)


def _provenance(doc: dict[str, Any]) -> str:
    p = doc.get("provenance") or {}
    parts = [str(doc.get("device") or p.get("device") or "unknown device")]
    if p.get("sm_count") or p.get("compute_capability"):
        parts[0] += f" ({p.get('sm_count', '?')} SMs, CC {p.get('compute_capability', '?')})"
    for key, label in (
        ("driver", "driver"),
        ("cuda_runtime", "CUDA runtime"),
        ("nvrtc", "NVRTC"),
        ("cupy", "CuPy"),
        ("tuner", "gemmtune"),
    ):
        if p.get(key) is not None:
            parts.append(f"{label} {p[key]}")
    parts.append(str(doc.get("date", ""))[:10] or "undated")
    return ", ".join(parts)


def markdown(doc: dict[str, Any]) -> str:
    """The table, the geometric means, the targets, and how and where it was measured."""
    rows: list[dict[str, Any]] = list(doc.get("shapes") or [])
    summary = doc.get("summary") or summarize(rows)
    parts = [table(rows), ""]
    geo = summary.get("geomean_ratio")
    by_class = ", ".join(
        f"{name} {_num(c['geomean_ratio'], '.2f')}" for name, c in summary["by_class"].items()
    )
    parts.append(
        f"Geometric mean of cuBLAS time / our time: **{_num(geo, '.2f')}** over "
        f"{summary['measured']} of {summary['shapes']} shapes; by class: {by_class}."
    )
    parts += ["", targets_table(summary), ""]
    method = doc.get("method") or {}
    if method.get("rounds"):
        parts += [
            f"Times: median of {method['rounds']} alternating rounds (ours, cuBLAS, ours, ...), "
            "each the median of repeated launches with L2 flushed, alpha = 1, beta = 0, after a "
            "correctness check against cuBLAS (strict FP32).",
            "",
        ]
    roof = doc.get("roofline")
    if roof:
        parts += [
            f"Roofline bound = min(FFMA ceiling {roof['ffma_tflops']} TFLOP/s, intensity x "
            f"{roof['bandwidth_tb_s']} TB/s); FFMA: {roof['ffma_source']}; bandwidth: "
            f"{roof['bandwidth_source']}; minimum traffic {roof['bytes_model']}.",
            "",
        ]
    parts.append(f"Measured on {_provenance(doc)}.")
    return "\n".join(parts) + "\n"


# The chart: one horizontal bar per shape, ratio = cuBLAS time / our time, a line at 1.0.

BLUE, ORANGE, GREY, TEXT, GRID = "#2563eb", "#f97316", "#94a3b8", "#334155", "#e2e8f0"


def ticks(high: float, count: int = 5) -> list[float]:
    """0, step, 2 step, ... up to the first tick at or above ``high`` (step 1, 2, 2.5 or 5
    times a power of ten)."""
    high = high if math.isfinite(high) and high > 0 else 1.0
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(f * power for f in (1, 2, 2.5, 5, 10) if f * power >= raw)
    n = math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def ratio_chart(rows: Sequence[dict[str, Any]], title: str) -> str:
    """SVG: one bar per shape (blue at or above 1.0, orange below), labelled with the ratio and
    the roofline position; failed shapes get a note instead of a bar."""
    label_w, right, top, row_h, width = 190, 230, 48, 24, 880
    height = top + row_h * max(len(rows), 1) + 36
    bottom = top + row_h * max(len(rows), 1)
    marks = ticks(max([r["ratio"] for r in rows if r.get("ratio")] + [1.0]))
    scale = (width - label_w - right) / marks[-1]
    esc = html.escape
    body = [f'<text x="10" y="18" fill="{TEXT}" font-weight="600">{esc(title)}</text>']
    for mark in marks:
        x = label_w + mark * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{TEXT}">'
            f"{mark:g}</text>"
        )
    for i, row in enumerate(rows):
        y = top + i * row_h
        mid = y + row_h / 2 + 4
        label = f"{row.get('class') or ''} {_shape(row)}".strip()
        body.append(
            f'<text x="{label_w - 8}" y="{mid:.1f}" text-anchor="end" fill="{TEXT}">'
            f"{esc(label)}</text>"
        )
        ratio = row.get("ratio")
        if not ratio:
            note = f"not measured: {row.get('status') or 'no result'}"
            body.append(f'<text x="{label_w + 6}" y="{mid:.1f}" fill="{GREY}">{esc(note)}</text>')
            continue
        w = ratio * scale
        roof = row.get("roofline") or {}
        pct = roof.get("pct_of_bound")
        text = f"{ratio:.2f}x" + (
            f" · {pct:.0f} % of {roof['limit']} bound" if pct is not None else ""
        )
        tip = f"{label}: {row.get('config')}, {text}"
        body.append(
            f"<g><title>{esc(tip)}</title>"
            f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" rx="3" '
            f'fill="{BLUE if ratio >= 1.0 else ORANGE}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{mid:.1f}" fill="{TEXT}">{esc(text)}</text></g>'
        )
    x = label_w + 1.0 * scale
    body.append(
        f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#0f172a" '
        f'stroke-dasharray="4 3"/><text x="{x + 4:.1f}" y="{top - 8}" fill="#0f172a">'
        "cuBLAS = 1.0</text>"
        f'<text x="{label_w + (width - label_w - right) / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle" fill="{TEXT}">cuBLAS time / our time (higher is better)</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(title)}" '
        f'font-family="system-ui, sans-serif" font-size="12">'
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f"<title>{esc(title)}</title>{''.join(body)}</svg>\n"
    )


def chart_title(doc: dict[str, Any]) -> str:
    geo = (doc.get("summary") or summarize(doc.get("shapes") or [])).get("geomean_ratio")
    return (
        f"gemmtune vs cuBLAS FP32 on {doc.get('device', 'GPU')}, "
        f"{str(doc.get('date', ''))[:10]}: geometric mean {_num(geo, '.2f')}"
    )
