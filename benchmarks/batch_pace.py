"""Seconds per shape of a whole ``gemmtune tune-batch`` (issue 44, item 1): the command's
request run as the command runs it, timed from the interpreter's start to the end, on a fresh
SQLite database and an empty kernel cache, then the stored best of every shape read back
(``gemmtune results``) for the held-out geomean of the stored ratios to cuBLAS.

    python benchmarks/batch_pace.py --shapes benchmarks/heldout.csv [--limit 8] [--trials 40]
        [--caches DIR] [--family F ...] [--keep-db FILE] --label after --out pace.json

``--caches DIR`` keeps the kernel cache (and the kept probe), CuPy's cache and NVRTC's own (the
driver's compute cache, which CuPy's kernels use; the compile pool's processes turn it off) in
DIR, as a host keeps them between commands: a first run on other shapes fills them, and a second
run times a host that has tuned before (its kernels compiled for other shapes, its device
probed).

Each study is stamped (admitted, last candidate, done) in seconds since the start, so the file
shows where each shape's time went: preparing, searching, re-measuring its finalists. It runs
whatever ``tuner`` its interpreter imports: run it once on one code and once on another in the
same lease to compare them, both from the same kind of place (each from an extracted ``git
archive``): run from an archive, a tree started 4 s later and searched slower than the other run
from the lent machine's working copy, in both of its runs (``benchmarks/notebook.md``, "Compiling
ahead of the sampler"). ``--evaluator replay`` checks the script on a CPU (shapes of the
replay table only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BEGUN = time.perf_counter()  # the command's start: everything after it counts


def shapes_file(source: Path, limit: int | None, folder: Path) -> tuple[Path, int]:
    """``source``'s first ``limit`` shape rows (all without a limit) in a file of their own."""
    rows = [
        line
        for line in source.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    rows = rows[:limit] if limit else rows
    path = folder / "shapes.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path, len(rows)


class Stamps:
    """A study's progress report: when it was admitted (prepared, about to search), when each
    candidate was evaluated, in seconds since the command began."""

    def __init__(self, begun: float) -> None:
        self.begun = begun
        self.label = ""
        self.admitted: float | None = None
        self.evaluated: list[float] = []

    def start(self, label: str, total: int) -> None:
        self.label, self.admitted = label, time.perf_counter() - self.begun

    def update(self, progress: Any) -> None:
        self.evaluated.append(time.perf_counter() - self.begun)


def run_batch(
    shapes: Path,
    trials: int,
    url: str,
    begun: float,
    evaluator: str = "gpu",
    families: list[str] | None = None,
) -> dict[str, Any]:
    """What ``gemmtune tune-batch SHAPES --trials N --db URL [--family F ...]`` runs (its
    request, through ``tuner.run.tune``), timed from ``begun``, with each study's stamps:
    admitted, last candidate, done (after its finalists)."""
    from tuner.cli.tune import _request, print_outcome
    from tuner.data.shape_lists import read_shapes
    from tuner.run.tune import tune

    read = tuple(read_shapes(shapes, "float32", "NN", None))
    # family, accuracy, sampler, seed, trials, timeout, warm start, evaluator, tables, db, gpus
    request = _request(
        read, families, "exact", "ranked", None, trials, None, 3, evaluator, None, url, None
    )
    reports: list[Stamps] = []
    done: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}  # where each study's seconds went

    def new_report() -> Stamps:
        reports.append(Stamps(begun))
        return reports[-1]

    def on_done(progress: Any) -> None:
        label = progress.study.split("|")[1]
        done[label] = time.perf_counter() - begun
        parts[label] = dict(progress.seconds)
        print_outcome(progress)

    outcomes = tune(request, new_report=new_report, on_done=on_done)
    wall = time.perf_counter() - begun
    studies = [
        {
            "shape": r.label,
            "admitted_s": r.admitted,
            "last_candidate_s": r.evaluated[-1] if r.evaluated else None,
            "done_s": done.get(r.label),
            "evaluated": len(r.evaluated),
            "seconds": parts.get(r.label),
        }
        for r in reports
        if r.admitted is not None
    ]
    candidates = sum(o.evaluated for o in outcomes)
    return {"wall_s": wall, "studies": studies, "candidates": candidates, "exit_code": 0}


