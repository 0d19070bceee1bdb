"""``gemmtune serve`` end to end: a real process, preloaded, answering on its port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.api.conftest import free_port
from tests.api.test_preload import small_results


def test_serve_preloads_prints_the_dashboard_url_and_answers(tmp_path: Path) -> None:
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
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        answer = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                answer = httpx.post(
                    f"{base}/v1/configs/best", json={"m": 4096, "n": 4096, "k": 4096}, timeout=2
                )
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert answer is not None, "server did not come up"
        assert answer.json()["source"] == "exact"
        assert httpx.get(f"{base}/dashboard", timeout=5).status_code == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert "preloaded 41 measurements" in out
    assert f"dashboard: http://127.0.0.1:{port}/dashboard" in out


def test_serve_with_a_bad_database_url_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from tuner.cli import main; main()", "serve", "--db", "nope://x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("gemmtune: error:") and "nope" in done.stderr
