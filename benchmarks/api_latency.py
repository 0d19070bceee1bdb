"""Serving speed of POST /v1/configs/best with 100 000 stored measurements, with and without
writers, and the paging time of GET /v1/results.

Builds a SQLite database (500 tuned shapes x 200 configs on one device), starts
``gemmtune serve`` in its own process, then loads it from this process:

1. wrk (Debian's ``wrk``), closed loop, 8 connections: the most req/s, with p50/p99;
2. wrk paced near 1000 req/s (50 connections, each waiting 50 ms between requests through
   wrk's ``delay()``; a Python load generator could not keep up on 2 cores), no writer;
3. the same while a replay study writes to the same SQLite file from another process
   (``gemmtune tune --evaluator replay``, one shape and family set after another) and one
   upload a second (``POST /v1/results``, a new best for a tuned shape) arrives;
4. GET /v1/results: the first page, a page 50 000 rows in by ``offset`` and by ``cursor``, and
   ten pages walked by cursor, each timed from this process (median of 5).

Requests mix exact, nearest and default answers. Usage:
``python benchmarks/api_latency.py [--rate 1000] [--seconds 10] [--out FILE.json]`` (``--shapes 20
--per-shape 5 --seconds 2 --rate 100``: a smoke run of every step in a few seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from serving import result_header, run_steps, served
from sqlalchemy import insert

import storage
from tuner.kernels.families import parse_config

DEVICE = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
CONFIGS = [
    "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128",
    "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
]
PARAMS = [parse_config(name).as_dict() for name in CONFIGS]


def upload_body(m: int, n: int, k: int, ms: float) -> dict[str, Any]:
    """An upload body: one new measurement of a tuned shape (the writers' second writer)."""
    return {
        "device": {"name": DEVICE.name, "arch": DEVICE.arch, "sm_count": DEVICE.sm_count},
        "shape": {"m": m, "n": n, "k": k},
        "measurements": [
            {
                "family": "warptile",
                "config_name": CONFIGS[1],
                "params": PARAMS[1],
                "status": "ok",
                "ms": ms,
                "cublas_ms": 1.1,
            }
        ],
    }


def shapes(count: int) -> list[tuple[int, int, int]]:
    rng = random.Random(0)
    dims = [2**p for p in range(6, 15)] + [1000, 3000, 5000, 12288]
    found: set[tuple[int, int, int]] = set()
    while len(found) < count:
        found.add((rng.choice(dims), rng.choice(dims), rng.choice(dims)))
    return sorted(found)


def build(url: str, n_shapes: int = 500, per_shape: int = 200) -> None:
    """One best measurement per shape through record_measurement, the slower rest in bulk."""
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    rows = []
    with sessions.begin() as session:
        for i, (m, n, k) in enumerate(shapes(n_shapes)):
            name = CONFIGS[i % 2]
            params = PARAMS[i % 2]
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


def bodies(n: int, n_shapes: int) -> list[dict[str, int]]:
    rng = random.Random(1)
    tuned = shapes(n_shapes)
    out = []
    for i in range(n):
        if i % 3 == 0:
            m, nn, k = rng.choice(tuned)  # exact
        else:
            m, nn, k = (rng.randint(1, 20000) for _ in range(3))  # nearest
        out.append({"m": m, "n": nn, "k": k})
    return out


def run_wrk(
    base: str, seconds: int, n_shapes: int, rate: int | None = None, connections: int = 8
) -> str:
    """wrk against the endpoint; with ``rate``, each connection waits connections/rate
    seconds before each request (wrk's ``delay()``), which holds the total near ``rate``."""
    script = Path(tempfile.mkdtemp()) / "post.lua"
    lines = ", ".join(f"'{json.dumps(b)}'" for b in bodies(300, n_shapes))
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


TOKEN = "bench-token"
WRITER = """
while true; do
  for shape in 4096x4096x4096 1000x1000x1000 128x4096x4096; do
    for family in warptile pipelined; do
      "$0" -c 'from tuner.cli import main; main()' tune --shape $shape --evaluator replay \
        --sampler exhaustive -f $family --db "$1" --warm-start 0 > /dev/null 2>&1
    done
  done
done
"""


def parse_wrk(text: str) -> dict[str, float]:
    """req/s and latency percentiles (ms) from wrk's ``--latency`` output."""
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    found: dict[str, float] = {}
    for pct, value, unit in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s)$", text, re.M):
        found[f"p{pct}_ms"] = round(float(value) * scale[unit], 3)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    found["req_s"] = float(rate.group(1)) if rate else 0.0
    return found


