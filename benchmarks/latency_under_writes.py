"""POST /v1/configs/best at a paced rate, idle and while a study writes and uploads arrive, on
SQLite and PostgreSQL in one run (issue 43, item 2).

For each backend: a database of 100 000 measurements (500 tuned shapes x 200 configs, built as
``api_latency.py`` builds it), ``gemmtune serve`` on it in its own process, and wrk, paced, from
another. Where the machine has two cores or more, the server is pinned to core 0 and everything
that loads it (wrk, this script's upload thread, the writing study) to the others, with
``taskset``; PostgreSQL's own processes are the machine's service and stay unpinned. Steps:

1. idle: each rate (200, 500, 1000 req/s) for ``--seconds``;
2. the writers start: a replayed study (``gemmtune tune --evaluator replay``, shape after shape)
   writing to the same database from another process, and one trusted upload a second
   (``POST /v1/results``, a faster measurement of a tuned shape: a new best each time);
3. with the writers: each rate again.

wrk paces with a schedule (``pace.lua`` below): request i is sent no earlier than
start + i / rate, by a clock read through LuaJIT's ffi, over 50 connections, so a slow answer
does not slow the schedule until all 50 wait. Each step reports wrk's p50/p90/p99 and max, the
achieved rate (``below_asked`` says when it fell more than 1 % short of the asked rate: wrk's
window edges alone cost up to about 0.5 %), how late the schedule ran (``max_schedule_lag_ms``:
sends waiting on busy connections, which wrk's latencies do not count), the server's CPU time
per request, and the 1-minute load average before and after.
The file also holds the load average at start and end, the date, versions and the commit.

Usage: ``python benchmarks/latency_under_writes.py --backends sqlite,postgresql --rates
200,500,1000 --seconds 20 --out FILE.json`` (about 5 minutes); ``--shapes 20 --per-shape 5
--seconds 2 --rates 100`` is a smoke run of every step.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from api_latency import WRITER, bodies, build, shapes, upload_body
from serving import result_header, server_process

TOKEN = "bench-trusted-token"
CONNECTIONS = 50
RATE_TOLERANCE = 0.01  # an achieved rate this far under the asked one still counts as kept
WARM_UP_S = 5  # the writers run this long before the first step that measures them
PEAK_FLOPS = 60e12  # a made-up time stays under the plausibility check's bound (FFMA peak)

PACE_LUA = """
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } timespec;
int clock_gettime(int clk_id, timespec *tp);
]]
local ts = ffi.new("timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {%(bodies)s}
local interval = %(interval_ms)f
local i, start = 0, nil
maxlag, late = 0, 0  -- globals: done() reads them through thread:get
request = function()
  i = i %% #bodies + 1
  return wrk.format(nil, "/v1/configs/best", nil, bodies[i])
end
local slot = 0
delay = function()
  local now = now_ms()
  if start == nil then start = now end
  slot = slot + 1
  local due = start + (slot - 1) * interval  -- the first slot at once
  if due < now then
    local lag = now - due
    if lag > maxlag then maxlag = lag end
    if lag > 1 then late = late + 1 end
    return 0
  end
  return due - now
end
local threads = {}
setup = function(thread) table.insert(threads, thread) end
done = function(summary, latency, requests)
  for _, t in ipairs(threads) do
    io.write(string.format("SCHEDULE maxlag_ms=%%.3f late=%%d\\n", t:get("maxlag"), t:get("late")))
  end
  io.write(string.format("LATENCY max_us=%%d\\n", latency.max))
end
"""


def pinning() -> tuple[list[str], set[int] | None]:
    """taskset's prefix for the server, and the cores everything else runs on (None: the
    machine has one core, nothing is pinned)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return [], None
    return ["taskset", "-c", str(cores[0])], set(cores[1:])


