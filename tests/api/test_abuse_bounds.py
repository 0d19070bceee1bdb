"""What one uploader or slow client can cost the server, bounded: the bytes of a results page
whatever the rows carry, and connections whose bodies never arrive, which are answered 408 and
closed however many come at once."""

from __future__ import annotations

import selectors
import socket
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import TRUSTED, make_app, seeded_sqlite_app, serving
from tests.api.test_results import upload

pytestmark = pytest.mark.faults

AUTH = {"Authorization": f"Bearer {TRUSTED}"}
PAGE_BYTES = 64 * 1024
PROVENANCE_BOUND = 16 * 1024  # tuner.core.provenance's bound on one provenance, as JSON
ENVELOPE_BYTES = 200  # a page's own fields around its items (total, limit, next_cursor...)


def heavy_upload(rows: int) -> dict[str, Any]:
    """``rows`` measurements, each with a provenance just under its bound."""
    body = upload(0.3)
    row = body["measurements"][0]
    filler = "x" * (PROVENANCE_BOUND - 64)
    body["measurements"] = [{**row, "provenance": {"log": filler, "n": i}} for i in range(rows)]
    return body


def test_a_results_page_of_heavy_rows_stays_within_its_bytes(seeded: str) -> None:
    """Rows that each carry a provenance at its bound end a page early, within the byte
    bound; following ``next_cursor`` still gives every row once."""
    app = make_app(seeded, max_page_bytes=PAGE_BYTES)
    try:
        with TestClient(app) as client:
            stored = client.post("/v1/results", json=heavy_upload(12), headers=AUTH)
            assert stored.status_code == 201, stored.text
            heavy = set(stored.json()["ids"])
            total = client.get("/v1/results", params={"limit": 1}).json()["total"]
            seen: list[int] = []
            pages = 0
            cursor: int | None = None
            while True:
                params: dict[str, Any] = {"limit": 1000}
                if cursor is not None:
                    params["cursor"] = cursor
                response = client.get("/v1/results", params=params)
                assert response.status_code == 200, response.text
                assert len(response.content) <= PAGE_BYTES + ENVELOPE_BYTES
                page = response.json()
                seen += [item["id"] for item in page["items"]]
                pages += 1
                cursor = page["next_cursor"]
                if cursor is None:
                    break
    finally:
        app.state.engine.dispose()
    assert pages > 1  # 12 heavy rows are about 190 KiB: no single page may hold them
    assert len(seen) == len(set(seen)) == total and heavy <= set(seen)


def test_a_page_holds_at_least_one_row_whatever_the_bound(seeded: str) -> None:
    app = make_app(seeded, max_page_bytes=1)
    try:
        with TestClient(app) as client:
            page = client.get("/v1/results", params={"limit": 5}).json()
    finally:
        app.state.engine.dispose()
    assert len(page["items"]) == 1 and page["next_cursor"] == page["items"][0]["id"]


def test_an_upload_of_more_rows_than_a_request_may_carry_is_refused(seeded: str) -> None:
    body = upload(0.3)
    body["measurements"] = body["measurements"][:1] * 1001
    app = make_app(seeded)
    try:
        with TestClient(app) as client:
            total = client.get("/v1/results").json()["total"]
            response = client.post("/v1/results", json=body, headers=AUTH)
            assert response.status_code == 422
            assert response.json()["detail"][0]["field"] == "measurements"
            assert client.get("/v1/results").json()["total"] == total
    finally:
        app.state.engine.dispose()


SLOW_CLIENTS = 100


def test_many_slow_bodies_at_once_are_each_answered_408_and_closed(tmp_path: Path) -> None:
    """Clients that announce a body and send part of it, all at once: each question is
    answered 408 and its connection closed by the server; uploads that keep sending a byte at
    a time are closed too (the timeout is on the whole body, not on a pause between bytes).
    Those may see a reset instead of an answer: the server closes with bytes of theirs
    unread."""
    with seeded_sqlite_app(tmp_path, body_timeout_s=0.5) as app, serving(app) as base:
        host, port = base.removeprefix("http://").split(":")
        ends = slow_clients(host, int(port), SLOW_CLIENTS)
    stalled = [answer for answer, trickling in ends if not trickling]
    assert len(ends) == SLOW_CLIENTS and len(stalled) == SLOW_CLIENTS // 2
    assert {answer.split(b" ", 2)[1] for answer in stalled} == {b"408"}
    # Two uploads are read at a time (GEMMTUNE_MAX_CONCURRENT_UPLOADS): the others wait for a
    # turn as long as a body may take, then get 503; every one is closed.
    shown = {answer.split(b" ", 2)[1] for answer, trickling in ends if trickling and answer}
    assert shown <= {b"408", b"503"}


QUESTION = "/v1/configs/best"
UPLOAD = "/v1/results"


def slow_head(path: str) -> bytes:
    """A request's head announcing a 1000-byte body, and its first byte."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TRUSTED}\r\nContent-Length: 1000\r\n\r\n{{"
    ).encode()


def slow_clients(host: str, port: int, clients: int) -> list[tuple[bytes, bool]]:
    """Open ``clients`` connections that each announce a 1000-byte body and send one byte of
    it: questions, and uploads that then send a byte per round. Returns, once the server has
    closed every one (all the while reading what it sends), what each received and whether
    it kept sending."""
    selector = selectors.DefaultSelector()
    received: dict[socket.socket, bytearray] = {}
    trickling: set[socket.socket] = set()
    for i in range(clients):
        sock = socket.create_connection((host, port), timeout=10)
        sock.sendall(slow_head(QUESTION if i % 2 == 0 else UPLOAD))
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        received[sock] = bytearray()
        if i % 2:
            trickling.add(sock)
    open_ones = set(received)
    rounds = 0
    while open_ones:
        rounds += 1
        assert rounds < 300, f"{len(open_ones)} connection(s) still open after 30 s"
        for key, _ in selector.select(timeout=0.1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""  # closed by the server with bytes of ours unread
            if chunk:
                received[sock] += chunk
            else:  # closed by the server
                selector.unregister(sock)
                open_ones.discard(sock)
        for sock in open_ones & trickling:
            with suppress(OSError):  # closed meanwhile: the next select reads the end
                sock.send(b" ")
    for sock in received:
        sock.close()
    return [(bytes(answer), sock in trickling) for sock, answer in received.items()]
