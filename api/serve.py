"""The served app: built from the environment, preloaded when asked (``gemmtune serve``).

``uvicorn api.serve:app_from_environment --factory`` is what ``gemmtune serve`` runs; the
settings (``GEMMTUNE_DATABASE_URL``, ``GEMMTUNE_PRELOAD``, ...) come from the environment.
"""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from api.app import create_app
from api.preload import preload
from api.settings import Settings
from tuner.data import data_location


def app_from_environment() -> FastAPI:
    """The API on the environment's settings, preloaded first when ``GEMMTUNE_PRELOAD`` is set."""
    settings = Settings()
    app = create_app(settings)
    if settings.preload:
        folder = data_location().describe()
        print(f"preloading {folder} into {_safe(settings.database_url)} ...", flush=True)
        print(preload(app.state.sessions), flush=True)
    return app


def _safe(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "the database"
