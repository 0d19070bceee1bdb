"""The search on the GPU: throughput, cold and warm studies on held-out shapes, fidelity.

    python benchmarks/search_gpu.py --out DIR [--shapes benchmarks/heldout.csv]
        [--trials 40] [--reference-trials 120] [--throughput-trials 80] [--mode ...]

One GPU evaluator (compiler pool + worker process) serves every study, as in ``tune-batch``.

1. Throughput: an 80-candidate ``ranked`` study of 4096^3 and of 1024x1024x512 from a fresh
   database and an empty kernel cache (the run's own, under a temporary folder): evaluated
   candidates per second of the study loop.
2. For every held-out shape (``benchmarks/heldout.csv``), on fresh SQLite databases:
   * ``ranked cold``: ``--trials`` candidates, ``--warm-start 0``, an empty database (what a
     user of a GPU with no committed data gets);
   * ``tpe cold``: the same with TPE (the previous default);
   * ``ranked warm``: ``--trials`` candidates with the default warm start (the committed
     results of this kind of GPU);
   * ``reference``: ``--reference-trials`` candidates, warm, to find the best config known
     for the shape (the best of every run of the shape is the reference).
   Each study records its candidates in order, its wall time and its stored (re-measured) best.
3. Fidelity: every study's stored best is re-measured as ``gemmtune bench`` does (verified,
   then 5 alternating rounds with cuBLAS); stored ratio / re-measured ratio per study.
4. Time to a tuned answer: ``gemmtune tune --shape S`` with its defaults, as a user runs it,
   on two shapes, wall clock of the whole command.

Writes ``DIR/search-gpu.json`` (every number above, with device, date and versions) and prints
a summary.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage import open_database
from tuner.core.shape import Shape, parse_shape
from tuner.data.shape_lists import read_suite
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.families import checked_config
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.request import WARM_START, TuneRequest
from tuner.run.runner import DEFAULT_FAMILIES
from tuner.run.tune import tune
from tuner.search.study import Progress

HERE = Path(__file__).resolve().parent
MODES = {  # name: (sampler, warm start, trials option)
    "ranked cold": ("ranked", 0, "trials"),
    "tpe cold": ("tpe", 0, "trials"),
    "ranked warm": ("ranked", WARM_START, "trials"),
    "reference": ("ranked", WARM_START, "reference_trials"),
}
THROUGHPUT_SHAPES = (Shape(4096, 4096, 4096), Shape(1024, 1024, 512))
TOLERANCE = 0.05


@dataclass
class Clock:
    """Progress report that keeps when each candidate finished."""

    started: float = field(default_factory=time.perf_counter)
    stamps: list[float] = field(default_factory=list)

    def start(self, label: str, total: int) -> None:
        self.started = time.perf_counter()

    def update(self, progress: Progress) -> None:
        self.stamps.append(time.perf_counter() - self.started)


def one_study(
    gpu: GpuEvaluator, shape: Shape, sampler: str, warm_start: int, trials: int, folder: Path
) -> dict[str, Any]:
    """A study on a fresh database: what it measured, when, and what it stored."""
    handle, name = tempfile.mkstemp(suffix=".db", dir=folder)
    os.close(handle)
    url = f"sqlite:///{name}"
    sessions = open_database(url, optuna_tables=True)
    clock = Clock()
    begun = time.perf_counter()
    request = TuneRequest(
        (shape,), DEFAULT_FAMILIES, sampler=sampler, seed=0, trials=trials,
        warm_start=warm_start, database_url=url,
    )  # fmt: skip
    [progress] = tune(
        request, workers=Workers([Worker(0, gpu)]), sessions=sessions, new_report=lambda: clock
    )
    total = time.perf_counter() - begun
    screened = [
        {
            "config": r.config_name,
            "status": r.status,
            "ms": r.ms,
            "ratio": r.ratio,
            "compile_wait_s": r.provenance.get("compile_wait_s"),
            "measure_s": r.provenance.get("measure_s"),
        }
        for r in progress.history
    ]
    best = progress.best
    return {
        "shape": str(shape),
        "sampler": sampler,
        "warm_start": warm_start,
        "trials": trials,
        "evaluated": progress.evaluated,
        "seconds_total": total,
        "seconds_to_last_candidate": clock.stamps[-1] if clock.stamps else None,
        "candidates_per_s": (
            len(clock.stamps) / clock.stamps[-1] if clock.stamps and clock.stamps[-1] else None
        ),
        "candidates": screened,
        "notes": progress.notes,
        "best": None
        if best is None
        else {
            "config": best.config_name,
            "ms": best.ms,
            "cublas_ms": best.cublas_ms,
            "ratio": best.ratio,
            "final": bool(progress.finalists),  # the best is then the fastest finalist
        },
        "first_answer": screened[0] if screened else None,
    }


def remeasure(gpu: GpuEvaluator, study: dict[str, Any], rounds: int = 5) -> dict[str, Any]:
    """The stored best re-measured as ``gemmtune bench`` does."""
    best = study["best"]
    if best is None:
        return {"status": "no best"}
    (answer,) = gpu.compare([checked_config(best["config"])], parse_shape(study["shape"]), rounds)
    stored, again = best["ratio"], answer.ratio
    return {
        "status": answer.status,
        "ms": answer.ms,
        "cublas_ms": answer.cublas_ms,
        "ratio": again,
        "stored_over_remeasured": stored / again if stored and again else None,
    }


def time_cli(shape: Shape, folder: Path) -> dict[str, Any]:
    """``gemmtune tune --shape S`` with its defaults on a fresh database: wall clock."""
    url = f"sqlite:///{folder / f'cli-{shape}.db'}"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "tune", "--shape", str(shape), "--db", url],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "shape": str(shape),
        "seconds": time.perf_counter() - started,
        "exit": done.returncode,
        "stdout": done.stdout[-2000:],
        "stderr": done.stderr[-2000:],
    }


def candidates_to_within(study: dict[str, Any], reference_ms: float) -> int | None:
    """Evaluated candidates until the best so far is within TOLERANCE of ``reference_ms``."""
    best = math.inf
    for count, candidate in enumerate(study["candidates"], 1):
        if candidate["status"] == "ok" and candidate["ms"] is not None:
            best = min(best, candidate["ms"])
        if best <= reference_ms * (1 + TOLERANCE):
            return count
    return None


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0 to 1) of ``values`` by linear interpolation between the two nearest
    ranks, counted from 0 at q·(n - 1): NumPy's default and Excel's PERCENTILE.INC. Taking the
    lower rank alone would give, for 36 values, the 88.9th percentile as the 90th."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(document: dict[str, Any]) -> str:
    lines = ["throughput (candidates/s of the study loop, cold kernel cache):"]
    for study in document["throughput"]:
        lines.append(
            f"  {study['shape']}: {study['candidates_per_s']:.1f}/s "
            f"({study['evaluated']} in {study['seconds_to_last_candidate']:.1f} s)"
        )
    reference: dict[str, float] = {}
    for study in document["studies"]:
        for candidate in study["candidates"]:
            if candidate["status"] == "ok" and candidate["ms"]:
                shape = study["shape"]
                reference[shape] = min(reference.get(shape, math.inf), candidate["ms"])
    lines.append("per shape and mode: candidates to 5 % of the best known | stored ratio | s")
    by_mode: dict[str, list[tuple[int | None, float | None]]] = {}
    for study in document["studies"]:
        count = candidates_to_within(study, reference[study["shape"]])
        ratio = (study["best"] or {}).get("ratio")
        by_mode.setdefault(study["mode"], []).append((count, ratio))
        lines.append(
            f"  {study['shape']:>18} {study['mode']:12} "
            f"{count if count is not None else '-':>4} | "
            f"{ratio if ratio is None else f'{ratio:.2f}x'} | {study['seconds_total']:.1f}"
        )
    for mode, rows in by_mode.items():
        counts = [c if c is not None else math.inf for c, _ in rows]
        ratios = [r for _, r in rows if r]
        geo = math.exp(statistics.mean(math.log(r) for r in ratios)) if ratios else float("nan")
        lines.append(
            f"{mode}: median candidates to 5 % {statistics.median(counts)}, "
            f"within by 40: {sum(c <= 40 for c in counts)}/{len(counts)}, geomean ratio {geo:.3f}"
        )
    fid = [
        f["stored_over_remeasured"] for f in document["fidelity"] if f.get("stored_over_remeasured")
    ]
    if fid:
        deviations = [abs(x - 1) for x in fid]
        lines.append(
            f"fidelity: stored/re-measured median {statistics.median(fid):.3f}, 90th percentile "
            f"of |x-1| {percentile(deviations, 0.9):.3f} (linear interpolation) over {len(fid)}"
        )
    for cli in document["cli"]:
        lines.append(
            f"gemmtune tune --shape {cli['shape']}: {cli['seconds']:.1f} s (exit {cli['exit']})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", type=Path, default=HERE / "heldout.csv")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--reference-trials", type=int, default=120)
    parser.add_argument("--throughput-trials", type=int, default=80)
    parser.add_argument("--mode", action="append", choices=list(MODES))
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--rows", default=":", help="a slice of the shapes file, e.g. 0:6")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="search-gpu-"))
    # Empty kernel caches of this run's own (a cubin depends on the config, not the shape, so
    # an earlier run's cache would make the first studies look faster than a new user's): the
    # service's, and NVRTC's (12.9 and newer keep compiles in the driver's ComputeCache).
    os.environ["GEMMTUNE_CACHE_DIR"] = str(folder / "kernels")
    os.environ["CUDA_CACHE_PATH"] = str(folder / "nvrtc")
    gpu = GpuEvaluator()
    document: dict[str, Any] = {
        "what": "gemmtune search on the GPU: throughput, cold and warm studies, fidelity",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": gpu.device.name,
        "provenance": gpu.provenance,
        "compile_workers": gpu.pool.workers,
        "families": list(DEFAULT_FAMILIES),
        "tolerance": TOLERANCE,
        "throughput": [],
        "studies": [],
        "fidelity": [],
        "cli": [],
    }
    path = args.out / f"search-gpu-{args.rows.replace(':', '-')}.json"

    def save() -> None:
        path.write_text(json.dumps(document, indent=1) + "\n")

    try:
        for shape in () if args.skip_throughput else THROUGHPUT_SHAPES:
            study = one_study(gpu, shape, "ranked", 0, args.throughput_trials, folder)
            document["throughput"].append(study)
            print(f"throughput {shape}: {study['candidates_per_s']:.1f}/s", flush=True)
            save()
        first, _, last = args.rows.partition(":")
        rows = read_suite(args.shapes)[int(first) if first else None : int(last) if last else None]
        for entry in rows:
            for mode in args.mode or list(MODES):
                sampler, warm, trials_option = MODES[mode]
                trials = getattr(args, trials_option)
                study = one_study(gpu, entry.shape, sampler, warm, trials, folder)
                study.update(mode=mode, label=entry.label)
                document["studies"].append(study)
                best = study["best"] or {}
                print(
                    f"{entry.shape} {mode}: {study['evaluated']} in "
                    f"{study['seconds_total']:.1f} s, best {best.get('config')} "
                    f"{best.get('ratio')}",
                    flush=True,
                )
                save()
        for study in document["studies"]:
            check = remeasure(gpu, study)
            document["fidelity"].append(
                {"shape": study["shape"], "mode": study["mode"], "stored": study["best"], **check}
            )
        save()
    finally:
        gpu.close()
    if not args.skip_cli:
        for shape in (Shape(3072, 3072, 3072), Shape(1531, 2053, 997)):
            document["cli"].append(time_cli(shape, folder))
            save()
    text = summarize(document)
    document["summary"] = text
    save()
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
