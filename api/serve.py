"""``gemmtune serve``: preload if asked, print the dashboard URL, run uvicorn."""

from __future__ import annotations

import sys

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from api.preload import preload, results_dir
from api.settings import Settings


def serve(host: str, port: int, db: str | None, with_preload: bool) -> None:
    """Run the API in this process until interrupted (one uvicorn worker)."""
    import uvicorn

    from api.app import create_app

    settings = Settings(database_url=db) if db else Settings()
    app = create_app(settings)
    if with_preload:
        folder = results_dir()
        print(f"preloading {folder} into {_safe(settings.database_url)} ...", flush=True)
        count = preload(app.state.sessions, folder)
        print(
            f"preloaded {count} measurements"
            if count
            else "database already holds results; preload skipped",
            flush=True,
        )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    print(
        f"gemmtune API on http://{shown}:{port}/  dashboard: http://{shown}:{port}/dashboard  "
        f"docs: http://{shown}:{port}/docs",
        flush=True,
    )
    sys.stdout.flush()
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _safe(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "the database"
