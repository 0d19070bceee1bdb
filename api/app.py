"""The FastAPI application: ``create_app(settings)`` wires storage, the best-config index, routes.

Without arguments it reads settings from the environment (``gemmtune serve`` builds it so, through
:func:`api.serve.app_from_environment`); tests pass their own :class:`api.settings.Settings`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

import storage
from api.errors import (
    database_error_handler,
    http_error_handler,
    rejected_records_handler,
    storage_error_handler,
    uncomputed_layout_handler,
    unknown_device_handler,
    validation_handler,
)
from api.guards import RequestGuard
from api.index_refresher import refreshing
from api.routes import configs, dashboard, docs, health, results, studies
from api.settings import Settings
from api.study_cache import StudyCache
from api.tune_on_miss import MissQueue, draining
from api.upload_schema import with_upload_schemas
from tuner.answers.best import UncomputedLayoutError, UnknownDeviceError
from tuner.answers.index import BestIndex
from tuner.data.intake import RejectedRecords

STATIC = Path(__file__).resolve().parent / "static"


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Keep the best-config index fresh, and write misses to the tuning queue, while serving."""
    async with refreshing(app), draining(app):
        yield


def create_app(settings: Settings | None = None) -> FastAPI:
    """An app on ``settings.database_url``; an empty database is migrated, an old one refused."""
    settings = settings or Settings()
    engine = storage.open_engine(settings.database_url, pool=settings.pool())
    sessions = storage.make_session_factory(engine)

    app = FastAPI(
        title="gemmtune",
        version="0.1.0",
        summary="Best GEMM kernel configs per shape and device, tuned on real GPUs.",
        docs_url=None,  # api.routes.docs serves both on the package's own assets
        redoc_url=None,
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.index = BestIndex(sessions, ttl_s=settings.cache_ttl_s)
    app.state.database_file = storage.SqliteFile.of(engine)
    if app.state.database_file is not None:
        app.state.database_file.guard(engine)
    app.state.study_cache = StudyCache()
    app.state.misses = MissQueue(settings, sessions)
    app.add_exception_handler(RequestValidationError, validation_handler)
    app.add_exception_handler(UnknownDeviceError, unknown_device_handler)
    app.add_exception_handler(UncomputedLayoutError, uncomputed_layout_handler)
    app.add_exception_handler(RejectedRecords, rejected_records_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)
    app.add_exception_handler(SQLAlchemyError, database_error_handler)
    app.add_exception_handler(storage.StorageError, storage_error_handler)
    routers = [module.router for module in (configs, results, studies, health, dashboard, docs)]
    for router in routers:
        app.include_router(router)
    routes = [route for router in routers for route in router.routes]
    app.add_middleware(RequestGuard, app=app, routes=routes)
    app.mount("/static", StaticFiles(directory=STATIC, check_dir=True), name="static")

    app.openapi = with_upload_schemas(app)  # type: ignore[method-assign]

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/dashboard")

    return app
