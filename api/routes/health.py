"""``GET /healthz``: the process is up, the database answers and is the one it opened."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, status
from sqlalchemy.exc import SQLAlchemyError

import storage
from api import schemas
from api.deps import IndexDep, SessionDep, database_file_problem

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=schemas.Health, responses=schemas.errors(503))
def healthz(request: Request, session: SessionDep, index: IndexDep) -> schemas.Health:
    """200 only when the database answers a read of the results tables (not just a ping:
    revoked privileges let ``SELECT 1`` through) and, for SQLite, is still the file the server
    opened; else 503 saying why."""
    problem = database_file_problem(request)
    if problem is not None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, problem)
    try:
        backend = storage.ping(session)
        storage.holds_measurements(session)
        if index.stale is not None:
            index.refresh()  # the database answers again: so may the index
        snapshot = index.snapshot()
    except SQLAlchemyError as exc:
        detail = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"database: {detail}") from exc
    if index.stale is not None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, index.stale)
    return schemas.Health(
        status="ok",
        database=backend,
        best_configs=len(snapshot.entries),
        unreadable_configs=len(snapshot.unreadable),
    )
