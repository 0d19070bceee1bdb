"""What a study page shows, and why: the best so far against cuBLAS, what mattered (parallel
coordinates, one slice per parameter; the parameter importances are a panel the page loads on its
own, :mod:`api.importance_panel`), TFLOP/s against a chosen axis coloured by a chosen parameter,
the failures and the trial table.

Every chart is bounded however long the study: points that would land on one another are drawn
once (:func:`tuner.report.svg_charts.thinned`), parallel coordinates show the fastest trials and an
even sample of the rest, the table is one page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from api.importance import parameter_names
from api.study_cache import CachedStudy
from api.study_data import Study, StudyTrial
from api.trial_table import STATUS_MEANING, TableQuery, failures, table_page
from tuner.core.errors import InputError
from tuner.core.phases import Phase
from tuner.report.svg_charts import (
    Point,
    Reference,
    best_so_far_chart,
    more_here,
    scatter_chart,
    thinned,
)
from tuner.report.svg_parallel import Line, parallel_coordinates_chart

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


def scope(cached: CachedStudy, family: str | None) -> tuple[list[StudyTrial], list[str]]:
    """The ok trials within ``family`` (None: every family) and the parameters they share,
    once per study state.

    Raises:
        InputError: a family the study does not have (naming it and those it has).
    """
    study = cached.study
    if family is not None and family not in study.families:
        raise InputError(f"`family` must be one of {study.families}, got {family!r}")

    def choose() -> tuple[list[StudyTrial], list[str]]:
        scoped = [t for t in study.ok if family in (None, t.family)]
        return scoped, [p for p in parameter_names(scoped) if p != "family"]

    return cached.memo(("scope", family), choose)


def _check_view(view: StudyView, params: Sequence[str]) -> None:
    if view.x not in (*RESOURCES, *params):
        raise InputError(f"`x` must be one of {[*RESOURCES, *params]}, got {view.x!r}")
    if view.colour not in ("family", *params):
        raise InputError(f"`colour` must be one of {['family', *params]}, got {view.colour!r}")


def _dots(
    trials: Sequence[StudyTrial],
    xs: Sequence[float],
    groups: Sequence[str],
    limit: int,
    tooltip: Callable[[StudyTrial], str] = _label,
) -> list[Point]:
    """The points of ``trials`` (TFLOP/s against ``xs``) a chart draws: at most ``limit``,
    those that would hide one another drawn once (:func:`tuner.report.svg_charts.thinned`)."""
    ys = [t.tflops or 0.0 for t in trials]
    return [
        Point(xs[i], ys[i], groups[i], tooltip(trials[i]) + more_here(n))
        for i, n in thinned(xs, ys, groups, limit)
    ]


def _steps(trials: Sequence[StudyTrial]) -> list[Point]:
    """The best-so-far line's corners: where it rose, and the last trial (the same line as
    one point per trial, in far fewer bytes)."""
    steps: list[Point] = []
    for t in trials:
        if t.best_so_far is not None and (not steps or t.best_so_far > steps[-1].y):
            steps.append(Point(float(t.number), t.best_so_far))
    last = trials[-1] if trials else None
    if steps and last is not None and last.best_so_far is not None:
        steps.append(Point(float(last.number), last.best_so_far))
    return steps


def _curve(study: Study) -> Markup:
    ok = study.ok
    dots = _dots(ok, [float(t.number) for t in ok], [""] * len(ok), MAX_POINTS)
    cublas = study.cublas_tflops
    return best_so_far_chart(
        dots,
        _steps(study.trials),
        title="Best so far (line) and every ok trial (dots)",
        y_label="TFLOP/s",
        reference=None if cublas is None else Reference(cublas, f"cuBLAS {cublas:.1f}"),
    )


def _chosen(scoped: Sequence[StudyTrial], view: StudyView, cublas: float | None) -> Markup:
    shown, xs, groups = [], [], []
    for t in scoped:
        x = _axis_value(t, view.x)
        if x is not None:
            shown.append(t)
            xs.append(x)
            groups.append(
                t.family if view.colour == "family" else str(t.params.get(view.colour, "-"))
            )
    x_label = RESOURCES.get(view.x, view.x)
    return scatter_chart(
        _dots(shown, xs, groups, MAX_POINTS),
        title=f"TFLOP/s against {x_label}, coloured by {view.colour}",
        x_label=x_label,
        y_label="TFLOP/s",
        reference=None if cublas is None else Reference(cublas, "cuBLAS"),
    )


def _slice_label(trial: StudyTrial) -> str:
    return f"#{trial.number}: {trial.tflops or 0:.2f}"


def _slices(scoped: Sequence[StudyTrial], params: Sequence[str]) -> list[Markup]:
    """A slice chart per parameter that took more than one value (one value says nothing about
    what the parameter does, and its axis had fractional ticks around it)."""
    no_groups = [""] * len(scoped)
    varied = [name for name in params if len({t.params[name] for t in scoped}) > 1]
    return [
        scatter_chart(
            _dots(
                scoped,
                [float(t.params[name]) for t in scoped],
                no_groups,
                SLICE_POINTS,
                _slice_label,
            ),
            title=f"TFLOP/s by {name}",
            x_label=name,
            y_label="TFLOP/s",
            size=(380, 260),
            legend=False,
        )
        for name in varied
    ]


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


def _charts(cached: CachedStudy, view: StudyView) -> dict[str, Any]:
    """Everything on the page but the table, computed once per study state and view."""
    study = cached.study
    scoped, params = scope(cached, view.family)
    _check_view(view, params)
    several = view.family is None and len({t.family for t in scoped}) > 1
    drawn = scoped and (params or several)
    return {
        "axes": [*RESOURCES, *params],
        "colours": ["family", *params],
        "curve": cached.memo("curve", lambda: _curve(study)),
        # Loaded by the page's script: computing them is most of a large study's first view.
        "importances_url": importances_url(study.name, view.family, study.phase)
        if scoped
        else None,
        "parallel": cached.memo(
            ("parallel", view.family), lambda: _parallel(scoped, params, several)
        )
        if drawn
        else None,
        "chosen": cached.memo(
            ("chosen", view.family, view.x, view.colour),
            lambda: _chosen(scoped, view, study.cublas_tflops),
        )
        if scoped
        else None,
        "slices": cached.memo(("slices", view.family), lambda: _slices(scoped, params))
        if scoped
        else [],
        "failures": cached.memo("failures", lambda: failures(study.trials)),
    }


def importances_url(study: str, family: str | None, phase: Phase = Phase.SCREENING) -> str:
    """Where the page's script fetches the parameter importances panel of ``study``."""
    return "/dashboard/importances?" + urlencode(
        {"study": study, "family": family or "", **phase_query(phase)}
    )


def phase_query(phase: Phase) -> dict[str, str]:
    """The query parameter that names a study's phase in its pages' links: none for its
    screening trials (the page a study's plain link shows)."""
    return {} if phase == Phase.SCREENING else {"phase": phase.value}


def study_context(cached: CachedStudy, view: StudyView) -> dict[str, Any]:
    """The template context of ``/dashboard/studies/{name}``: the charts of this state of the
    study as kept by ``cached``, and one page of its trial table.

    Raises:
        InputError: a family, axis or colour the study does not have (naming it).
    """
    study = cached.study
    return {
        **_charts(cached, view),
        "study": study,
        "title": study.title,
        "phase_query": phase_query(study.phase),
        "view": view,
        "best": study.best,
        "ratio": study.best_against_cublas,
        "running": study.running(),
        "meaning": STATUS_MEANING,
        "table": table_page(study.trials, view.table),
        "link": lambda changes: view_query(view, {**phase_query(study.phase), **changes}),
    }