def paced(base: str, rate: int, seconds: int, n_shapes: int) -> dict[str, Any]:
    """One wrk run at ``rate`` req/s: latencies, the achieved rate, the schedule's lag."""
    script = Path(tempfile.mkdtemp(prefix="gemmtune-pace-")) / "pace.lua"
    lines = ", ".join(f"'{json.dumps(b)}'" for b in bodies(300, n_shapes))
    script.write_text(PACE_LUA % {"bodies": lines, "interval_ms": 1000 / rate})
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", str(script)]
    done = subprocess.run(
        [*command, f"{base}/v1/configs/best"], capture_output=True, text=True, check=True
    )
    shutil.rmtree(script.parent, ignore_errors=True)
    return {"asked_req_s": rate, **parse_wrk(done.stdout)}


def parse_wrk(text: str) -> dict[str, Any]:
    """Percentiles, max (ms), achieved req/s, errors and the schedule's lag from wrk's output
    (with ``--latency`` and :data:`PACE_LUA`'s ``done``)."""
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    found: dict[str, Any] = {}
    for pct, value, unit in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s)$", text, re.M):
        found[f"p{pct}_ms"] = round(float(value) * scale[unit], 3)
    most = re.search(r"LATENCY max_us=(\d+)", text)
    found["max_ms"] = round(int(most.group(1)) / 1e3, 3) if most else None
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    found["req_s"] = float(rate.group(1)) if rate else 0.0
    total = re.search(r"(\d+) requests in", text)
    found["requests"] = int(total.group(1)) if total else 0
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    found["non_2xx"] = int(failed.group(1)) if failed else 0
    errors = re.search(r"Socket errors: (.*)", text)
    found["socket_errors"] = errors.group(1).strip() if errors else None
    lag = re.search(r"SCHEDULE maxlag_ms=([\d.]+) late=(\d+)", text)
    if lag:
        found["max_schedule_lag_ms"] = float(lag.group(1))
        found["sends_late_over_1ms"] = int(lag.group(2))
    return found


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, base: str, rate: int, seconds: int, n_shapes: int) -> dict[str, Any]:
    """:func:`paced`, with the server's CPU time per request and the load around it."""
    load, used = os.getloadavg()[0], cpu_seconds(pid)
    found = paced(base, rate, seconds, n_shapes)
    spent = cpu_seconds(pid) - used
    # wrk's window opens before the first scheduled send and closes after the last: a run that
    # kept its schedule (no lag) still counts up to about 0.5 % fewer than rate x seconds.
    found["below_asked"] = found["req_s"] < rate * (1 - RATE_TOLERANCE)
    found["server_cpu_us_per_request"] = round(spent / max(found["requests"], 1) * 1e6, 1)
    found["loadavg_1min_before"] = round(load, 2)
    found["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
    print(f"  {rate} req/s: {found}", flush=True)
    return found


def uploads(base: str, n_shapes: int, stop: threading.Event, codes: list[int]) -> None:
    """One trusted upload a second, each a new best: a tuned shape small enough that the
    built database's 1 ms, and the faster times sent here, are plausible."""
    rng = random.Random(2)
    small = [s for s in shapes(n_shapes) if 2 * s[0] * s[1] * s[2] / 1e-3 < PEAK_FLOPS]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        while not stop.wait(1.0):
            ms = 0.9 - 0.0001 * len(codes)
            body = upload_body(*rng.choice(small or shapes(n_shapes)), ms)
            try:
                codes.append(client.post("/v1/results", json=body, timeout=30).status_code)
            except httpx.HTTPError:
                codes.append(0)


@contextlib.contextmanager
def writers(base: str, url: str, n_shapes: int) -> Iterator[list[int]]:
    """The replayed study and the uploads, running until the block ends: the uploads' status
    codes (0: no answer)."""
    study = subprocess.Popen(
        ["bash", "-c", WRITER, sys.executable, url],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stop = threading.Event()
    codes: list[int] = []
    uploader = threading.Thread(target=uploads, args=(base, n_shapes, stop, codes))
    uploader.start()
    try:
        yield codes
    finally:
        stop.set()
        uploader.join()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(study.pid, 15)
        study.wait()


@contextlib.contextmanager
def database(backend: str, postgres: str) -> Iterator[str]:
    """A new, empty database of ``backend``: its URL; dropped afterwards."""
    if backend == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="gemmtune-latency-"))
        try:
            yield f"sqlite:///{folder}/bench.db"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    import psycopg

    name = f"lat_bench_{os.getpid()}"
    admin = postgres.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    try:
        yield postgres.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def one_backend(args: argparse.Namespace, backend: str, pin: list[str]) -> dict[str, Any]:
    """Every step on one backend."""
    result: dict[str, Any] = {}
    with database(backend, args.postgres) as url:
        began = time.perf_counter()
        build(url, args.shapes, args.per_shape)
        result["built_rows"] = args.shapes * args.per_shape
        result["build_s"] = round(time.perf_counter() - began, 1)
        env = {"GEMMTUNE_CACHE_TTL_S": "2", "GEMMTUNE_TRUSTED_TOKEN": TOKEN}
        with server_process(url, env, pin) as (server, base):
            print(f"{backend}: serving {result['built_rows']} rows at {base}", flush=True)
            result["idle"] = [
                measured(server.pid, base, rate, args.seconds, args.shapes) for rate in args.rates
            ]
            with writers(base, url, args.shapes) as codes:
                time.sleep(WARM_UP_S)
                print(f"{backend}: with the writers", flush=True)
                result["with_writers"] = [
                    measured(server.pid, base, rate, args.seconds, args.shapes)
                    for rate in args.rates
                ]
            result["uploads"] = {str(code): codes.count(code) for code in sorted(set(codes))}
            result["server_db_backend"] = backend
    return result


