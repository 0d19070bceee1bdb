"""Several GPUs of one host on the search: the same tunes on 1 GPU and on N, compared.

    python benchmarks/multi_gpu.py --out DIR [--gpus 2 [--gpus 4 ...]] [--shapes FILE.csv ...]
        [--limit 8] [--trials 40] [--study-shape 4096x4096x4096] [--study-trials 80]
        [--evaluator gpu|replay]

Runs ``gemmtune tune`` (one study) and then ``gemmtune tune-batch`` (the first ``--limit``
shapes of the ``--shapes`` files, in order, each once) as a user runs them, through the entry
point, first with ``--gpus 1`` and then with each ``--gpus N`` given (repeatable: ``--gpus 2
--gpus 4`` compares 1, 2 and 4); every run on a fresh SQLite database and an empty kernel cache,
so that no run profits from another's compiles or results. With several GPUs the commands
enqueue their shapes and start a ``gemmtune worker`` process per GPU. For each run: the wall
time of the whole command, evaluated candidates (screening trials, not finalists) per minute of
it, which device measured each candidate, any config measured twice in a study, and each
shape's stored best. Writes ``DIR/multi-gpu.json`` with the device, date and versions of the
measurements, and prints a summary per N (throughput ratio N GPUs / 1 GPU; best configs
compared shape by shape).

``--evaluator replay`` runs the same on a CPU (replay workers on fake devices): a check of the
script, not a measurement.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select

import storage
from tuner.core.shape import Shape, parse_shape
from tuner.data import default_suite
from tuner.data.shape_lists import read_shapes


class CommandFailed(Exception):
    """A gemmtune command that exited non-zero or ran past its time."""


def run_command(args: list[str], url: str, cache: Path, timeout_s: float | None) -> float:
    """Run ``gemmtune ARGS --db URL`` with its own kernel cache; its wall time in seconds."""
    env = {**os.environ, "GEMMTUNE_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tuner.cli", *args, "--db", url],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        raise CommandFailed(f"gemmtune {' '.join(args)} ran past {timeout_s} s") from exc
    wall = time.perf_counter() - started
    print(done.stdout, end="")
    if done.returncode != 0:
        tail = done.stderr[-2000:]
        raise CommandFailed(f"gemmtune {' '.join(args)} failed ({done.returncode}):\n{tail}")
    return wall


def stored(url: str) -> dict[str, Any]:
    """Per study: candidates, configs measured twice, how many each GPU measured; the bests."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows = session.scalars(select(storage.Measurement)).all()
            bests = {
                f"{b.shape.m}x{b.shape.n}x{b.shape.k}": {
                    "config": b.measurement.config_name,
                    "ms": b.measurement.ms,
                    "ratio": b.measurement.ratio,
                }
                for b in storage.best_configs(session)
            }
            provenance = next((r.provenance for r in rows if r.status == "ok"), {})
            claims = session.execute(select(storage.Claim.study, storage.Claim.worker)).all()
    finally:
        engine.dispose()
    studies: dict[str, Any] = {}
    for row in rows:
        if row.phase == "final" or row.study is None:
            continue
        study = studies.setdefault(row.study, {"configs": Counter(), "workers": Counter()})
        study["configs"][row.config_name] += 1
    for name, worker in claims:  # host:pid:gpuN claimed (and measured) the candidate
        if name in studies:
            studies[name]["workers"][worker.rsplit(":", 1)[-1]] += 1
    return {
        "studies": {
            name: {
                "evaluated": sum(s["configs"].values()),
                "measured_twice": sorted(c for c, n in s["configs"].items() if n > 1),
                "by_worker": dict(sorted(s["workers"].items())),
            }
            for name, s in studies.items()
        },
        "bests": bests,
        "provenance": provenance,
    }


def one_run(
    label: str, args: list[str], gpus: str, folder: Path, timeout_s: float | None
) -> dict[str, Any]:
    url = f"sqlite:///{folder / (label + '.db')}"
    wall = run_command([*args, "--gpus", gpus], url, folder / f"{label}-kernels", timeout_s)
    result = stored(url)
    evaluated = sum(s["evaluated"] for s in result["studies"].values())
    result.update(
        gpus=gpus,
        wall_s=round(wall, 2),
        evaluated=evaluated,
        per_minute=round(60 * evaluated / wall, 2),
    )
    print(f"{label}: --gpus {gpus}: {evaluated} evaluated in {wall:.1f} s")
    return result


