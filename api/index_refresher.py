"""Keeps the app's best-config index current from a background task, so no request waits.

Every ``interval_s`` the task runs :meth:`tuner.answers.index.BestIndex.refresh` in a worker
thread (a fingerprint query, then only the rows that changed); the event loop that answers
``POST /v1/configs/best`` never reads the database. Writes through this app's own uploads are
merged at once by the upload itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI

from tuner.answers.index import BestIndex

# With a TTL of 0 ("no caching", as tests ask) the refresher still sleeps this long between
# reads, so it cannot take a core.
MIN_INTERVAL_S = 0.05

log = logging.getLogger(__name__)


async def keep_fresh(index: BestIndex) -> None:
    """Refresh ``index`` forever; a failure is logged and tried again next time (a database
    error never reaches here once a snapshot exists: the index keeps it and says stale)."""
    while True:
        await asyncio.sleep(max(index.interval_s, MIN_INTERVAL_S))
        try:
            await asyncio.to_thread(index.refresh)
        except Exception:
            log.exception("refreshing the best-config index failed; trying again")


@asynccontextmanager
async def refreshing(app: FastAPI) -> AsyncIterator[None]:
    """The app's lifespan: read the index once before serving, refresh it while serving."""
    index: BestIndex = app.state.index
    try:
        await asyncio.to_thread(index.refresh)
    except Exception:
        # An unreachable database at start: requests get 503 and /healthz says why; the
        # refresher keeps trying.
        log.exception("reading the best-config index at start failed")
    task = asyncio.create_task(keep_fresh(index))
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        # Closing every connection lets SQLite's last one write its write-ahead log into the
        # database: what a deleted -wal file held is kept by a clean stop.
        app.state.engine.dispose()
