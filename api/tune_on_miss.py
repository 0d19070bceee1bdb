"""Tune on miss: shapes the API could answer only from far away (``far``) or not at all
(``default``) go to the tuning queue, where a running ``gemmtune worker`` tunes them, and the
next answer for them is ``exact``.

Off unless ``GEMMTUNE_TUNE_ON_MISS=1``. The answer never waits for the queue: a miss is noted in
memory (a set lookup and a deque append) and a background task writes the notes to the database
(``storage.tune_queue.enqueue``: once per problem, within the queue's limit; a full queue or a
database error is logged and the notes dropped). Notes are rate-limited per server (a token
bucket of ``tune_on_miss_per_minute``), and when the server has a token only callers that send it
leave any.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.orm import Session, sessionmaker

from api.schemas import BestRequest
from api.settings import Settings
from storage import tune_queue
from storage.tune_queue import Problem
from tuner.core.shape import Shape

MISSES = ("far", "default")
DRAIN_S = 0.2  # how often noted misses are written to the queue
PENDING_LIMIT = 1024  # notes waiting for the writer at most; more are dropped
SEEN_LIMIT = 100_000  # problems remembered as already queued by this server

log = logging.getLogger(__name__)


class MissQueue:
    """Misses noted by requests, written to the tuning queue by :meth:`drain`."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session]) -> None:
        self.settings = settings
        self.sessions = sessions
        self.pending: collections.deque[Problem] = collections.deque(maxlen=PENDING_LIMIT)
        self.seen: set[str] = set()
        self.tokens = float(settings.tune_on_miss_per_minute)
        self.refilled = time.monotonic()
        self.lock = threading.Lock()

    def allowed(self, authorization: str | None) -> bool:
        """Whether this caller's misses are noted: on, and, if the server has tokens, sent one
        of them."""
        if not self.settings.tune_on_miss:
            return False
        tokens = [t for t in (self.settings.api_token, self.settings.trusted_token) if t]
        if not tokens:
            return True
        scheme, given = get_authorization_scheme_param(authorization)
        given = given if scheme.lower() == "bearer" else ""
        # Each compared in constant time, as uploads compare theirs.
        matches = [secrets.compare_digest(given.encode(), t.encode()) for t in tokens]
        return bool(given) and any(matches)

    def note_answer(self, body: BestRequest, source: str, authorization: str | None) -> bool:
        """Note the question ``body`` if its answer's ``source`` is a miss this caller may
        report; whether it was noted. Never raises: the answer is already made."""
        if source not in MISSES or not self.allowed(authorization):
            return False
        try:
            shape = Shape(body.m, body.n, body.k, body.dtype, body.layout, body.out_dtype)
            return self.note(Problem(shape, body.accuracy, body.device or ""))
        except Exception:  # e.g. a device name too long for the queue's key
            log.exception("tune on miss: cannot queue %s", body)
            return False

    def note(self, problem: Problem) -> bool:
        """Remember ``problem`` for the writer unless it was noted before or the rate is spent;
        whether it was. Cheap, and never raises for a full queue: it is called on the answer's
        path."""
        with self.lock:
            if problem.key in self.seen:
                return False
            now = time.monotonic()
            per_minute = float(self.settings.tune_on_miss_per_minute)
            self.tokens = min(per_minute, self.tokens + (now - self.refilled) * per_minute / 60)
            self.refilled = now
            if self.tokens < 1.0:
                return False
            self.tokens -= 1.0
            if len(self.seen) >= SEEN_LIMIT:
                self.seen.clear()
            self.seen.add(problem.key)
            self.pending.append(problem)
            return True

    def drain(self) -> int:
        """Write the noted misses to the queue (each problem once); how many were new. A full
        queue or a failing database drops them, logged: tuning on miss is a courtesy."""
        with self.lock:
            problems = list(self.pending)
            self.pending.clear()
        if not problems:
            return 0
        try:
            with self.sessions.begin() as session:
                return tune_queue.enqueue(
                    session, problems, source="api", limit=self.settings.queue_limit
                )
        except tune_queue.QueueFull as exc:
            log.warning("tune on miss: %s (%d shapes dropped)", exc, len(problems))
        except Exception:
            log.exception("tune on miss: enqueuing %d shapes failed; dropped", len(problems))
        with self.lock:  # dropped: a later miss may note them again
            self.seen.difference_update(p.key for p in problems)
        return 0


async def keep_draining(misses: MissQueue) -> None:
    while True:
        await asyncio.sleep(DRAIN_S)
        if misses.pending:
            await asyncio.to_thread(misses.drain)


@asynccontextmanager
async def draining(app: FastAPI) -> AsyncIterator[None]:
    """Part of the app's lifespan: write noted misses while serving, and what is left at the end."""
    misses: MissQueue = app.state.misses
    task = asyncio.create_task(keep_draining(misses)) if misses.settings.tune_on_miss else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            await asyncio.to_thread(misses.drain)
