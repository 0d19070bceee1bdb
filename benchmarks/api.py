"""Serving speed of POST /v1/configs/best with 100 000 stored measurements.

Builds a SQLite database (500 tuned shapes x 200 configs on one device), starts
``gemmtune serve`` in its own process, then loads it from this process:

1. wrk (Debian's ``wrk``), closed loop, 8 connections, 10 s: the most req/s, with p50/p99;
2. wrk paced near 1000 req/s (50 connections, each waiting 50 ms between requests through
   wrk's ``delay()``; a Python load generator could not keep up on 2 cores).

Requests mix exact, nearest and default answers. Usage: ``python benchmarks/api.py [--rate 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import insert

import storage

DEVICE = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
CONFIGS = [
    "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128",
    "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
]


def shapes(count: int) -> list[tuple[int, int, int]]:
    rng = random.Random(0)
    dims = [2**p for p in range(6, 15)] + [1000, 3000, 5000, 12288]
    found: set[tuple[int, int, int]] = set()
    while len(found) < count:
        found.add((rng.choice(dims), rng.choice(dims), rng.choice(dims)))
    return sorted(found)


def build(url: str, n_shapes: int = 500, per_shape: int = 200) -> None:
    """One best measurement per shape through record_measurement, the slower rest in bulk."""
    from tuner.families import parse_config

    engine = storage.make_engine(url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    rows = []
    with sessions.begin() as session:
        for i, (m, n, k) in enumerate(shapes(n_shapes)):
            name = CONFIGS[i % 2]
            params = parse_config(name).as_dict()
            best = storage.record_measurement(
                session,
                DEVICE,
                storage.ShapeIn(m, n, k),
                storage.MeasurementIn("warptile", name, params, ms=1.0, cublas_ms=1.1),
            )
            for j in range(per_shape - 1):
                rows.append(
                    {
                        "device_id": best.device_id,
                        "shape_id": best.shape_id,
                        "family": "warptile",
                        "config_name": name,
                        "params": params,
                        "status": "ok",
                        "ms": 1.5 + j,
                        "cublas_ms": 1.1,
                        "provenance": {},
                        "created_at": storage.models.utcnow(),
                    }
                )
        session.execute(insert(storage.Measurement), rows)
    engine.dispose()


def bodies(n: int) -> list[dict[str, int]]:
    rng = random.Random(1)
    tuned = shapes(500)
    out = []
    for i in range(n):
        if i % 3 == 0:
            m, nn, k = rng.choice(tuned)  # exact
        else:
            m, nn, k = (rng.randint(1, 20000) for _ in range(3))  # nearest
        out.append({"m": m, "n": nn, "k": k})
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_wrk(base: str, seconds: int, rate: int | None = None, connections: int = 8) -> str:
    """wrk against the endpoint; with ``rate``, each connection waits connections/rate
    seconds before each request (wrk's ``delay()``), which holds the total near ``rate``."""
    script = Path(tempfile.mkdtemp()) / "post.lua"
    lines = ", ".join(f"'{json.dumps(b)}'" for b in bodies(300))
    script.write_text(
        "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
        f"local bodies = {{{lines}}}\nlocal i = 0\n"
        "request = function()\n  i = i % #bodies + 1\n"
        "  return wrk.format(nil, '/v1/configs/best', nil, bodies[i])\nend\n"
        + (f"delay = function() return {connections * 1000 / rate:.3f} end\n" if rate else "")
    )
    done = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            str(script),
            f"{base}/v1/configs/best",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gemmtune-bench-"))
    url = f"sqlite:///{folder}/bench.db"
    t0 = time.perf_counter()
    build(url)
    print(f"built 100000 measurements in {time.perf_counter() - t0:.1f} s", flush=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
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
        env={**os.environ, "GEMMTUNE_CACHE_TTL_S": "2"},
    )
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        if not shutil.which("wrk"):
            raise SystemExit("needs wrk: apt-get install wrk")
        print("== closed loop, 8 connections: the most req/s ==", flush=True)
        print(run_wrk(base, args.seconds), flush=True)
        print(f"== paced near {args.rate} req/s, 50 connections ==", flush=True)
        print(run_wrk(base, args.seconds, rate=args.rate, connections=50), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
