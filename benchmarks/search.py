"""Search efficiency on the replay table: evaluations until within 2 % of the exhaustive best.

    python benchmarks/search.py [--sampler tpe --sampler random ...] [--seeds 20] [--cap 600]
        [--shape 4096x4096x4096 ...] [--jobs N] [--table benchmarks/results/h100-sweep.jsonl]
        [--markdown benchmarks/search.md] [--json out.json]

For every shape of the table, sampler and seed, a study (``tuner.study.Study``, in-memory Optuna
storage, a MemoryRecorder, no warm start) runs on the warptile and pipelined families with the
replay evaluator; it stops as soon as the best result so far is within ``--tolerance`` of the
best of the whole table for that shape, or after ``--cap`` evaluated candidates (a capped run).
Prints, per shape and sampler, the quantiles of the count of evaluated candidates, as a number
and as a share of the valid space, plus the wall time; random's expected count is also computed
exactly from the table as a cross-check.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.evaluate import Result
from tuner.families import get_family
from tuner.recording import MemoryRecorder
from tuner.replay import DEFAULT_TABLE, ReplayEvaluator
from tuner.samplers import SAMPLERS
from tuner.shape import Shape, parse_shape
from tuner.space import Space
from tuner.study import Progress, Study

FAMILIES = ("warptile", "pipelined")
DEFAULT_SAMPLERS = ("ranked", "tpe", "random", "cmaes")


@dataclass
class Run:
    shape: str
    sampler: str
    seed: int
    evaluations: int
    capped: bool
    wall_s: float
    best_ratio: float  # best found / best of the table


class Reached(Exception):
    """Raised from the progress callback to end a study at the target."""


_EVALUATOR: ReplayEvaluator | None = None


def _evaluator(table: str) -> ReplayEvaluator:
    global _EVALUATOR
    if _EVALUATOR is None:
        _EVALUATOR = ReplayEvaluator(table)
    return _EVALUATOR


def table_best(evaluator: ReplayEvaluator, shape: Shape) -> float:
    times = [
        float(row["ms"])
        for (s, _), row in evaluator.rows.items()
        if s == shape and row["status"] == "ok" and row.get("ms")
    ]
    return min(times)


def one_run(table: str, shape_text: str, sampler: str, seed: int, cap: int, tol: float) -> Run:
    evaluator = _evaluator(table)
    shape = parse_shape(shape_text)
    goal = (1 + tol) * table_best(evaluator, shape)

    def stop(progress: Progress) -> None:
        best = progress.best
        if best is not None and best.ms is not None and best.ms <= goal:
            raise Reached

    start = time.perf_counter()
    study = Study(
        shape, FAMILIES, evaluator, MemoryRecorder(), sampler=sampler, seed=seed, warm_start=0
    )
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
        shape_text,
        sampler,
        seed,
        count,
        not reached,
        wall,
        min(times) / table_best(evaluator, shape) if times else float("inf"),
    )


def space_size(evaluator: ReplayEvaluator, shape: Shape) -> int:
    return sum(len(Space(f, shape, evaluator.device).candidates()) for f in FAMILIES)


def random_expectations(
    evaluator: ReplayEvaluator, shape: Shape, tol: float
) -> tuple[float, float]:
    """Expected evaluations until a within-``tol`` candidate for (a) uniform sampling without
    replacement over the candidates (hypergeometric: (N+1)/(K+1)) and (b) Optuna's random sampler
    as the study drives it: the family is drawn first (each equally likely), then each parameter
    index uniformly; invalid points and repeats cost nothing, so candidate c is drawn with weight
    w_c = 1/(F * raw_f). For such successive sampling, E[T] = 1 + sum over the other candidates of
    w_i / (w_i + W_good) (order by exponential clocks: i precedes every good one with that
    probability)."""
    goal = (1 + tol) * table_best(evaluator, shape)
    weights: list[tuple[float, bool]] = []
    for name in FAMILIES:
        fam = get_family(name)
        raw = 1
        for p in fam.params:
            raw *= len(p.values)
        for config in Space(fam, shape, evaluator.device).candidates():
            row = evaluator.rows.get((shape, config.name), {})
            good = row.get("status") == "ok" and row.get("ms") is not None and row["ms"] <= goal
            weights.append((1 / (len(FAMILIES) * raw), good))
    n, k = len(weights), sum(good for _, good in weights)
    w_good = sum(w for w, good in weights if good)
    weighted = 1 + sum(w / (w + w_good) for w, good in weights if not good)
    return (n + 1) / (k + 1), weighted


def quantile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarize(runs: list[Run], evaluator: ReplayEvaluator, tol: float, cap: int) -> str:
    lines = [
        "| shape | space | within 2 % | sampler | median | p25 - p75 | min - max "
        "| median % of space | capped | median wall s |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for shape_text in dict.fromkeys(r.shape for r in runs):
        shape = parse_shape(shape_text)
        size = space_size(evaluator, shape)
        goal = (1 + tol) * table_best(evaluator, shape)
        good = sum(
            1
            for (s, _), row in evaluator.rows.items()
            if s == shape and row["status"] == "ok" and row.get("ms") and row["ms"] <= goal
        )
        for sampler in dict.fromkeys(r.sampler for r in runs):
            mine = [r for r in runs if r.shape == shape_text and r.sampler == sampler]
            if not mine:
                continue
            counts = [r.evaluations for r in mine]
            med = statistics.median(counts)
            capped = sum(r.capped for r in mine)
            lines.append(
                f"| {shape_text} | {size} | {good} | {sampler} | {med:g} "
                f"| {quantile(counts, 0.25):g} - {quantile(counts, 0.75):g} "
                f"| {min(counts)} - {max(counts)}{'+' if capped else ''} "
                f"| {100 * med / size:.1f} % | {capped}/{len(mine)} "
                f"| {statistics.median(r.wall_s for r in mine):.2f} |"
            )
        uniform, weighted = random_expectations(evaluator, shape, tol)
        notes.append(
            f"- {shape_text}: {good} of {size} candidates within {100 * tol:g} % -> random's "
            f"expected count {uniform:.0f} drawing uniformly over candidates ((N+1)/(K+1)), "
            f"{weighted:.0f} as Optuna's random sampler draws (family first)."
        )
    return (
        "\n".join(lines)
        + f"\n\nExact expectation for random (the runs above stop at {cap}):\n\n"
        + "\n".join(notes)
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampler", action="append", choices=SAMPLERS)
    parser.add_argument("--shape", action="append")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cap", type=int, default=600)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--table", default=str(DEFAULT_TABLE))
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)

    evaluator = _evaluator(args.table)
    shapes = args.shape or [str(s) for s in evaluator.shapes()]
    samplers = args.sampler or list(DEFAULT_SAMPLERS)
    tasks = [
        (args.table, shape, sampler, seed, args.cap, args.tolerance)
        for shape in shapes
        for sampler in samplers
        for seed in range(args.seeds)
    ]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(one_run, *zip(*tasks, strict=True), chunksize=1))
    total = time.perf_counter() - start
    print(
        f"# {dt.date.today()} · table {Path(args.table).name} · {args.seeds} seeds · "
        f"cap {args.cap} · families {'+'.join(FAMILIES)} · {total:.0f} s in all\n"
    )
    print(summarize(runs, evaluator, args.tolerance, args.cap))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps([asdict(r) for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
