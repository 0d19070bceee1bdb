"""Refused before the body is read: bodies over the limit (413), uploads without a token (401);
and NUL characters in query or path parameters (422), on both backends."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.settings import Settings
from tests.api.conftest import TOKEN, TRUSTED, seeded_sqlite_app, serving
from tests.api.test_results import upload

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

LIMIT = 4096


@pytest.fixture
def small_limit_url(tmp_path: Path) -> Iterator[str]:
    """A live server on a seeded SQLite file that takes bodies of at most LIMIT bytes."""
    with seeded_sqlite_app(tmp_path, max_body_bytes=LIMIT) as app, serving(app) as base:
        yield base


def raw_request(base: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send a request's head (and maybe part of its body) and read the answer: the server
    must answer without waiting for the rest of the body."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer.split(b"\r\n\r\n", 1)[1]


def head(path: str, length: int | None, *extra: str) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: test", "Content-Type: application/json", *extra]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return "\r\n".join(lines) + "\r\n"


@pytest.mark.parametrize("path", ["/v1/results", "/v1/configs/best"])
def test_a_declared_length_over_the_limit_is_413_before_any_byte(
    small_limit_url: str, path: str
) -> None:
    # 300 MB announced, nothing sent: the answer cannot have waited for the body.
    auth = f"Authorization: Bearer {TOKEN}"
    status, body = raw_request(small_limit_url, head(path, 300_000_000, auth))
    assert status == 413
    assert b"at most 4096 bytes" in body and b"GEMMTUNE_MAX_BODY_BYTES" in body


def test_a_streamed_body_without_a_length_is_cut_at_the_limit(small_limit_url: str) -> None:
    chunk = b"[" + b" " * 1000
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(6))
    status, body = raw_request(
        small_limit_url,
        head("/v1/configs/best", None, "Transfer-Encoding: chunked"),
        chunked,  # 6000 bytes and no final chunk: the server stops reading at 4096
    )
    assert status == 413 and b"at most 4096 bytes" in body


def test_an_upload_without_a_token_is_401_before_its_body(small_limit_url: str) -> None:
    status, body = raw_request(small_limit_url, head("/v1/results", 4000))
    assert status == 401 and b"bearer token" in body


def test_a_body_within_the_limit_is_served(small_limit_url: str) -> None:
    import httpx

    answer = httpx.post(f"{small_limit_url}/v1/configs/best", json={"m": 8, "n": 8, "k": 8})
    assert answer.status_code == 200
    auth = {"Authorization": f"Bearer {TRUSTED}"}
    stored = httpx.post(f"{small_limit_url}/v1/results", json=upload(0.3), headers=auth)
    assert stored.status_code == 201, stored.text


def test_the_limit_is_a_setting_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMMTUNE_MAX_BODY_BYTES", "1234")
    assert Settings().max_body_bytes == 1234
    monkeypatch.delenv("GEMMTUNE_MAX_BODY_BYTES")
    assert Settings().max_body_bytes == 4 * 2**20


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/v1/results", {"device": "H100\x00"}, "device"),
        ("/v1/results", {"family": "\x00"}, "family"),
        ("/v1/studies/a%00b", {}, "study"),
        ("/dashboard/studies/a%00b", {}, "study"),
    ],
)
def test_a_nul_in_a_parameter_is_422_naming_it_and_harms_nothing(
    client: TestClient, path: str, params: dict[str, str], name: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == name and error["msg"] == f"`{name}` must not contain NUL characters"
    # The connection and the database are fine afterwards (PostgreSQL used to reset it).
    assert client.get("/v1/results", params={"device": "NVIDIA H100 80GB HBM3"}).status_code == 200
    assert client.get("/healthz").status_code == 200


def test_a_method_the_path_does_not_take_names_every_one_it_does(client: TestClient) -> None:
    response = client.request("PUT", "/v1/results")
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) >= {"GET", "POST"}


def test_a_body_that_does_not_arrive_in_time_is_408_and_the_connection_closed(
    tmp_path: Path,
) -> None:
    """A client that announces a body and sends a little of it is answered 408 once the body
    timeout passes, and the server closes the connection (it held one and a buffer forever)."""
    with (
        seeded_sqlite_app(tmp_path, body_timeout_s=0.5) as app,
        serving(app) as base,
        socket.create_connection(tuple_of(base), timeout=10) as sock,
    ):
        sock.sendall(head("/v1/configs/best", 100).encode() + b"\r\n" + b'{"m": 8')
        answer = b""
        while chunk := sock.recv(65536):  # the server closes: recv returns b""
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"GEMMTUNE_BODY_TIMEOUT_S" in answer and b"7 bytes came" in answer


def tuple_of(base: str) -> tuple[str, int]:
    host, port = base.removeprefix("http://").split(":")
    return host, int(port)


def test_uploads_beyond_the_concurrent_limit_wait_then_get_503(tmp_path: Path) -> None:
    """With one upload turn, an upload arriving while another is being stored waits for the
    body timeout, then gets 503 with Retry-After; the first is stored; questions never wait."""
    import asyncio

    from api.guards import RequestGuard

    with seeded_sqlite_app(tmp_path, max_concurrent_uploads=1, body_timeout_s=0.3) as app:
        release = asyncio.Event()
        reached: list[str] = []

        async def slow_route(scope: Any, receive: Any, send: Any) -> None:
            message = await receive()
            reached.append(scope["path"])
            if scope["path"] == "/v1/results" and b"first" in message["body"]:
                await release.wait()
            await send({"type": "http.response.start", "status": 201, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})

        (installed,) = [m for m in app.user_middleware if m.cls is RequestGuard]
        guard = RequestGuard(slow_route, app, installed.kwargs["routes"])

        async def call(path: str, body: bytes) -> tuple[int, dict[bytes, bytes]]:
            sent: list[Any] = []
            bodies = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive() -> Any:
                return bodies.pop() if bodies else {"type": "http.disconnect"}

            async def send(message: Any) -> None:
                sent.append(message)

            auth = (b"authorization", f"Bearer {TRUSTED}".encode())
            scope = {
                "type": "http", "method": "POST", "path": path, "headers": [auth],
                "query_string": b"", "root_path": "",
            }  # fmt: skip
            await guard(scope, receive, send)
            return sent[0]["status"], dict(sent[0]["headers"])

        async def scenario() -> tuple[Any, ...]:
            first = asyncio.create_task(call("/v1/results", b'{"first": 1}'))
            await asyncio.sleep(0.05)  # the first holds the only turn
            second = await call("/v1/results", b'{"second": 2}')
            question = await call("/v1/configs/best", b'{"m": 8, "n": 8, "k": 8}')
            release.set()
            return second, question, await first

        (second, headers), (question, _), (first, _) = asyncio.run(scenario())
    assert second == 503 and headers[b"retry-after"] == b"1"
    assert question == 201  # the fake route's answer: a question took no upload turn
    assert first == 201
    assert reached == ["/v1/results", "/v1/configs/best"]  # the second upload never ran
