"""``/dashboard``: server-rendered HTML (Jinja2) with inline SVG charts; nothing from the web."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

import storage
from api.chart_choice import ChartChoice, Zoom
from api.dashboard import overview, study_list
from api.deps import IndexDep, SessionDep, StudyCacheDep
from api.importance_panel import importance_context
from api.shape_space import Question, shape_space_context
from api.study_names import summary_title
from api.study_page import StudyView, study_context
from api.trial_table import SortKey, TableQuery
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.errors import InputError
from tuner.core.phases import Phase

router = APIRouter(prefix="/dashboard", tags=["dashboard"], include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
templates.env.globals["study_title"] = summary_title


@router.get("", response_class=HTMLResponse)
def dashboard(request: Request, session: SessionDep) -> HTMLResponse:
    return templates.TemplateResponse(request, "dashboard.html", overview(session))


@router.get("/studies", response_class=HTMLResponse)
def studies(
    request: Request, session: SessionDep, q: Annotated[str, Query(max_length=200)] = ""
) -> HTMLResponse:
    return templates.TemplateResponse(request, "studies.html", study_list(session, q))


@router.get("/shapes", response_class=HTMLResponse)
def shapes(
    request: Request,
    index: IndexDep,
    shape: Annotated[str, Query(max_length=100)] = "",
    device: Annotated[str, Query(max_length=200)] = "",
    dtype: Annotated[str, Query(max_length=20)] = "float32",
    layout: Annotated[str, Query(max_length=20)] = "NN",
    accuracy: Annotated[str, Query(max_length=20)] = DEFAULT_ACCURACY,
    out_dtype: Annotated[str, Query(max_length=20)] = "",
) -> HTMLResponse:
    # Every field as the API takes it: the page gives the API's answer to the same question.
    question = Question(shape, device, dtype, layout, accuracy, out_dtype)
    context = shape_space_context(index.snapshot(), question)
    return templates.TemplateResponse(request, "shapes.html", context)


@router.get("/progress")
def progress(study: str, session: SessionDep, phase: Phase = Phase.SCREENING) -> dict[str, Any]:
    """What a live study page polls: trial counts and the newest measurement."""
    done = storage.study_progress(session, study, phase)
    last_at = None if done.last_at is None else done.last_at.isoformat()
    return {"trials": done.trials, "ok": done.ok, "last_id": done.last_id, "last_at": last_at}


@router.get("/importances", response_class=HTMLResponse)
def importances(
    request: Request,
    study: str,
    session: SessionDep,
    cache: StudyCacheDep,
    family: str | None = None,
    phase: Phase = Phase.SCREENING,
) -> HTMLResponse:
    """A study page's parameter importances panel (an HTML fragment its script loads)."""
    found = cache.get(session, study, phase)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study named {study!r}")
    try:
        context = importance_context(found, family or None)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from None
    return templates.TemplateResponse(request, "importances.html", context)


@router.get("/studies/{study:path}", response_class=HTMLResponse)
def study(
    request: Request,
    study: str,
    session: SessionDep,
    cache: StudyCacheDep,
    family: str | None = None,
    x: str = "registers",
    y: str = "tflops",
    colour: str = "family",
    log_x: bool = False,
    log_y: bool = False,
    x_min: Annotated[str, Query(max_length=40)] = "",
    x_max: Annotated[str, Query(max_length=40)] = "",
    y_min: Annotated[str, Query(max_length=40)] = "",
    y_max: Annotated[str, Query(max_length=40)] = "",
    status_: Annotated[str | None, Query(alias="status")] = None,
    q: Annotated[str, Query(max_length=200)] = "",
    sort: SortKey = "trial",
    desc: bool = False,
    page: Annotated[int, Query(ge=1)] = 1,
    phase: Phase = Phase.SCREENING,
) -> HTMLResponse:
    found = cache.get(session, study, phase)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study named {study!r}")
    table = TableQuery(status_ or None, family or None, q, sort, desc, page)
    try:
        zoom = Zoom.parse(x_min, x_max, y_min, y_max)
        chart = ChartChoice(x, y, colour, log_x, log_y, zoom)
        context = study_context(found, StudyView(family or None, chart, table))
    except InputError as exc:
        raise HTTPException(422, str(exc)) from None  # a bad choice in the form
    return templates.TemplateResponse(request, "study.html", context)
