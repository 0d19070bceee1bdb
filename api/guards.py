"""Checks made on a request before any of its body is read: size, token, NUL characters,
method.

FastAPI reads and parses a body before it resolves a route's dependencies, so a token checked
by a dependency comes too late: a 300 MB upload without a token was read whole (16 s, 2 GB)
before its 401. :class:`RequestGuard` is plain ASGI middleware in front of the routes:

* a body larger than ``Settings.max_body_bytes`` is refused with 413, from its
  ``Content-Length`` before a byte is read, and while streaming when it has none (or lies);
* a route that needs a token (one depending on :func:`api.deps.require_token`) gets its
  ``Authorization`` header checked first, with the same function the dependency uses;
* a NUL character in a query or path parameter is a 422 naming the parameter: PostgreSQL
  cannot compare text with NUL, and the driver's error used to end in a 500;
* a method the path does not take is a 405 whose ``Allow`` names every method it takes;
* a body must arrive whole within ``Settings.body_timeout_s`` (408 otherwise, and the connection
  is closed): a client sending a byte a second held a connection and its buffer for as long as
  it liked (300 such connections all stayed open);
* at most ``Settings.max_concurrent_uploads`` uploads are read and stored at once; one more
  waits up to ``body_timeout_s`` for a turn, then gets 503. Storing one 4 MiB upload raised the
  server's peak memory by 24 MiB, and eight at once by 168 MiB with a turn each against 58 MiB
  with two (``benchmarks/results/upload-memory-2026-11-28.json``): with the body limit, the
  turns bound what uploads can make the server hold (docs/service.md).

A body is read here, whole, before the route runs, and handed to it unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, HTTPException, status
from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.deps import bearer_trust, require_token
from api.settings import Settings

NUL = "\x00"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class RequestGuard:
    """ASGI middleware for ``app`` (its settings), whose API routes are ``routes``."""

    def __init__(self, asgi: ASGIApp, app: FastAPI, routes: Iterable[BaseRoute]) -> None:
        self.asgi = asgi
        self.app = app
        self.routes = tuple(route for route in routes if isinstance(route, APIRoute))
        self._upload_turns: asyncio.Semaphore | None = None  # made on the server's loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.asgi(scope, receive, send)
            return
        settings: Settings = self.app.state.settings
        refusal = self._refusal(scope, settings)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] not in BODY_METHODS:
            await self.asgi(scope, _limited(receive, settings.max_body_bytes), send)
            return
        route, _, _ = self._route(scope)
        if route is None or not _needs_token(route):
            await self._with_body(scope, receive, send, settings)
            return
        turns = self._turns(settings)
        try:
            await asyncio.wait_for(turns.acquire(), settings.body_timeout_s)
        except TimeoutError:
            await busy(settings)(scope, receive, send)
            return
        try:
            await self._with_body(scope, receive, send, settings)
        finally:
            turns.release()

    async def _with_body(
        self, scope: Scope, receive: Receive, send: Send, settings: Settings
    ) -> None:
        """Read the whole body within the deadline and the size limit, then run the route."""
        body, refusal = await read_body(receive, settings.max_body_bytes, settings.body_timeout_s)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if body is None:
            return  # the client went away: nobody to answer
        await self.asgi(scope, _replayed(body, receive), send)

    def _turns(self, settings: Settings) -> asyncio.Semaphore:
        if self._upload_turns is None:
            self._upload_turns = asyncio.Semaphore(settings.max_concurrent_uploads)
        return self._upload_turns

    def _refusal(self, scope: Scope, settings: Settings) -> JSONResponse | None:
        length = _content_length(scope)
        if length is not None and length > settings.max_body_bytes:
            return too_large(settings.max_body_bytes, f"Content-Length is {length}")
        route, params, allowed = self._route(scope)
        if route is None and allowed:
            # Starlette would name the methods of the first route on the path only.
            return JSONResponse(
                {"detail": f"method {scope['method']} not allowed; use {', '.join(allowed)}"},
                status_code=status.HTTP_405_METHOD_NOT_ALLOWED,
                headers={"Allow": ", ".join(allowed)},
            )
        nul = nul_parameters(scope, params)
        if nul:
            return nul_response(nul)
        if route is not None and _needs_token(route):
            try:
                bearer_trust(settings, _header(scope, b"authorization"))
            except HTTPException as exc:
                return JSONResponse(
                    {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
                )
        return None

    def _route(self, scope: Scope) -> tuple[APIRoute | None, dict[str, Any], list[str]]:
        """The route that will answer and its path parameters; else the methods the path
        takes (none: no such path)."""
        allowed: set[str] = set()
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                return route, dict(child.get("path_params", {})), []
            if match is Match.PARTIAL:
                allowed |= route.methods or set()
        return None, {}, sorted(allowed)


def _needs_token(route: APIRoute) -> bool:
    return any(dep.call is require_token for dep in route.dependant.dependencies)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _content_length(scope: Scope) -> int | None:
    text = _header(scope, b"content-length")
    return int(text) if text is not None and text.strip().isdigit() else None


class BodyTooLarge(HTTPException):
    """Raised while a body streams in past the limit; FastAPI answers it like any 413."""


def too_large(limit: int, seen: str) -> JSONResponse:
    return JSONResponse(
        {"detail": _too_large_message(limit, seen)},
        status_code=status.HTTP_413_CONTENT_TOO_LARGE,
        headers={"Connection": "close"},  # the body is left unread: nothing more to serve on it
    )


def _too_large_message(limit: int, seen: str) -> str:
    return (
        f"request body too large: at most {limit} bytes (GEMMTUNE_MAX_BODY_BYTES), {seen}; "
        "send fewer measurements per request"
    )


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises 413 once more than ``limit`` body bytes arrived."""
    seen = 0

    async def counting() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(
                    status.HTTP_413_CONTENT_TOO_LARGE,
                    _too_large_message(limit, f"got more than {limit}"),
                )
        return message

    return counting


