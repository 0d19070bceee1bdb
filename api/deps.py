"""Dependencies of the routes: settings, database sessions, the best-config index, the study
cache, the token.

State lives on ``app.state`` (set by :func:`api.app.create_app`), so every test builds its own app
on its own database without globals.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.orm import Session, sessionmaker

import storage
from api.settings import Settings
from api.study_cache import StudyCache
from tuner.answers.index import BestIndex


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


async def get_study_cache(request: Request) -> StudyCache:
    cache: StudyCache = request.app.state.study_cache
    return cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
IndexDep = Annotated[BestIndex, Depends(get_index)]
StudyCacheDep = Annotated[StudyCache, Depends(get_study_cache)]

_bearer = HTTPBearer(
    auto_error=False, description="GEMMTUNE_TRUSTED_TOKEN or GEMMTUNE_API_TOKEN of the server"
)


def bearer_trust(settings: Settings, authorization: str | None) -> bool:
    """Whether an ``Authorization`` header may upload as trusted (True) or untrusted (False).

    Raises:
        HTTPException: 403 when the server takes no uploads, 401 for a missing or wrong token.
    """
    if not settings.api_token and not settings.trusted_token:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "uploads are disabled on this server: start it with GEMMTUNE_API_TOKEN or "
            "GEMMTUNE_TRUSTED_TOKEN set",
        )
    scheme, given = get_authorization_scheme_param(authorization)
    given = given if scheme.lower() == "bearer" else ""
    # Both compared in constant time, whatever the first answers.
    trusted = _same(given, settings.trusted_token)
    plain = _same(given, settings.api_token)
    if not (trusted or plain):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong bearer token: send 'Authorization: Bearer <GEMMTUNE_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return trusted


def _same(given: str, token: str | None) -> bool:
    return (
        bool(given)
        and bool(token)
        and secrets.compare_digest(given.encode(), (token or "").encode())
    )


def require_token(
    settings: SettingsDep,
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> bool:
    """Uploads need ``Authorization: Bearer <token>``; the answer is whether it is trusted.

    :class:`api.guards.RequestGuard` has checked the same before the body was read; this
    dependency documents the scheme in OpenAPI and hands the route the trust.
    """
    return bearer_trust(settings, request.headers.get("authorization"))


TrustDep = Annotated[bool, Depends(require_token)]


def database_file_problem(request: Request) -> str | None:
    identity: storage.SqliteFile | None = request.app.state.database_file
    return None if identity is None else identity.problem()
