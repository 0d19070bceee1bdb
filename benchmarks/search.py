"""Search efficiency on the replay table: evaluations until within 2 % of the exhaustive best.

    python benchmarks/search.py [--sampler tpe --sampler random ...] [--seeds 20] [--cap 600]
        [--cap-for tpe=130 ...] [--shape 4096x4096x4096 ...] [--jobs N]
        [--table tuner/data/results/h100-sweep.jsonl ...] [--family warptile ...]
        [--markdown benchmarks/search.md] [--json out.json]

For every shape of the table, sampler and seed, a study (``tuner.search.study.Study``, in-memory
Optuna storage, a MemoryRecorder, no warm start) runs on the ``--family`` families (default warptile
and pipelined, the exhaustive table's) with the replay evaluator; several ``--table`` files are
merged (sweeps of different families), and a study searches only the configs they hold. It stops as
soon as the best result so far is within ``--tolerance`` of the best the tables hold for that shape
in those families, or after ``--cap`` evaluated candidates (a capped run; ``--cap-for SAMPLER=N``
gives one sampler another cap, e.g. a slow model-based one). Prints, per shape and sampler, the
quantiles of the count of evaluated candidates, as a number and as a share of the valid space, plus
the wall time; whether the search target holds per shape (the best sampler's median count at most
``TARGET_SHARE`` of the valid space and at most ``TARGET_VS_RANDOM`` of random's); random's expected
count is also computed exactly from the table as a cross-check. ``--markdown`` writes the same
report, with the date, machine and the command that reproduces it, to a file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from search_report import (
    FAMILIES,
    ROOT,
    Run,
    Scope,
    code_version,
    machine,
    meta_tables,
    relative,
    render,
)

from tuner.core.result import Result
from tuner.core.shape import parse_shape
from tuner.data import read_sweep_table
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator, default_table
from tuner.search.samplers import SAMPLERS
from tuner.search.study import Progress, Study

# tuner.search.samplers imports the cost model only when "ranked" is first asked for; import it now
# so that every run uses the code there was at the start (and that code_version() names).
importlib.import_module("tuner.search.samplers.ranked")

DEFAULT_SAMPLERS = ("ranked", "tpe", "random")
# Model-based samplers whose proposals get slower as the study grows: started first, so that the
# cheap runs fill the workers at the end.
SLOW_SAMPLERS = ("gp", "tpe")


class Reached(Exception):
    """Raised from the progress callback to end a study at the target."""


_EVALUATOR: ReplayEvaluator | None = None


def _evaluator(tables: tuple[str, ...]) -> ReplayEvaluator:
    global _EVALUATOR
    if _EVALUATOR is None:
        _EVALUATOR = ReplayEvaluator(tables)
    return _EVALUATOR


def one_run(
    tables: tuple[str, ...],
    families: tuple[str, ...],
    shape_text: str,
    sampler: str,
    seed: int,
    cap: int,
    tol: float,
) -> Run:
    scope = Scope(_evaluator(tables), families)
    shape = parse_shape(shape_text)
    best_ms = scope.best(shape)
    goal = (1 + tol) * best_ms

    def stop(progress: Progress) -> None:
        best = progress.best
        if best is not None and best.ms is not None and best.ms <= goal:
            raise Reached

    start = time.perf_counter()
    study = Study(shape, families, scope.evaluator, MemoryRecorder(), sampler=sampler, seed=seed)
    progress: Progress | None = None
    try:
        progress = study.run(trials=cap, on_progress=stop)
        reached = False
    except Reached:
        reached = True
    wall = time.perf_counter() - start
    done: dict[str, Result] = study.recorder.evaluated(study.name)
    times = [r.ms for r in done.values() if r.status == "ok" and r.ms is not None]
    count = len(done) if progress is None else progress.evaluated
    return Run(
        shape=shape_text,
        sampler=sampler,
        seed=seed,
        evaluations=count,
        capped=not reached,
        wall_s=wall,
        best_ratio=min(times) / best_ms if times else float("inf"),
        cap=cap,
    )


def parse_caps(items: list[str], default: int) -> dict[str, int]:
    caps: dict[str, int] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in SAMPLERS or not value.isdigit() or int(value) < 1:
            raise SystemExit(f"--cap-for wants SAMPLER=N (N >= 1), got {item!r}")
        caps[name] = int(value)
    return caps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampler", action="append", choices=SAMPLERS)
    parser.add_argument("--shape", action="append")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cap", type=int, default=600)
    parser.add_argument(
        "--cap-for",
        action="append",
        default=[],
        metavar="SAMPLER=N",
        help="another cap for one sampler (repeatable)",
    )
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument(
        "--table", action="append", help=f"repeatable; default {relative(default_table())}"
    )
    parser.add_argument(
        "--family", action="append", help=f"repeatable; default {' and '.join(FAMILIES)}"
    )
    parser.add_argument("--markdown", help="also write the report to this file")
    parser.add_argument("--json", dest="json_out", help="write the runs and their setting here")
    parser.add_argument(
        "--report-from",
        metavar="JSON",
        help="run nothing: rebuild the report from a file that --json wrote",
    )
    args = parser.parse_args(argv)

    if args.report_from:
        saved = json.loads(Path(args.report_from).read_text())
        meta: dict[str, Any] = saved["meta"]
        runs = [Run(**r) for r in saved["runs"]]
        tables = tuple(str(ROOT / t) for t in meta_tables(meta))
        scope = Scope(_evaluator(tables), tuple(meta.get("families") or FAMILIES))
    else:
        tables = tuple(args.table or [str(default_table())])
        scope = Scope(_evaluator(tables), tuple(dict.fromkeys(args.family or FAMILIES)))
        held = [s for s in scope.evaluator.shapes() if scope.rows(s)]
        shapes = args.shape or [str(s) for s in held]
        samplers = list(dict.fromkeys(args.sampler or DEFAULT_SAMPLERS))
        caps = {s: args.cap for s in samplers} | parse_caps(args.cap_for, args.cap)
        tasks = [
            (tables, scope.families, shape, sampler, seed, caps[sampler], args.tolerance)
            for sampler in sorted(samplers, key=lambda s: s not in SLOW_SAMPLERS)
            for shape in shapes
            for seed in range(args.seeds)
        ]
        jobs = args.jobs or os.cpu_count() or 1
        code = code_version()
        started = dt.datetime.now(dt.UTC)
        start = time.perf_counter()
        with ProcessPoolExecutor(jobs) as pool:
            runs = list(pool.map(one_run, *zip(*tasks, strict=True), chunksize=1))
        headers = [read_sweep_table(Path(t)).header for t in tables]
        meta = {
            "started": f"{started:%Y-%m-%d %H:%M}",
            "total_s": time.perf_counter() - start,
            "jobs": jobs,
            "machine": machine(),
            "python": platform.python_version(),
            "optuna": importlib.metadata.version("optuna"),
            "code": code,
            "tables": [relative(Path(t)) for t in tables],
            "families": list(scope.families),
            "table_device": headers[-1].device,
            "table_date": ", ".join(dict.fromkeys(h.date or "date unknown" for h in headers)),
            "shapes": shapes,
            "samplers": samplers,
            "seeds": args.seeds,
            "cap": args.cap,
            "caps": caps,
            "tolerance": args.tolerance,
            "argv": sys.argv[1:] if argv is None else argv,
        }
        if args.json_out:
            Path(args.json_out).write_text(
                json.dumps({"meta": meta, "runs": [asdict(r) for r in runs]}, indent=1) + "\n"
            )
    report = render(meta, runs, scope, args.report_from or args.json_out)
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
