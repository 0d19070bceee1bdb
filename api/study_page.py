"""What a study page shows, and why: the best so far against cuBLAS, what mattered (parallel
coordinates, one slice per parameter; the parameter importances are a panel the page loads on its
own, :mod:`api.importance_panel`), a chosen value against a chosen axis coloured by a chosen
parameter (:mod:`api.chart_choice`: scales, ranges), the failures and the trial table.

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

from api.chart_choice import (
    OBJECTIVES,
    RESOURCES,
    ChartChoice,
    Zoom,
    scale_of,
    speed,
    x_value,
    y_value,
)
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

MAX_POINTS = 300  # per x/y chart
SLICE_POINTS = 80  # per slice
PARALLEL_BEST, PARALLEL_OTHERS = 100, 100


@dataclass(frozen=True)
class StudyView:
    """The form's choices: the family the parameter charts look at (None: every family, with
    the parameters they share), what the chosen scatter draws, the table."""

    family: str | None = None
    chart: ChartChoice = field(default_factory=ChartChoice)
    table: TableQuery = field(default_factory=TableQuery)


def view_query(view: StudyView, changes: Mapping[str, object]) -> str:
    """The query string of this view with ``changes`` (links of the table's sort and pages)."""
    table = view.table
    values: dict[str, object] = {
        "family": view.family or "",
        **view.chart.query(),
        "status": table.status or "",
        "q": table.search,
        "sort": table.sort,
        "desc": str(table.descending).lower(),
        "page": table.page,
        **changes,
    }
    return "?" + urlencode(values)


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


def _dots(
    trials: Sequence[StudyTrial],
    xs: Sequence[float],
    groups: Sequence[str],
    limit: int,
    tooltip: Callable[[StudyTrial], str] = _label,
    ys: Sequence[float] | None = None,
    scores: Sequence[float] | None = None,
) -> list[Point]:
    """The points of ``trials`` (``ys``, by default TFLOP/s, against ``xs``) a chart draws: at
    most ``limit``, those that would hide one another drawn once, the best by ``scores``
    (higher is better; by default the ys) (:func:`tuner.report.svg_charts.thinned`)."""
    ys = [t.tflops or 0.0 for t in trials] if ys is None else ys
    return [
        Point(xs[i], ys[i], groups[i], tooltip(trials[i]) + more_here(n))
        for i, n in thinned(xs, scores or ys, groups, limit)
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


def _reference(study: Study, objective: str) -> Reference | None:
    """The line to beat on the y axis: cuBLAS, as the objective reads it."""
    cublas = study.cublas_tflops
    if objective == "pct_cublas":
        return Reference(100.0, "cuBLAS")
    if cublas is None:
        return None
    if objective == "ms":
        m, n, k = study.shape
        return Reference(2 * m * n * k / (cublas * 1e9), "cuBLAS")  # its median's time
    return Reference(cublas, "cuBLAS")


def _chosen(scoped: Sequence[StudyTrial], chart: ChartChoice, study: Study) -> Markup:
    """The chosen scatter: ``chart.y`` against ``chart.x`` for the trials inside the zoom that
    have both, coloured by ``chart.colour``, on the chosen scales.

    Raises:
        InputError: a log scale over values that are not all > 0.
    """
    shown, xs, ys, groups = [], [], [], []
    for t in scoped:
        x, y = x_value(t, chart.x), y_value(t, chart.y)
        if x is not None and y is not None and chart.zoom.holds(x, y):
            shown.append(t)
            xs.append(x)
            ys.append(y)
            groups.append(
                t.family if chart.colour == "family" else str(t.params.get(chart.colour, "-"))
            )
    zoom, reference = chart.zoom, _reference(study, chart.y)
    if reference is not None and not Zoom(y_min=zoom.y_min, y_max=zoom.y_max).holds(
        0.0, reference.value
    ):
        reference = None  # outside the chosen y range
    y_fit = ys + ([reference.value] if reference is not None else [])
    return scatter_chart(
        _dots(shown, xs, groups, MAX_POINTS, ys=ys, scores=[speed(chart.y, y) for y in ys]),
        title=f"{chart.y_label} against {chart.x_label}, coloured by {chart.colour}",
        x_label=chart.x_label,
        y_label=chart.y_label,
        reference=reference,
        legend_title=chart.colour,
        x_scale=scale_of(xs, chart.log_x, zoom.x_min, zoom.x_max, "x"),
        y_scale=scale_of(y_fit, chart.log_y, zoom.y_min, zoom.y_max, "y"),
    )


def _slice_label(trial: StudyTrial) -> str:
    return f"#{trial.number}: {trial.tflops or 0:.2f} TFLOP/s, {trial.ms or 0:.4g} ms"


def _slices(
    scoped: Sequence[StudyTrial], params: Sequence[str], chart: ChartChoice
) -> list[Markup]:
    """A slice chart per parameter that took more than one value (one value says nothing about
    what the parameter does, and its axis had fractional ticks around it): the chosen y value
    and its scale against the parameter's values."""
    measured = [(t, y) for t in scoped if (y := y_value(t, chart.y)) is not None]
    trials, ys = [t for t, _ in measured], [y for _, y in measured]
    scores = [speed(chart.y, y) for y in ys]
    no_groups = [""] * len(trials)
    varied = [name for name in params if len({t.params[name] for t in trials}) > 1]
    y_scale = scale_of(ys, chart.log_y, None, None, "y")
    return [
        scatter_chart(
            _dots(
                trials,
                [float(t.params[name]) for t in trials],
                no_groups,
                SLICE_POINTS,
                _slice_label,
                ys=ys,
                scores=scores,
            ),
            title=f"{chart.y_label} by {name}",
            x_label=name,
            y_label=chart.y_label,
            size=(380, 260),
            legend=False,
            y_scale=y_scale,
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
    chart = view.chart
    chart.check(params)
    several = view.family is None and len({t.family for t in scoped}) > 1
    drawn = scoped and (params or several)
    return {
        "axes": [*RESOURCES, *params],
        "objectives": OBJECTIVES,
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
            ("chosen", view.family, chart),
            lambda: _chosen(scoped, chart, study),
        )
        if scoped
        else None,
        "slices": cached.memo(
            ("slices", view.family, chart.y, chart.log_y), lambda: _slices(scoped, params, chart)
        )
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
        "chart_query": view.chart.query(),
        "best": study.best,
        "ratio": study.best_against_cublas,
        "running": study.running(),
        "meaning": STATUS_MEANING,
        "table": table_page(study.trials, view.table),
        "link": lambda changes: view_query(view, {**phase_query(study.phase), **changes}),
    }
