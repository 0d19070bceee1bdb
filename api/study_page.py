"""What a study page shows, and why: the best so far against cuBLAS, what mattered (parameter
importances, parallel coordinates, one slice per parameter), TFLOP/s against a chosen axis
coloured by a chosen parameter, the failures and the trial table.

Every chart is bounded however long the study: points that would land on one another are drawn
once (:func:`tuner.svg_charts.thin_points`), parallel coordinates show the fastest trials and an
even sample of the rest, the table is one page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from api.importance import importances, parameter_names
from api.study_data import Study, StudyTrial
from api.study_names import study_title
from api.trial_table import STATUS_MEANING, TableQuery, failures, table_page
from tuner.errors import InputError
from tuner.svg_charts import (
    Bar,
    BarLayout,
    Point,
    Reference,
    bar_chart,
    best_so_far_chart,
    scatter_chart,
    thin_points,
)
from tuner.svg_parallel import Line, parallel_coordinates_chart

# Resources every measured trial has, by the name the axis form uses.
RESOURCES = {
    "registers": "registers per thread",
    "smem": "shared memory per block, bytes",
    "occupancy": "occupancy (active warps / maximum)",
    "trial": "trial number",
}
MAX_POINTS = 300  # per x/y chart
SLICE_POINTS = 80  # per slice
PARALLEL_BEST, PARALLEL_OTHERS = 100, 100


@dataclass(frozen=True)
class StudyView:
    """The form's choices: the family the parameter charts look at (None: every family, with
    the parameters they share), the x axis and the colour of the chosen scatter, the table."""

    family: str | None = None
    x: str = "registers"
    colour: str = "family"
    table: TableQuery = field(default_factory=TableQuery)


def view_query(view: StudyView, changes: Mapping[str, object]) -> str:
    """The query string of this view with ``changes`` (links of the table's sort and pages)."""
    table = view.table
    values: dict[str, object] = {
        "family": view.family or "",
        "x": view.x,
        "colour": view.colour,
        "status": table.status or "",
        "q": table.search,
        "sort": table.sort,
        "desc": str(table.descending).lower(),
        "page": table.page,
        **changes,
    }
    return "?" + urlencode(values)


def _axis_value(trial: StudyTrial, axis: str) -> float | None:
    resource = {
        "registers": trial.registers,
        "smem": trial.smem_bytes,
        "occupancy": trial.occupancy,
        "trial": trial.number,
    }
    if axis in resource:
        value = resource[axis]
        return None if value is None else float(value)
    found = trial.params.get(axis)
    return None if found is None else float(found)


def _label(trial: StudyTrial) -> str:
    return f"#{trial.number} {trial.config_name}: {trial.tflops or 0:.2f} TFLOP/s"


def _choices(study: Study, view: StudyView) -> tuple[list[StudyTrial], list[str]]:
    """The ok trials in scope and their shared parameters; checks the view against them."""
    if view.family is not None and view.family not in study.families:
        raise InputError(f"`family` must be one of {study.families}, got {view.family!r}")
    scoped = [t for t in study.ok if view.family in (None, t.family)]
    params = [p for p in parameter_names(scoped) if p != "family"]
    if view.x not in (*RESOURCES, *params):
        raise InputError(f"`x` must be one of {[*RESOURCES, *params]}, got {view.x!r}")
    if view.colour not in ("family", *params):
        raise InputError(f"`colour` must be one of {['family', *params]}, got {view.colour!r}")
    return scoped, params


def _curve(study: Study) -> Markup:
    dots = [Point(float(t.number), t.tflops or 0.0, tooltip=_label(t)) for t in study.ok]
    steps = [Point(float(t.number), t.best_so_far) for t in study.trials if t.best_so_far]
    cublas = study.cublas_tflops
    return best_so_far_chart(
        thin_points(dots, MAX_POINTS),
        steps,
        title="Best so far (line) and every ok trial (dots)",
        y_label="TFLOP/s",
        reference=None if cublas is None else Reference(cublas, f"cuBLAS {cublas:.1f}"),
    )


def _chosen(scoped: Sequence[StudyTrial], view: StudyView, cublas: float | None) -> Markup:
    points = []
    for t in scoped:
        x = _axis_value(t, view.x)
        if x is not None:
            group = t.family if view.colour == "family" else str(t.params.get(view.colour, "-"))
            points.append(Point(x, t.tflops or 0.0, group, _label(t)))
    x_label = RESOURCES.get(view.x, view.x)
    return scatter_chart(
        thin_points(points, MAX_POINTS),
        title=f"TFLOP/s against {x_label}, coloured by {view.colour}",
        x_label=x_label,
        y_label="TFLOP/s",
        reference=None if cublas is None else Reference(cublas, "cuBLAS"),
    )


def _slices(scoped: Sequence[StudyTrial], params: Sequence[str]) -> list[Markup]:
    charts = []
    for name in params:
        points = [
            Point(float(t.params[name]), t.tflops or 0.0, tooltip=f"#{t.number}: {t.tflops:.2f}")
            for t in scoped
        ]
        charts.append(
            scatter_chart(
                thin_points(points, SLICE_POINTS),
                title=f"TFLOP/s by {name}",
                x_label=name,
                y_label="TFLOP/s",
                size=(380, 260),
                legend=False,
            )
        )
    return charts


def _parallel(scoped: Sequence[StudyTrial], params: Sequence[str], family: bool) -> Markup:
    ranked = sorted(scoped, key=lambda t: -(t.tflops or 0.0))
    rest = ranked[PARALLEL_BEST:]
    step = max(1, -(-len(rest) // PARALLEL_OTHERS))
    shown = ranked[:PARALLEL_BEST] + rest[::step]
    axes = (["family"] if family else []) + list(params)
    lines = [Line({**t.params, "family": t.family}, t.tflops or 0.0, _label(t)) for t in shown]
    note = ""
    if len(shown) < len(scoped):
        note = (
            f" ({PARALLEL_BEST} fastest and {len(shown) - PARALLEL_BEST} others of {len(scoped)})"
        )
    return parallel_coordinates_chart(
        axes, lines, title=f"Parameters of the trials{note}", score_label="TFLOP/s"
    )


def _importance_chart(found: dict[str, float]) -> Markup | None:
    if not found:
        return None
    bars = [Bar(name, 100 * value, text=f"{value:.0%}") for name, value in found.items()]
    return bar_chart(
        bars,
        unit="%",
        title="What mattered: parameter importance (Optuna PED-ANOVA, top 10 % vs all)",
        layout=BarLayout(label_width=110),
    )


def study_context(study: Study, view: StudyView) -> dict[str, Any]:
    """The template context of ``/dashboard/studies/{name}``.

    Raises:
        InputError: a family, axis or colour the study does not have (naming it).
    """
    scoped, params = _choices(study, view)
    several = view.family is None and len({t.family for t in scoped}) > 1
    found = importances(scoped, key=(study.name, len(study.trials), view.family))
    best = study.best
    return {
        "study": study,
        "title": study_title(study.name),
        "view": view,
        "best": best,
        "ratio": study.best_against_cublas,
        "running": study.running(),
        "importances": found,
        "axes": [*RESOURCES, *params],
        "colours": ["family", *params],
        "curve": _curve(study),
        "importance_chart": _importance_chart(found),
        "parallel": _parallel(scoped, params, several) if scoped and (params or several) else None,
        "chosen": _chosen(scoped, view, study.cublas_tflops) if scoped else None,
        "slices": _slices(scoped, params) if scoped else [],
        "failures": failures(study.trials),
        "meaning": STATUS_MEANING,
        "table": table_page(study.trials, view.table),
        "link": lambda changes: view_query(view, changes),
    }
