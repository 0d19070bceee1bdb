"""What the dashboard pages show: read from storage, drawn by :mod:`tuner.svg_charts`."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from sqlalchemy.orm import Session

import storage
from api.responses import study_trials
from tuner.answer_index import load_snapshot
from tuner.answers import Tuned
from tuner.svg_charts import Bar, Point, bar_chart, best_so_far_chart, scatter_chart


def _pct(entry: Tuned) -> float | None:
    return None if entry.ratio is None else 100.0 * entry.ratio


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
                f"{e.m}x{e.n}x{e.k}",
                pct,
                f"{e.m}x{e.n}x{e.k}: {e.config_name}, {e.tflops or 0:.1f} TFLOP/s, "
                f"{pct:.1f}% of cuBLAS",
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


def study_page(session: Session, name: str) -> dict[str, Any] | None:
    """Template context of /dashboard/studies/{name}, or ``None`` when there is no such study."""
    rows = storage.measurements_for_study(session, name)
    if not rows:
        return None
    trials = study_trials(rows)
    ok = [t for t in trials if t.status == "ok" and t.tflops is not None]
    dots, steps = [], []
    for i, t in enumerate(trials):
        x = float(t.trial_number if t.trial_number is not None else i)
        if t.status == "ok" and t.tflops is not None:
            dots.append(Point(x, t.tflops, t.family, f"#{x:g} {t.config_name}: {t.tflops:.2f}"))
        if t.best_so_far_tflops is not None:
            steps.append(Point(x, t.best_so_far_tflops))
    scatter = [
        Point(
            float(t.registers),
            t.tflops or 0.0,
            t.family,
            f"{t.config_name}: {t.tflops or 0:.2f} TFLOP/s, {t.registers} registers, "
            f"occupancy {t.occupancy or 0:.0%}",
        )
        for t in ok
        if t.registers is not None
    ]
    shape = rows[0].shape
    failed: dict[str, int] = {}
    for t in trials:
        if t.status != "ok":
            failed[t.status] = failed.get(t.status, 0) + 1
    best = max(ok, key=lambda t: t.tflops or 0.0) if ok else None
    return {
        "name": name,
        "shape": f"{shape.m}x{shape.n}x{shape.k}",
        "device": rows[0].device.name,
        "trials": len(trials),
        "ok": len(ok),
        "failed": failed,
        "best": best,
        "curve": best_so_far_chart(
            dots, steps, title="Best so far (line) and every trial (dots)", y_label="TFLOP/s"
        ),
        "scatter": scatter_chart(
            scatter,
            title="Explored configs: TFLOP/s vs registers per thread, by family",
            x_label="registers per thread",
            y_label="TFLOP/s",
        )
        if scatter
        else None,
        "top": sorted(ok, key=lambda t: -(t.tflops or 0.0))[:10],
    }
