"""Cold and transferred search on the replayed H100 sweeps, one shape held out at a time.

    python benchmarks/search_loso.py [--out benchmarks/results/search-loso.json]
        [--cap 200] [--seeds 3] [--tolerance 0.05] [--shape MxNxK ...]

Every committed H100 sweep table is replayed together. For each shape the tables hold (the
held-out shape), studies over the default families the tables measured at that shape run until
the best time so far is within ``--tolerance`` of the best the tables hold for that shape, or
``--cap`` candidates. Each study starts, as ``gemmtune tune`` does, from the untuned answer
(the default rule when nothing is known, else the best config of the nearest other shape), and:

* ``ranked cold``: the cost model on the sm_90 table's rates, nothing measured before
  (what a user of a new GPU gets with ``--warm-start 0`` and an empty database);
* ``ranked transfer``: the same, plus every other shape's measurements as the device's history
  (leave-one-shape-out: nothing of the held-out shape is known);
* ``tpe cold`` and ``random cold``: Optuna's samplers, for comparison.

Nothing runs on a GPU. Writes one JSON with every run (the counts and the best-so-far curve)
and prints a table: per shape and mode, the median count and how many runs reached the target
within 40 candidates.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.answers.default_rule import default_config
from tuner.core.config import Config
from tuner.core.dims import shape_distance
from tuner.core.shape import Shape, parse_shape
from tuner.data import results_dir, sweep_tables
from tuner.kernels.families import checked_config
from tuner.run.runner import DEFAULT_FAMILIES
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.samplers import Observation
from tuner.search.study import Progress, Study

MODES = ("ranked cold", "ranked transfer", "tpe cold", "random cold")
BUDGET = 40  # the budget: within 5 % after at most this many candidates


class Reached(Exception):
    """Raised from the progress callback to end a study at the target."""


@dataclass(frozen=True)
class Run:
    shape: str
    mode: str
    seed: int
    count: int | None  # candidates until within tolerance; None: not within the cap
    evaluated: int
    best_ms: float
    table_best_ms: float
    curve: list[float]  # best-so-far / table best after each candidate
    seconds: float


def held_out_history(replay: ReplayEvaluator, shape: Shape) -> list[Observation]:
    """Every ok row of the tables except the held-out shape's."""
    return [
        Observation(s, name, row.ok_ms)
        for (s, name), row in replay.rows.items()
        if s != shape and row.ok_ms is not None
    ]


def first_answer(shape: Shape, history: list[Observation], candidates: set[str]) -> Config:
    """What the service would answer before tuning: the nearest other shape's best, if any
    is known (and measurable here), else the default rule."""
    best: dict[Shape, tuple[float, str]] = {}
    for obs in history:
        if obs.shape not in best or obs.ms < best[obs.shape][0]:
            best[obs.shape] = (obs.ms, obs.config_name)
    for other in sorted(best, key=lambda s: shape_distance(shape.dims, s.dims)):
        name = best[other][1]
        if name in candidates:
            return checked_config(name)
    return default_config(shape.m, shape.n)


def one_run(
    replay: ReplayEvaluator, shape: Shape, mode: str, seed: int, cap: int, tolerance: float
) -> Run:
    sampler, _, knowledge = mode.partition(" ")
    families = tuple(f for f in DEFAULT_FAMILIES if f in replay.families)
    held = replay.measured_configs(shape) or set()
    table_best = min(
        row.ok_ms
        for (s, _), row in replay.rows.items()
        if s == shape and row.ok_ms is not None and row.family in families
    )
    history = held_out_history(replay, shape) if knowledge == "transfer" else []
    first = first_answer(shape, history, held)
    study = Study(
        shape,
        families,
        replay,
        MemoryRecorder(history),
        sampler,
        seed=seed,
        starts=[first],
        finalists=0,
    )
    curve: list[float] = []

    def watch(p: Progress) -> None:
        best = p.best.ms if p.best and p.best.ms else math.inf
        curve.append(best / table_best)
        if best <= table_best * (1 + tolerance):
            raise Reached

    started = time.perf_counter()
    with contextlib.suppress(Reached):
        study.run(trials=cap, on_progress=watch)
    seconds = time.perf_counter() - started
    reached = curve[-1] <= 1 + tolerance if curve else False
    return Run(
        str(shape),
        mode,
        seed,
        len(curve) if reached else None,
        len(curve),
        min(curve) * table_best if curve else math.inf,
        table_best,
        curve,
        seconds,
    )


def summary(runs: list[Run]) -> str:
    lines = [
        "| shape | mode | runs | median candidates to 5 % | within 5 % by 40 | best after 40 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for shape in sorted({r.shape for r in runs}, key=lambda s: parse_shape(s).flops):
        for mode in MODES:
            mine = [r for r in runs if r.shape == shape and r.mode == mode]
            if not mine:
                continue
            counts = [r.count if r.count is not None else math.inf for r in mine]
            median = statistics.median(counts)
            by_budget = sum(c <= BUDGET for c in counts)
            after = statistics.median(r.curve[min(BUDGET, len(r.curve)) - 1] for r in mine)
            shown = "cap" if math.isinf(median) else f"{median:g}"
            lines.append(
                f"| {shape} | {mode} | {len(mine)} | {shown} | {by_budget}/{len(mine)} | "
                f"{100 * (after - 1):.1f} % over |"
            )
    for mode in MODES:
        mine = [r for r in runs if r.mode == mode]
        if mine:
            counts = [r.count if r.count is not None else math.inf for r in mine]
            per_shape = [
                statistics.median(
                    r.count if r.count is not None else math.inf for r in mine if r.shape == shape
                )
                for shape in sorted({r.shape for r in mine})
            ]
            lines.append(
                f"\n{mode}: median over shapes of the per-shape median "
                f"{statistics.median(per_shape):g}; "
                f"{sum(c <= BUDGET for c in counts)}/{len(counts)} runs within 5 % by {BUDGET}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cap", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--shape", action="append", type=parse_shape)
    parser.add_argument("--mode", action="append", choices=MODES)
    args = parser.parse_args(argv)
    replay = ReplayEvaluator(sweep_tables(results_dir()))
    shapes = args.shape or replay.shapes()
    runs: list[Run] = []
    for shape in shapes:
        for mode in args.mode or MODES:
            for seed in range(args.seeds):
                run = one_run(replay, shape, mode, seed, args.cap, args.tolerance)
                runs.append(run)
                print(
                    f"{run.shape:>18} {mode:16} seed {seed}: "
                    f"{run.count if run.count is not None else 'cap'} ({run.seconds:.1f} s)",
                    flush=True,
                )
    text = summary(runs)
    print(text)
    if args.out:
        document: dict[str, Any] = {
            "what": "leave-one-shape-out search on the replayed H100 sweep tables",
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()} {platform.system()}, Python "
            f"{platform.python_version()}; no GPU (replay)",
            "tables": [p.name for p in sweep_tables(results_dir())],
            "device": replay.device.name,
            "tolerance": args.tolerance,
            "cap": args.cap,
            "runs": [run.__dict__ for run in runs],
            "summary": text,
        }
        args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