def uploads(base: str, n_shapes: int, stop: threading.Event, sent: list[int]) -> None:
    """One upload a second: a faster measurement for a tuned shape (a new best each time)."""
    rng = random.Random(2)
    tuned = shapes(n_shapes)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        while not stop.wait(1.0):
            m, n, k = rng.choice(tuned)
            ms = 0.9 - 0.0001 * len(sent)
            body = upload_body(m, n, k, ms)
            sent.append(client.post("/v1/results", json=body, timeout=30).status_code)


def paging(base: str, rows: int) -> dict[str, float]:
    """Milliseconds per GET /v1/results page (median of 5); the "50000" pages are half-way
    through smaller databases (``--shapes``, ``--per-shape``)."""
    middle = min(50000, rows // 2)

    def timed(params: dict[str, int | str]) -> float:
        times = []
        for _ in range(5):
            began = time.perf_counter()
            httpx.get(f"{base}/v1/results", params=params, timeout=60).raise_for_status()
            times.append((time.perf_counter() - began) * 1e3)
        return round(statistics.median(times), 2)

    first = httpx.get(f"{base}/v1/results", params={"limit": 100}).json()
    top = first["items"][0]["id"]
    walk = []
    cursor = None
    for _ in range(10):
        began = time.perf_counter()
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        cursor = httpx.get(f"{base}/v1/results", params=params, timeout=60).json()["next_cursor"]
        walk.append((time.perf_counter() - began) * 1e3)
    return {
        "first_page_ms": timed({"limit": 100}),
        "offset_50000_ms": timed({"limit": 100, "offset": middle}),
        "cursor_50000_ms": timed({"limit": 100, "cursor": top - middle}),
        "cursor_walk_median_ms": round(statistics.median(walk), 2),
        "filtered_family_ms": timed({"limit": 100, "family": "warptile"}),
    }


def under_writes(base: str, url: str, seconds: int, rate: int, n_shapes: int) -> dict[str, object]:
    """The paced load while a study writes and one upload a second arrives."""
    writer = subprocess.Popen(["bash", "-c", WRITER, sys.executable, url], start_new_session=True)
    stop = threading.Event()
    sent: list[int] = []
    uploader = threading.Thread(target=uploads, args=(base, n_shapes, stop, sent))
    try:
        time.sleep(5)  # the study is under way
        uploader.start()
        paced = parse_wrk(run_wrk(base, seconds, n_shapes, rate=rate, connections=50))
    finally:
        stop.set()
        if uploader.is_alive():
            uploader.join()
        os.killpg(writer.pid, 15)
        writer.wait()
    with storage.open_database(url)() as session:
        studies = storage.count_measurements(session)
    return {**paced, "uploads": len(sent), "uploads_201": sent.count(201), "rows_after": studies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shapes", type=int, default=500, help="tuned shapes (500)")
    parser.add_argument(
        "--per-shape", type=int, default=200, help="measurements per shape (200); small for a smoke"
    )
    args = parser.parse_args()
    rows = args.shapes * args.per_shape
    if not shutil.which("wrk"):
        raise SystemExit("needs wrk: apt-get install wrk")
    folder = Path(tempfile.mkdtemp(prefix="gemmtune-bench-"))
    url = f"sqlite:///{folder}/bench.db"
    t0 = time.perf_counter()
    build(url, args.shapes, args.per_shape)
    print(f"built {rows} measurements in {time.perf_counter() - t0:.1f} s", flush=True)
    env = {"GEMMTUNE_CACHE_TTL_S": "2", "GEMMTUNE_API_TOKEN": TOKEN}
    result: dict[str, object] = {**result_header("api latency"), "rows": rows}
    try:
        with served(url, env) as base:
            steps = (
                ("closed_loop_8", lambda: parse_wrk(run_wrk(base, args.seconds, args.shapes))),
                (
                    "paced_no_writer",
                    lambda: parse_wrk(
                        run_wrk(base, args.seconds, args.shapes, rate=args.rate, connections=50)
                    ),
                ),
                (
                    "paced_study_and_uploads",
                    lambda: under_writes(base, url, args.seconds, args.rate, args.shapes),
                ),
                ("results_paging", lambda: paging(base, rows)),
            )
            result.update(run_steps(steps))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
