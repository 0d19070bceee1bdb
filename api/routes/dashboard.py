"""``/dashboard``: server-rendered HTML (Jinja2) with inline SVG charts; nothing from the web."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from api.dashboard import overview, study_page
from api.deps import SessionDep

router = APIRouter(prefix="/dashboard", tags=["dashboard"], include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")


@router.get("", response_class=HTMLResponse)
def dashboard(request: Request, session: SessionDep) -> HTMLResponse:
    return templates.TemplateResponse(request, "dashboard.html", overview(session))


@router.get("/studies/{study:path}", response_class=HTMLResponse)
def study(request: Request, study: str, session: SessionDep) -> HTMLResponse:
    context = study_page(session, study)
    if context is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study named {study!r}")
    return templates.TemplateResponse(request, "study.html", context)
