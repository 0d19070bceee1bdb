"""``GET /healthz``: the process is up and the database answers."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from sqlalchemy.exc import SQLAlchemyError

import storage
from api import schemas
from api.deps import IndexDep, SessionDep

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=schemas.Health)
def healthz(session: SessionDep, index: IndexDep) -> schemas.Health:
    try:
        backend = storage.ping(session)
    except SQLAlchemyError as exc:
        detail = " ".join(str(exc).split())[:300]
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"database: {detail}") from exc
    return schemas.Health(status="ok", database=backend, best_configs=len(index.snapshot().entries))
