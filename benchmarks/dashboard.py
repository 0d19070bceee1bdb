"""Render time of a study page of 10 000 trials, as a browser gets it from ``gemmtune serve``.

Builds a SQLite database holding one generated study (two families, nine or ten parameters
each, a seventh of the trials failed in four ways), starts ``gemmtune serve`` in its own process
and times GET /dashboard/studies/{key} from this process (loopback HTTP, so a request's time is
the server's plus well under a millisecond):

1. ``first_view``: the first view after the server started (reads the study, draws every chart;
   the parameter importances are not on it);
   ``importances_panel``: then the importances panel the page's script fetches (computes them);
2. ``same_state``: the same page again, the study unchanged (what the study cache keeps);
3. ``table_views``: other pages, sorts and filters of the trial table, unchanged study;
4. ``new_chart_view``: a new x axis and colour (that chart drawn, the rest kept);
5. ``after_a_new_trial``: the page after one more trial was stored (a live study's refresh:
   the study is read and drawn again).

Each step gives the median and the slowest of its requests in milliseconds, and the 1-minute
load average before it. Usage: ``python benchmarks/dashboard.py [--trials 10000] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
from serving import result_header, run_steps, served

import storage

DEVICE = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
SHAPE = storage.ShapeIn(4096, 4096, 4096)
STUDY = "benchmark/4096x4096x4096 warptile+pipelined"
FAILURES = ("pruned", "compile_failed", "wrong_result", "timeout")
VALUES = {
    "BM": (32, 64, 128, 256),
    "BN": (32, 64, 128, 256),
    "BK": (8, 16, 32),
    "WM": (16, 32, 64),
    "WN": (16, 32, 64),
    "WNITER": (1, 2, 4),
    "TM": (4, 8),
    "TN": (4, 8),
    "THREADS": (64, 128, 256),
}


def trial(rng: random.Random, number: int) -> storage.MeasurementIn:
    family = rng.choice(("warptile", "pipelined"))
    params = {name: rng.choice(values) for name, values in VALUES.items()}
    if family == "pipelined":
        params["STAGES"] = rng.choice((2, 3, 4))
    status = rng.choice(FAILURES) if number % 7 == 0 else "ok"
    ms = 2.0 + rng.random() * 8 * 64 / params["BM"] if status == "ok" else None
    name = f"{family}_" + "_".join(f"{k.lower()}{v}" for k, v in params.items()) + f"_n{number}"
    return storage.MeasurementIn(
        family=family,
        config_name=name,
        params=params,
        status=status,
        reason=None if status == "ok" else f"{status}: generated for trial {number}",
        ms=ms,
        cublas_ms=2.7 if ms else None,
        registers=rng.randint(60, 255),
        smem_bytes=rng.choice((8192, 16384, 32768, 49152)),
        occupancy=rng.choice((0.125, 0.25, 0.5)),
        study=STUDY,
        trial_number=number,
        provenance={"generated": True},
    )


def build(url: str, trials: int) -> None:
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    rng = random.Random(0)
    with storage.make_session_factory(engine).begin() as session:
        storage.record_measurements(
            session, [(DEVICE, SHAPE, trial(rng, number)) for number in range(trials)]
        )
    engine.dispose()


def timed(client: httpx.Client, page: str, params: dict[str, str]) -> float:
    start = time.perf_counter()
    response = client.get(page, params=params)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return 1000 * elapsed


def step(times: Iterable[float]) -> dict[str, Any]:
    found = list(times)
    return {
        "requests": len(found),
        "median_ms": round(statistics.median(found), 1),
        "max_ms": round(max(found), 1),
    }


def measure(client: httpx.Client, url: str, trials: int) -> dict[str, Any]:
    page = "/dashboard/studies/" + httpx.URL(STUDY).raw_path.decode()
    panel = {"study": STUDY, "family": ""}
    adder = storage.open_database(url)
    rng = random.Random(1)

    def add_trial(number: int) -> None:
        with adder.begin() as session:
            storage.record_measurement(session, DEVICE, SHAPE, trial(rng, number))

    tables = [{"page": "3"}, {"sort": "tflops"}, {"status": "timeout"}, {"q": "bm256"}]
    charts = [{"x": x, "colour": c} for x, c in (("BM", "BK"), ("occupancy", "TM"), ("WN", "BN"))]
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("first_view", lambda: step([timed(client, page, {})])),
        ("importances_panel", lambda: step([timed(client, "/dashboard/importances", panel)])),
        ("same_state", lambda: step(timed(client, page, {}) for _ in range(10))),
        ("table_views", lambda: step(timed(client, page, p) for p in tables for _ in range(3))),
        ("new_chart_view", lambda: step(timed(client, page, p) for p in charts)),
        (
            "after_a_new_trial",
            lambda: step((add_trial(trials + i), timed(client, page, {}))[1] for i in range(5)),
        ),
    ]
    result = run_steps(steps)
    result["page_bytes"] = len(client.get(page).content)
    return result


def served_code() -> dict[str, str]:
    """Which checkout ``gemmtune serve`` runs from here, and its commit."""
    where = subprocess.run(
        [sys.executable, "-c", "import api, pathlib; print(pathlib.Path(api.__file__).parent)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {"api_package": where, "commit": commit + (" (modified)" if dirty else "")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gemmtune-dashboard-"))
    url = f"sqlite:///{folder}/dashboard.db"
    build(url, args.trials)
    result: dict[str, Any] = {
        **result_header("dashboard study page"),
        "database": "sqlite",
        "trials": args.trials,
        "served": served_code(),
    }
    try:
        with served(url, {}) as base, httpx.Client(base_url=base, timeout=120) as client:
            result.update(measure(client, url, args.trials))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
