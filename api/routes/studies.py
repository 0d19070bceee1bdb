"""``GET /v1/studies/{study}``: one study's trials in order, with the best so far."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

import storage
from api import schemas
from api.deps import SessionDep
from api.responses import study_out
from tuner.core.phases import Phase

router = APIRouter(prefix="/v1/studies", tags=["studies"])


@router.get(
    "/{study:path}", response_model=schemas.StudyOut, responses=schemas.errors(404, 422, 503)
)
def get_study(study: str, session: SessionDep, phase: Phase = Phase.SCREENING) -> schemas.StudyOut:
    """Trials of the study named ``study`` (URL-encoded), in trial order: its screening trials,
    or with ``phase=final`` its finalists' side-by-side re-measurements."""
    rows = storage.measurements_for_study(session, study, phase=phase)
    if not rows:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study named {study!r}")
    return study_out(study, rows)