def compare(one: dict[str, Any], many: dict[str, Any]) -> dict[str, Any]:
    """Throughput ratio and best configs, N GPUs against 1."""
    shapes = {}
    for shape, best in one["bests"].items():
        other = many["bests"].get(shape)
        shapes[shape] = {
            "one_gpu": best,
            "n_gpus": other,
            "n_gpus_ms_over_one": None
            if other is None or not best["ms"] or not other["ms"]
            else round(other["ms"] / best["ms"], 4),
        }
    return {
        "throughput_ratio": round(many["per_minute"] / one["per_minute"], 3),
        "wall_ratio": round(many["wall_s"] / one["wall_s"], 3),
        "speedup": round(one["wall_s"] / many["wall_s"], 3),
        "measured_twice": any(s["measured_twice"] for s in many["studies"].values()),
        "shapes": shapes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--gpus", action="append", help="a several-GPU run's --gpus; repeatable (default 2)"
    )
    parser.add_argument(
        "--shapes", type=Path, action="append", help="shape files, repeatable (default the suite)"
    )
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--study-shape", type=parse_shape, default=Shape(4096, 4096, 4096))
    parser.add_argument("--study-trials", type=int, default=80)
    parser.add_argument("--evaluator", default="gpu", choices=("gpu", "replay"))
    parser.add_argument("--command-timeout", type=float, default=None, help="seconds per command")
    parser.add_argument("--code", default=None, help="the gemmtune commit measured")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    files = options.shapes or [default_suite()]
    every = [shape for file in files for shape in read_shapes(file)]
    shapes = list(dict.fromkeys(every))[: options.limit]
    common = ["--evaluator", options.evaluator]
    study_args = ["tune", "--shape", str(options.study_shape), "--trials",
                  str(options.study_trials), *common]  # fmt: skip
    batch_args = ["tune-batch", "SHAPES", "--trials", str(options.trials), *common]
    document: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "evaluator": options.evaluator,
        "shapes": [str(s) for s in shapes],
        "trials": options.trials,
        "study_settings": {"shape": str(options.study_shape), "trials": options.study_trials},
        "code": options.code,
        "python": sys.version.split()[0],
    }
    path = options.out / "multi-gpu.json"
    with tempfile.TemporaryDirectory(prefix="gemmtune-multi-gpu-") as tmp:
        folder = Path(tmp)
        batch_file = folder / "shapes.csv"  # the first --limit shapes of the files, once each
        batch_file.write_text("".join(f"{s.m},{s.n},{s.k}\n" for s in shapes))
        batch_args[1] = str(batch_file)
        for name, args in (("study", study_args), ("batch", batch_args)):
            runs: dict[str, Any] = {}
            document[name] = runs
            counts = [("1", "one_gpu")] + [(g, f"gpus_{g}") for g in options.gpus or ["2"]]
            for gpus, key in counts:
                try:
                    runs[key] = one_run(
                        f"{name}-{key}", args, gpus, folder, options.command_timeout
                    )
                except CommandFailed as exc:  # kept in the file; the other runs go on
                    runs[key] = {"gpus": gpus, "error": str(exc)}
                    print(exc)
                if runs[key].get("provenance"):  # one stored measurement's: device, versions
                    document["provenance"] = runs[key]["provenance"]
                path.write_text(json.dumps(document, indent=1) + "\n")  # whatever happens next
            for gpus, key in counts[1:]:
                if "error" in runs["one_gpu"] or "error" in runs[key]:
                    continue
                summary = runs[f"comparison_{gpus}"] = compare(runs["one_gpu"], runs[key])
                print(
                    f"{name}, --gpus {gpus}: {runs['one_gpu']['per_minute']} -> "
                    f"{runs[key]['per_minute']} candidates/min "
                    f"({summary['throughput_ratio']}x), wall {runs['one_gpu']['wall_s']} -> "
                    f"{runs[key]['wall_s']} s ({summary['speedup']}x), measured twice: "
                    f"{summary['measured_twice']}"
                )
    path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
