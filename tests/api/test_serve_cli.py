"""``gemmtune serve`` end to end: a real process, preloaded, answering on its port."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import free_port
from tests.api.test_preload import small_results


def test_serve_says_what_it_does_until_ready_then_answers(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "GEMMTUNE_RESULTS_DIR": str(small_results(tmp_path / "results"))}
    cmd = [
        sys.executable,
        "-c",
        "from tuner.cli import main; main()",
        "serve",
        "--port",
        str(port),
        "--db",
        f"sqlite:///{tmp_path}/serve.db",
        "--preload",
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    said: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("ready:") for line in said):
            assert time.monotonic() < deadline and proc.poll() is None, f"never ready: {said}"
            with contextlib.suppress(queue.Empty):
                said.append(lines.get(timeout=0.5))
        # Once it says ready, it answers: no retries.
        base = f"http://127.0.0.1:{port}"
        answer = httpx.post(
            f"{base}/v1/configs/best", json={"m": 4096, "n": 4096, "k": 4096}, timeout=5
        )
        assert answer.json()["source"] == "exact"
        assert httpx.get(f"{base}/dashboard", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    steps = [
        next(i for i, line in enumerate(said) if line.startswith(start))
        for start in (
            "starting gemmtune serve",
            "preloading",
            "preloaded 41 measurements",
            "ready:",
        )
    ]
    assert steps == sorted(steps), said  # what it is doing, in order, until it answers
    assert f"dashboard: http://127.0.0.1:{port}/dashboard" in said[-1]


def test_serve_with_a_bad_database_url_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from tuner.cli import main; main()", "serve", "--db", "nope://x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("gemmtune: error:") and "nope" in done.stderr


def test_serve_runs_on_uvloop_and_httptools_and_falls_back_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from tuner.cli.serve import server_loop_options

    options = server_loop_options()
    assert options == {"loop": "uvloop", "http": "httptools", "access_log": False}

    async def app(scope: object, receive: object, send: object) -> None:  # never called
        raise AssertionError

    config = uvicorn.Config(app, **options)
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("uvloop", "httptools") else found(name, *a),
    )
    assert server_loop_options() == {"loop": "asyncio", "http": "h11", "access_log": False}
