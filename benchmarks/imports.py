"""Import speed: ``storage.import_json`` of a synthetic export into fresh SQLite and PostgreSQL
databases (the path ``gemmtune import`` takes), in rows per second.

The export holds ``--rows`` measurements (one device, 200 shapes, ok and failed rows with
provenance, as ``gemmtune export`` writes them). Each backend imports it twice: into an empty
database (every row written) and again (every row skipped as already stored). ``merge_seconds``
is the part after the last row was staged: the one transaction that writes the real tables (on
SQLite, the most other writers wait), then dropping the staging tables.

Usage: ``python benchmarks/imports.py [--rows 20000] [--postgres URL] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy
from sqlalchemy import create_engine, text

import storage

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def export(rows: int) -> dict[str, Any]:
    rng = random.Random(0)
    device = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132}
    shapes = [
        {"m": rng.randint(1, 8192), "n": rng.randint(1, 8192), "k": rng.randint(1, 8192)}
        for _ in range(200)
    ]
    start = datetime(2026, 11, 1, tzinfo=UTC)
    measurements = []
    for i in range(rows):
        ok = rng.random() < 0.8
        bm = rng.choice((32, 64, 128))
        measurements.append(
            {
                "device": device,
                "shape": {**shapes[i % len(shapes)], "dtype": "float32", "layout": "row-major"},
                "family": "smem_tiling",
                "config_name": f"smem_tiling_bm{bm}_bn{bm}_bk{rng.choice((8, 16, 32))}_{i}",
                "params": {"BM": bm, "BN": bm, "BK": 16},
                "status": "ok" if ok else "compile_failed",
                "reason": None if ok else "synthetic failure",
                "ms": rng.uniform(0.01, 5.0) if ok else None,
                "study": f"bench-{i % 50}",
                "trial_number": i // 50,
                "provenance": {"source": "benchmarks/imports.py", "seed": 0},
                "created_at": (start + timedelta(seconds=i)).isoformat(),
            }
        )
    return {
        "format": "gemmtune-export",
        "version": 1,
        "devices": [device],
        "shapes": shapes,
        "measurements": measurements,
    }


def timed_import(url: str, data: dict[str, Any]) -> tuple[int, float, float | None]:
    """Rows added, seconds in all, and seconds from the last row staged to the end (the
    merge: the only part that holds SQLite's write lock), None when nothing was staged."""
    sessions = storage.open_database(url)
    staged: list[float] = []

    def progress(done: int, total: int) -> None:
        if done == total:
            staged.append(time.perf_counter())

    began = time.perf_counter()
    count = storage.import_json(sessions, data, progress)
    ended = time.perf_counter()
    sessions.kw["bind"].dispose()
    return count, ended - began, (ended - staged[-1]) if staged else None


def postgres_url(admin: str) -> tuple[str, Any]:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    name = f"gemmtune_bench_{uuid.uuid4().hex[:12]}"
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()

    return engine.url.set(database=name).render_as_string(hide_password=False), drop


def source_version() -> str:
    """The commit of the storage code measured (``git describe``), or why it is unknown."""
    folder = Path(storage.__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"unknown ({exc})"
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--postgres", default=PG_ADMIN)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    data = export(args.rows)
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        targets = [("sqlite", f"sqlite:///{Path(folder) / 'bench.db'}", lambda: None)]
        targets.append(("postgresql", *postgres_url(args.postgres)))
        for backend, url, drop in targets:
            try:
                added, first, merge = timed_import(url, data)
                skipped, again, _ = timed_import(url, data)
            finally:
                drop()
            runs[backend] = {
                "rows": args.rows,
                "added": added,
                "seconds": round(first, 3),
                "rows_per_s": round(added / first),
                "merge_seconds": None if merge is None else round(merge, 3),
                "reimport_added": skipped,
                "reimport_seconds": round(again, 3),
            }
            print(backend, runs[backend], flush=True)
    result = {
        "benchmark": "imports",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({os.cpu_count()} cores, shared), loadavg "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "versions": {"python": platform.python_version(), "sqlalchemy": sqlalchemy.__version__},
        "code": source_version(),
        "runs": runs,
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
