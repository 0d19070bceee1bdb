"""The ``gemmtune bench`` JSON as a Markdown table (for the README) and an SVG bar chart.

Both read only the document, so they re-render a committed result without a GPU. The chart is
drawn by :mod:`tuner.report.svg_charts`, the builder the dashboard draws with too. Rows without a
roofline or cuBLAS ms (older per-shape tuning files) render too, with "-" where a figure is
missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tuner.core.accuracy import ACCURACY_CLASSES, DEFAULT_ACCURACY, allowance
from tuner.report.svg_charts import Bar, BarLayout, bar_chart
from tuner.run.bench import input_kind, summarize

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


SHORT_DTYPES = {"float32": "FP32", "float16": "FP16", "bfloat16": "BF16"}


def _kind_line(dtype: str, layout: str) -> list[str]:
    """What the inputs were, for half inputs (a float32 NN file needs no such line)."""
    if (dtype, layout) == ("float32", "NN"):
        return []
    return [
        f"Inputs: {dtype} A and B in layout {layout} (row-major terms: A's letter, then B's; T = "
        "stored transposed), FP32 sums, float32 C; baseline: cuBLAS in the same dtype "
        "(cublasGemmEx, CUBLAS_COMPUTE_32F, float32 C; never TF32).",
        "",
    ]


def _check_words(dtype: str) -> str:
    if dtype == "float32":
        return "a correctness check against cuBLAS (strict FP32)"
    return (
        f"a correctness check against cuBLAS in {dtype} with FP32 sums and against FP32 SGEMM on "
        "the values before rounding"
    )


def _roof_line(roof: dict[str, Any], dtype: str) -> str:
    if dtype == "float32":
        ceiling = f"FFMA ceiling {roof['ffma_tflops']} TFLOP/s"
        source, traffic = f"FFMA: {roof['ffma_source']}", roof["bytes_model"]
    else:
        ceiling = f"FP16/BF16 tensor-core ceiling {roof.get('half_tflops')} TFLOP/s"
        source = f"tensor cores: {roof.get('half_source') or 'unknown'}"
        traffic = roof.get("half_bytes_model") or roof["bytes_model"]
    return (
        f"Roofline bound = min({ceiling}, intensity x {roof['bandwidth_tb_s']} TB/s); {source}; "
        f"bandwidth: {roof['bandwidth_source']}; minimum traffic {traffic}."
    )


def markdown(doc: dict[str, Any]) -> str:
    """The table, the geometric means, the targets, and how and where it was measured."""
    rows: list[dict[str, Any]] = list(doc.get("shapes") or [])
    dtype, layout = input_kind(rows)
    summary = doc.get("summary") or summarize(rows, doc.get("suite"))
    parts = [table(rows), ""]
    geo = summary.get("geomean_ratio")
    by_class = ", ".join(
        f"{name} {_num(c['geomean_ratio'], '.2f')}" for name, c in summary["by_class"].items()
    )
    parts.append(
        f"Geometric mean of cuBLAS time / our time: **{_num(geo, '.2f')}** over "
        f"{summary['measured']} of {summary['shapes']} shapes; by class: {by_class}."
    )
    parts += ["", targets_table(summary), ""] if summary["targets"] else [""]
    parts += _kind_line(dtype, layout)
    method = doc.get("method") or {}
    if method.get("rounds"):
        parts += [
            f"Times: median of {method['rounds']} alternating rounds (ours, cuBLAS, ours, ...), "
            "each the median of repeated launches with L2 flushed, alpha = 1, beta = 0, after "
            f"{_check_words(dtype)}.",
            "",
        ]
    parts += _accuracy_line(method.get("accuracy"))
    roof = doc.get("roofline")
    if roof:
        parts += [_roof_line(roof, dtype), ""]
    parts.append(f"Measured on {_provenance(doc)}.")
    return "\n".join(parts) + "\n"


def _accuracy_line(accuracy: str | None) -> list[str]:
    """What a floor other than ``exact`` changed: the checks' allowance, and which configs the
    FFMA roofline does not bound."""
    if accuracy in (None, DEFAULT_ACCURACY):
        return []
    return [
        f"Accuracy class {accuracy} accepted (`--accuracy {accuracy}`: "
        f"{ACCURACY_CLASSES[accuracy].doc}): its configs pass the FP32 tolerance plus "
        f"{allowance(accuracy):.1e} relative error, and run on the tensor cores, which the FP32 "
        "roofline below does not bound.",
        "",
    ]


# The chart: one horizontal bar per shape, ratio = cuBLAS time / our time, a line at 1.0.
RATIO_LAYOUT = BarLayout(label_width=190, right=230, width=880)


def ratio_chart(rows: Sequence[dict[str, Any]], title: str) -> str:
    """SVG: one bar per shape (blue at or above 1.0, orange below), labelled with the ratio and
    the roofline position; failed shapes get a note instead of a bar."""
    bars = []
    for row in rows:
        label = f"{row.get('class') or ''} {_shape(row)}".strip()
        ratio = row.get("ratio")
        if not ratio:
            note = f"not measured: {row.get('status') or 'no result'}"
            bars.append(Bar(label, None, note=note))
            continue
        roof = row.get("roofline") or {}
        pct = roof.get("pct_of_bound")
        text = f"{ratio:.2f}x" + (
            f" · {pct:.0f} % of {roof['limit']} bound" if pct is not None else ""
        )
        bars.append(Bar(label, ratio, tooltip=f"{label}: {row.get('config')}, {text}", text=text))
    return bar_chart(
        bars,
        title=title,
        reference=1.0,
        reference_label="cuBLAS = 1.0",
        caption="cuBLAS time / our time (higher is better)",
        layout=RATIO_LAYOUT,
        standalone=True,
    )


def chart_title(doc: dict[str, Any]) -> str:
    rows = doc.get("shapes") or []
    geo = (doc.get("summary") or summarize(rows, doc.get("suite"))).get("geomean_ratio")
    dtype, layout = input_kind(rows)
    kind = SHORT_DTYPES.get(dtype, dtype) + (
        "" if (dtype, layout) == ("float32", "NN") else f" {layout}"
    )
    return (
        f"gemmtune vs cuBLAS {kind} on {doc.get('device', 'GPU')}, "
        f"{str(doc.get('date', ''))[:10]}: geometric mean {_num(geo, '.2f')}"
    )
