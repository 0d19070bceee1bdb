"""The ``gemmtune bench`` JSON as a Markdown table (for the README) and an SVG bar chart.

Ratios are to the file's baseline: the best vendor launch (``tuner.run.bench``), with the default
cuBLAS call as a second column; files written before the vendor baseline compared with cuBLAS,
and render as they always did, with "-" in the vendor columns.

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
    """The roofline columns: bound (limit), ours as % of it, the baseline as % of it (the best
    vendor launch; in files from before it, cuBLAS)."""
    roof = row.get("roofline")
    if not roof:
        return DASH, DASH, DASH
    bound = f"{roof['bound_tflops']:.1f} ({roof['limit']})"
    baseline = roof.get("vendor_pct_of_bound", roof.get("cublas_pct_of_bound"))
    return bound, _pct(roof.get("pct_of_bound")), _pct(baseline)


def _pct(value: float | None) -> str:
    return DASH if value is None else f"{value:.0f} %"


def has_vendor_baseline(row: dict[str, Any]) -> bool:
    """Whether a row's ``ratio`` is to the best vendor launch (``tuner.run.bench``); rows of
    files from before it compared with the default cuBLAS call."""
    return "vendor_ms" in row


def cublas_ratio(row: dict[str, Any]) -> float | None:
    """The default cuBLAS call's time over ours, in any file's rows."""
    if "cublas_ratio" in row:
        return row["cublas_ratio"]  # type: ignore[no-any-return]
    return None if has_vendor_baseline(row) else row.get("ratio")


def _vendor(row: dict[str, Any]) -> tuple[str, str, str]:
    """The baseline columns: which vendor launch was fastest, its ms, its time over ours."""
    if not has_vendor_baseline(row):
        return DASH, DASH, DASH
    launch = row.get("vendor_launch") or DASH
    return f"`{launch}`", _num(row.get("vendor_ms"), ".3f"), _num(row.get("ratio"), ".2f")


TABLE_HEAD = (
    "| class | MxNxK | config | ms | TFLOP/s | best vendor launch | vendor ms "
    "| vendor time / ours | cuBLAS ms | cuBLAS TFLOP/s | cuBLAS time / ours "
    "| roofline bound, TFLOP/s | ours, % of bound | vendor, % of bound | evaluated |"
)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """One line a shape: ours, the baseline (the fastest vendor launch: cuBLASLt's algorithms,
    padded on ragged shapes, or the default call) and the default cuBLAS call as a second
    column, then the roofline."""
    lines = [TABLE_HEAD, "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        config = f"`{row['config']}`" if row.get("config") else DASH
        bound, ours, theirs = _bound(row)
        evaluated = _num(row.get("candidates_evaluated"), "d")
        if row.get("ratio") is None:
            status = row.get("status") or "not measured"
            why = f"{status}: {row['reason']}" if row.get("reason") else status
            blanks = " | ".join([DASH] * 7)
            lines.append(
                f"| {row.get('class') or DASH} | {_shape(row)} | {config} | {_cell(why)} "
                f"| {blanks} | {bound} | {DASH} | {DASH} | {evaluated} |"
            )
            continue
        launch, vendor_ms, vendor_ratio = _vendor(row)
        lines.append(
            f"| {row.get('class') or DASH} | {_shape(row)} | {config} "
            f"| {_num(row.get('ms'), '.3f')} | {_num(row.get('tflops'), '.1f')} "
            f"| {launch} | {vendor_ms} | {vendor_ratio} "
            f"| {_num(row.get('cublas_ms'), '.3f')} | {_num(row.get('cublas_tflops'), '.1f')} "
            f"| {_num(cublas_ratio(row), '.2f')} | {bound} | {ours} | {theirs} | {evaluated} |"
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


def _kind_line(dtype: str, layout: str, out_dtype: str = "float32") -> list[str]:
    """What the inputs and C were, for half inputs (a float32 NN file needs no such line)."""
    if (dtype, layout) == ("float32", "NN"):
        return []
    return [
        f"Inputs: {dtype} A and B in layout {layout} (row-major terms: A's letter, then B's; T = "
        f"stored transposed), FP32 sums, {out_dtype} C; baseline: cuBLAS in the same dtype "
        f"(cublasGemmEx, CUBLAS_COMPUTE_32F, {out_dtype} C; never TF32).",
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
    baseline = baseline_name(doc)
    parts.append(
        f"Geometric mean of {baseline} time / our time: **{_num(geo, '.2f')}** over "
        f"{summary['measured']} of {summary['shapes']} shapes; by class: {by_class}."
    )
    parts += ["", targets_table(summary), ""] if summary["targets"] else [""]
    parts += _kind_line(dtype, layout, (doc.get("method") or {}).get("out_dtype") or "float32")
    method = doc.get("method") or {}
    if method.get("rounds"):
        parts += [
            f"Times: median of {method['rounds']} alternating rounds (ours, cuBLAS, ours, ...), "
            "each the median of repeated launches with L2 flushed, alpha = 1, beta = 0, after "
            f"{_check_words(dtype)}.",
            "",
        ]
    if method.get("baseline"):
        parts += [
            f"Baseline: the {method['baseline']}, the fastest of the default cuBLAS call, "
            f"cuBLASLt's first {method.get('vendor_ranks', '?')} heuristic algorithms "
            "(CUBLAS_COMPUTE_32F) and, on shapes with ragged rows, the same on operands "
            "zero-padded to whole 16-byte vectors (copies timed), all timed in the same rounds; "
            "the default call (cublasSgemm for float32 NN, cublasGemmEx otherwise) is the "
            "cuBLAS column.",
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


def baseline_name(doc: dict[str, Any]) -> str:
    """What a file's ratios compare with: the best vendor launch, or (files from before it)
    cuBLAS."""
    return "best vendor" if (doc.get("method") or {}).get("baseline") else "cuBLAS"


# The chart: one horizontal bar per shape, ratio = baseline time / our time, a line at 1.0.
RATIO_LAYOUT = BarLayout(label_width=190, right=230, width=880)


def ratio_chart(rows: Sequence[dict[str, Any]], title: str, baseline: str = "cuBLAS") -> str:
    """SVG: one bar per shape (blue at or above 1.0, orange below), labelled with the ratio to
    ``baseline`` (what the rows' ratios compare with: :func:`baseline_name`) and the roofline
    position; failed shapes get a note instead of a bar."""
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
        reference_label=f"{baseline} = 1.0",
        caption=f"{baseline} time / our time (higher is better)",
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
        f"gemmtune vs {baseline_name(doc)} {kind} on {doc.get('device', 'GPU')}, "
        f"{str(doc.get('date', ''))[:10]}: geometric mean {_num(geo, '.2f')}"
    )
