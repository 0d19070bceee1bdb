"""``gemmtune serve``: the HTTP API and dashboard.

The server is ``api.serve:app_from_environment``, which uvicorn imports by name: the tuner
package never imports the web package. The database is opened here first, so a bad URL ends
with one line and exit code 2 before uvicorn starts.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

import storage
from tuner.cli._common import DbOpt, out


def serve(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8000,
    db: DbOpt = None,
    preload: Annotated[
        bool,
        typer.Option(help="fill an empty database with the committed results first"),
    ] = True,
) -> None:
    """Run the HTTP API and dashboard (FastAPI + uvicorn) on a results database."""
    import uvicorn

    url = storage.database_url(db)
    storage.open_engine(url).dispose()  # one-line errors for a bad database, before uvicorn
    os.environ["GEMMTUNE_DATABASE_URL"] = url
    os.environ["GEMMTUNE_PRELOAD"] = "1" if preload else "0"
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    out.print(
        f"gemmtune API on http://{shown}:{port}/  dashboard: http://{shown}:{port}/dashboard  "
        f"docs: http://{shown}:{port}/docs",
        soft_wrap=True,
    )
    uvicorn.run(
        "api.serve:app_from_environment", factory=True, host=host, port=port, log_level="warning"
    )
