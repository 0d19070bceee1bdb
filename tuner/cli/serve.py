"""``gemmtune serve``: the HTTP API and dashboard.

The server is ``api.serve:app_from_environment``, which uvicorn imports by name: the tuner
package never imports the web package. The database is opened here first, so a bad URL ends
with one line and exit code 2 before uvicorn starts.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Annotated, Any

import typer

import storage
from tuner.cli._common import DbOpt, out

READY_POLL_S = 0.05  # how often the start-up watcher looks whether uvicorn is serving


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
    where = f"http://{shown}:{port}/"
    # The app is built (and an empty database preloaded, some seconds) before uvicorn listens:
    # say so, and print the address to use only once it answers.
    out.print(
        f"starting gemmtune serve on {where} (the API answers once it says 'ready') ...",
        soft_wrap=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            "api.serve:app_from_environment",
            factory=True,
            host=host,
            port=port,
            log_level="warning",
            **server_loop_options(),
        )
    )
    ready = f"ready: gemmtune API on {where}  dashboard: {where}dashboard  docs: {where}docs"
    threading.Thread(target=_announce_when_started, args=(server, ready), daemon=True).start()
    server.run()


def server_loop_options() -> dict[str, Any]:
    """uvicorn's event loop and HTTP parser: uvloop and httptools where installed (they are
    dependencies; a platform without uvloop falls back to asyncio), and no access log (the
    server logs warnings only)."""
    import importlib.util

    fast_loop = importlib.util.find_spec("uvloop") is not None
    fast_http = importlib.util.find_spec("httptools") is not None
    return {
        "loop": "uvloop" if fast_loop else "asyncio",
        "http": "httptools" if fast_http else "h11",
        "access_log": False,
    }


def _announce_when_started(server: Any, line: str) -> None:
    """Print ``line`` when uvicorn has bound its socket and runs the app (``Server.started``);
    nothing if it stops first (a port in use ends with uvicorn's own error)."""
    while not server.should_exit:
        if server.started:
            out.print(line, soft_wrap=True)
            return
        time.sleep(READY_POLL_S)
