"""What the dashboard pages show: read from storage, drawn by :mod:`tuner.report.svg_charts`."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from sqlalchemy.orm import Session

import storage
from api.study_names import summary_title
from tuner.answers.best import Tuned
from tuner.answers.index import load_snapshot
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.report.svg_charts import Bar, bar_chart


def _pct(entry: Tuned) -> float | None:
    return None if entry.ratio is None else 100.0 * entry.ratio


def _label(entry: Tuned) -> str:
    """A chart bar's label: the shape, then dtype and layout unless float32 NN, then the type
    of C where it is not the input type, then the accuracy class unless exact (a shape may
    have a best of each class)."""
    shape = f"{entry.m}x{entry.n}x{entry.k}"
    if (entry.dtype, entry.layout) != ("float32", "NN"):
        shape = f"{shape} {entry.dtype} {entry.layout}"
    if entry.out_dtype != entry.dtype:
        shape = f"{shape} -> {entry.out_dtype}"
    if entry.accuracy != DEFAULT_ACCURACY:
        shape = f"{shape} {entry.accuracy}"
    return shape


def overview(session: Session) -> dict[str, Any]:
    """Template context of /dashboard: best configs grouped by device, one chart per device."""
    entries = sorted(
        load_snapshot(session).entries,
        key=lambda e: (e.device.name, e.m * e.n * e.k, e.m, e.n, e.k),
    )
    devices: dict[str, list[Tuned]] = {}
    for entry in entries:
        devices.setdefault(entry.device.name, []).append(entry)
    charts: dict[str, Markup] = {}
    for name, rows in devices.items():
        bars = [
            Bar(
                _label(e),
                pct,
                f"{_label(e)}: {e.config_name}, {e.tflops or 0:.1f} TFLOP/s, {pct:.1f}% of cuBLAS",
            )
            for e in rows
            if (pct := _pct(e)) is not None
        ]
        charts[name] = bar_chart(
            bars,
            title=f"% of cuBLAS per shape on {name}",
            unit="%",
            reference=100.0,
            reference_label="cuBLAS",
        )
    return {
        "devices": devices,
        "charts": charts,
        "pct": _pct,
        "studies": storage.study_summaries(session),
        "measurements": storage.count_measurements(session),
    }


def study_list(session: Session, search: str = "") -> dict[str, Any]:
    """Template context of /dashboard/studies: every study with its readable title, or those
    whose title or key holds every word of ``search`` (any case: "4096 bfloat16 nt")."""
    studies = storage.study_summaries(session)
    words = search.lower().replace("\u00d7", "x").split()

    def text(summary: storage.StudySummary) -> str:
        # The titles write the multiplication sign (U+00D7); a search types "4096x4096x4096".
        return f"{summary_title(summary)} {summary.name}".lower().replace("\u00d7", "x")

    if words:
        studies = [s for s in studies if all(w in text(s) for w in words)]
    return {"studies": studies, "search": search}