def versions(postgres: str | None) -> dict[str, Any]:
    """The versions that make these numbers what they are."""
    found: dict[str, Any] = {}
    for name in ("gemmtune", "fastapi", "uvicorn", "starlette", "pydantic", "sqlalchemy",
                 "psycopg", "httptools", "uvloop"):  # fmt: skip
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None  # httptools, uvloop: uvicorn falls back to h11 and asyncio
    import sqlite3

    found["sqlite"] = sqlite3.sqlite_version
    wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    found["wrk"] = (wrk.stdout + wrk.stderr).split("[")[0].strip()
    if postgres:
        import psycopg

        admin = postgres.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(admin) as connection:
            row = connection.execute("SHOW server_version").fetchone()
            found["postgresql"] = row[0] if row else None
    return found


def commit() -> str:
    """The commit the script runs from, with ``+dirty`` when files differ from it."""
    here = Path(__file__).resolve().parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=here,
                           capture_output=True, text=True)  # fmt: skip
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--rates", default="200,500,1000", help="asked req/s, comma-separated")
    parser.add_argument("--rate", type=int, help="one rate only (instead of --rates)")
    parser.add_argument("--seconds", type=int, default=20, help="per step")
    parser.add_argument("--shapes", type=int, default=500, help="tuned shapes (500)")
    parser.add_argument("--per-shape", type=int, default=200, help="measurements a shape (200)")
    parser.add_argument(
        "--postgres",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL database to create the benchmark's own database from",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.rates = [args.rate] if args.rate else [int(r) for r in args.rates.split(",")]
    backends = args.backends.split(",")
    if not shutil.which("wrk"):
        raise SystemExit("needs wrk: apt-get install wrk")
    pin, load_cores = pinning()
    if load_cores is not None:
        os.sched_setaffinity(0, load_cores)  # wrk, the uploads and the study inherit it
    result: dict[str, Any] = {
        **result_header("api latency under writes"),
        "commit": commit(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "pinning": {
            "server_cores": pin[-1] if pin else "unpinned",
            "load_cores": sorted(load_cores) if load_cores else "unpinned",
            "postgresql": "unpinned (the machine's service)",
        },
        "set_up": {
            "rows": args.shapes * args.per_shape,
            "connections": CONNECTIONS,
            "seconds_per_step": args.seconds,
            "writers": "replayed study (gemmtune tune --evaluator replay) + 1 trusted upload/s",
        },
    }
    result["versions"].update(versions(args.postgres if "postgresql" in backends else None))
    for backend in backends:
        result[backend] = one_backend(args, backend, pin)
    result["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
