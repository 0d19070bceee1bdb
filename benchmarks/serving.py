"""A ``gemmtune serve`` process for the scripts that load it over HTTP: api_latency.py and
dashboard.py."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(url: str, env: dict[str, str]) -> Iterator[str]:
    """``gemmtune serve`` on ``url`` (no preload) in its own process, with ``env`` added: its
    base URL once /healthz answers; stopped on leaving."""
    with server_process(url, env) as (_, base):
        yield base


@contextmanager
def server_process(
    url: str, env: dict[str, str], prefix: Sequence[str] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """:func:`served`, started under ``prefix`` (``taskset -c 0``, say): the process and its
    base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-c",
            "from tuner.cli import main; main()",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--no-preload",
        ],
        stdout=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base)
        yield server, base
    finally:
        server.terminate()
        server.wait(timeout=10)


def wait_until_ready(base: str, tries: int = 200) -> None:
    """Return once ``base``/healthz answers 200 (about 20 s at most)."""
    for _ in range(tries):
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"the server at {base} did not answer /healthz")


def run_steps(steps: Iterable[tuple[str, Callable[[], dict[str, Any]]]]) -> dict[str, Any]:
    """Each step's result by name, with the 1-minute load average before it (printed too)."""
    found: dict[str, Any] = {}
    for name, step in steps:
        load = os.getloadavg()[0]
        found[name] = {**step(), "loadavg_1min_before": round(load, 2)}
        print(name, found[name], flush=True)
    return found


def result_header(benchmark: str) -> dict[str, Any]:
    """What every result file of these benchmarks starts with: what, when, where, versions."""
    return {
        "benchmark": benchmark,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.node()}, {os.cpu_count()} cores shared with other agents",
        "versions": {"python": platform.python_version()},
    }