def stored_bests(url: str, env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "results", "--format", "json", "--db", url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def screening_waits(url: str) -> dict[str, dict[str, float]]:
    """Per study, what its screened candidates waited for, summed over them (seconds, from each
    measurement's provenance): their compiles, once the study wanted to start them, and their
    measurements, from sending to the reply (queued behind the one before included); and how
    many of them the compile pool compiled for this study, with those compiles' seconds from
    submission to the end (``compile_s``; a kernel compiled for an earlier shape has none)."""
    from sqlalchemy import select

    import storage

    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows = session.execute(
                select(storage.Measurement.study, storage.Measurement.provenance).where(
                    storage.Measurement.phase != "final"
                )
            ).all()
    finally:
        engine.dispose()
    waits: dict[str, dict[str, float]] = {}
    for study, provenance in rows:
        if study is None:
            continue
        shape = study.split("|")[1]
        entry = waits.setdefault(
            shape,
            {
                "candidates": 0,
                "compile_wait_s": 0.0,
                "measure_s": 0.0,
                "compiled": 0,
                "compile_s": 0.0,
            },
        )
        entry["candidates"] += 1
        for key in ("compile_wait_s", "measure_s", "compile_s"):
            entry[key] = round(entry[key] + float((provenance or {}).get(key) or 0.0), 3)
        entry["compiled"] += "compile_s" in (provenance or {})
    return waits


def compile_pool_share(waits: dict[str, dict[str, float]], wall_s: float) -> dict:
    """How busy the compile pool was with the screened candidates' compiles: their seconds over
    the pool's processes times the command's wall time. A lower bound of its busy share (the
    first proposals a study guessed wrong and the finalists' extras compile too), and each
    compile's seconds include any wait for a free process; near 1 the searches wait for the
    pool's throughput, well under it for the compiles' latency (a round of proposals waits for
    its slowest compile)."""
    from tuner.kernels.compile_pool import default_workers

    workers = default_workers()  # a one-GPU command's pool
    seconds = sum(entry.get("compile_s", 0.0) for entry in waits.values())
    return {
        "workers": workers,
        "compiled": sum(int(entry.get("compiled", 0)) for entry in waits.values()),
        "compile_s": round(seconds, 2),
        "busy_share_at_least": round(seconds / (workers * wall_s), 3) if wall_s > 0 else None,
    }


def one_provenance(url: str, env: dict[str, str]) -> dict[str, Any]:
    """The provenance of one stored measurement: device, driver, runtime, NVRTC, CuPy, tuner."""
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "export", "-", "--db", url],
        capture_output=True,
        text=True,
        env=env,
    )
    try:
        data = json.loads(done.stdout)
        measured = next(m for m in data["measurements"] if m.get("provenance"))
        keep = ("device", "sm_count", "compute_capability", "driver", "cuda_runtime", "nvrtc")
        return {k: measured["provenance"].get(k) for k in (*keep, "cupy", "tuner", "python")}
    except (ValueError, KeyError, StopIteration, TypeError):
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", type=Path, default=Path("benchmarks/heldout.csv"))
    parser.add_argument("--limit", type=int, help="only the first N shape rows")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--label", required=True, help="what code ran (e.g. before, after)")
    parser.add_argument("--commit", default="unknown", help="the code's commit")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--evaluator", default="gpu", help="gpu, or replay to try the script")
    parser.add_argument(
        "--family",
        action="append",
        help="search only these families (repeat; default: the defaults for each shape), to "
        "weigh what a family's compiles cost a batch against what its configs win",
    )
    parser.add_argument(
        "--caches",
        type=Path,
        help="keep the kernel cache (with the kept probe) and CuPy's cache in this folder, as a "
        "host keeps them between commands (default: empty ones, thrown away)",
    )
    parser.add_argument(
        "--keep-db", type=Path, help="copy the run's SQLite database (every measurement) here"
    )
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="batch-pace-"))
    shapes, count = shapes_file(args.shapes, args.limit, folder)
    url = f"sqlite:///{folder / 'pace.db'}"
    # Without --caches, an empty kernel cache (and no kept probe) and an empty CuPy cache: the
    # run compiles and probes from nothing, CuPy's own kernels (warm-up, probe) included.
    caches = args.caches or folder
    warm = {
        "kernels": any((caches / "cache").glob("*")),
        "cupy": any((caches / "cupy").glob("*")),
        "nvrtc": any((caches / "nvrtc").glob("*")),
    }
    os.environ["GEMMTUNE_CACHE_DIR"] = str(caches / "cache")
    os.environ["CUPY_CACHE_DIR"] = str(caches / "cupy")
    os.environ["CUDA_CACHE_PATH"] = str(caches / "nvrtc")  # not the machine's, filled by others
    env = dict(os.environ)
    batch = run_batch(shapes, args.trials, url, BEGUN, args.evaluator, args.family)
    bests = stored_bests(url, env)
    waits = screening_waits(url)
    if args.keep_db is not None:  # the measurements themselves, finalists' rounds included
        shutil.copyfile(folder / "pace.db", args.keep_db)
    ratios = [row["ratio"] for row in bests if row.get("ratio")]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    document = {
        "what": "wall time of one gemmtune tune-batch (its request run through tuner.run.tune "
        "in this process, from the interpreter's start: imports and workers' start included; "
        "fresh SQLite) and the stored best ratio to cuBLAS of "
        "each shape; per study, seconds since the start when it was admitted (prepared), "
        "when its last candidate was evaluated and when it was done (finalists stored); "
        "with --caches, the kernel and CuPy caches were kept from earlier runs "
        "(caches_at_start says whether they held anything)",
        "label": args.label,
        "commit": args.commit,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": {**one_provenance(url, env), "host_python": platform.python_version()},
        "caches_at_start": {"kept": args.caches is not None, "not_empty": warm},
        "shapes_file": str(args.shapes),
        "shapes": count,
        "trials": args.trials,
        "families": args.family or "default",
        "wall_s": round(batch["wall_s"], 2),
        "seconds_per_shape": round(batch["wall_s"] / count, 2),
        "geomean_ratio": geomean,
        "bests": bests,
        "candidates": batch["candidates"],
        "studies": batch["studies"],
        "screening_waits": waits,
        "compile_pool": compile_pool_share(waits, batch["wall_s"]),
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(
        f"{args.label}: {count} shapes in {batch['wall_s']:.1f} s "
        f"({batch['wall_s'] / count:.2f} s a shape), geomean {geomean}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