async def read_body(
    receive: Receive, limit: int, timeout_s: float
) -> tuple[bytes | None, JSONResponse | None]:
    """The request's body, or why it is refused (413 past ``limit`` bytes, 408 when it is not
    whole within ``timeout_s``); (None, None) when the client disconnected."""
    parts: list[bytes] = []
    seen = 0
    # One deadline for the whole body, without a task per message (asyncio.wait_for makes
    # one each time: a measurable share of an answer's cost at 1000 req/s).
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None, None
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > limit:
                    return None, too_large(limit, f"got more than {limit}")
                parts.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(parts), None
    except TimeoutError:
        return None, too_slow(timeout_s, seen)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` for a route whose body was read already: the body once, then the
    connection's own messages (its disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def too_slow(timeout_s: float, seen: int) -> JSONResponse:
    return JSONResponse(
        {
            "detail": f"request body not received whole within {timeout_s:g} s "
            f"(GEMMTUNE_BODY_TIMEOUT_S; {seen} bytes came); send the body at once"
        },
        status_code=status.HTTP_408_REQUEST_TIMEOUT,
        headers={"Connection": "close"},
    )


def busy(settings: Settings) -> JSONResponse:
    return JSONResponse(
        {
            "detail": f"{settings.max_concurrent_uploads} uploads are being stored already "
            "(GEMMTUNE_MAX_CONCURRENT_UPLOADS) and none finished within "
            f"{settings.body_timeout_s:g} s; retry"
        },
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        # The body is left unread, and a slow sender would otherwise keep the connection (and
        # the server reading its bytes) as long as it likes.
        headers={"Retry-After": "1", "Connection": "close"},
    )


def nul_parameters(scope: Scope, path_params: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, name) of every query or path parameter with a NUL character."""
    query = scope.get("query_string", b"").decode("latin-1")
    pairs = parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="replace")
    found = [("query", name) for name, value in pairs if NUL in name or NUL in value]
    found += [("path", name) for name, value in path_params.items() if NUL in str(value)]
    if NUL in scope.get("path", "") and not any(where == "path" for where, _ in found):
        found.append(("path", "path"))
    return found


def nul_response(found: Iterable[tuple[str, str]]) -> JSONResponse:
    detail = [
        {
            "loc": [where, name],
            "field": name,
            "msg": f"`{name}` must not contain NUL characters",
            "type": "nul_character",
        }
        for where, name in found
    ]
    return JSONResponse(
        jsonable_encoder({"detail": detail}),
        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT,
    )
