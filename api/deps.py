"""Dependencies of the routes: settings, database sessions, the best-config index, the token.

State lives on ``app.state`` (set by :func:`api.app.create_app`), so every test builds its own app
on its own database without globals.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from api.settings import Settings
from tuner.answer_index import BestIndex


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_sessions(request: Request) -> sessionmaker[Session]:
    sessions: sessionmaker[Session] = request.app.state.sessions
    return sessions


def get_session(
    sessions: Annotated[sessionmaker[Session], Depends(get_sessions)],
) -> Iterator[Session]:
    with sessions() as session:
        yield session


async def get_index(request: Request) -> BestIndex:
    # async: a plain function dependency would cost the hot path a worker-thread hop
    index: BestIndex = request.app.state.index
    return index


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
IndexDep = Annotated[BestIndex, Depends(get_index)]

_bearer = HTTPBearer(auto_error=False, description="GEMMTUNE_API_TOKEN of the server")


def require_token(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Uploads need ``Authorization: Bearer <GEMMTUNE_API_TOKEN>``; no token set: uploads off."""
    if not settings.api_token:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "uploads are disabled on this server: start it with GEMMTUNE_API_TOKEN set",
        )
    given = credentials.credentials if credentials is not None else ""
    if not given or not secrets.compare_digest(given.encode(), settings.api_token.encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong bearer token: send 'Authorization: Bearer <GEMMTUNE_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


TokenDep = Depends(require_token)
