"""What a study's finalists wait for before their rounds beside cuBLAS (``final_compiles`` in its
``seconds:`` line): every kernel the finalists' re-measurement needed, when it was first asked
to compile (relative to the search's end), when it was found ready, and what it is to the
finalists (a finalist measured here, a stream-K twin, an operand mode, the vendor's call), and the
re-measurement's calls beside cuBLAS in the order they ran.

    python benchmarks/final_waits.py --out waits.json [--shape 4096x4096x4096] [--trials 80]
        [--runs 3]

One GPU, one study per run, each on a fresh SQLite database and empty kernel caches, as
``tune`` runs it (``build_study``: the default families, warm starts, the probed rates).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage import open_database
from tuner.core.config import Config
from tuner.core.result import Comparison
from tuner.core.shape import Shape, parse_shape
from tuner.gpu.worker import GpuEvaluator
from tuner.run.request import TuneRequest
from tuner.run.runner import build_study


class Watched:
    """The GPU evaluator, with the moment each config was first prepared and first ready."""

    def __init__(self, inner: GpuEvaluator) -> None:
        self._inner = inner
        self.prepared: dict[str, float] = {}
        self.ready_at: dict[str, float] = {}
        self.compared: list[tuple[float, float, list[str], int]] = []  # began, ended, configs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def prepare(self, config: Config) -> None:
        self.prepared.setdefault(config.name, time.perf_counter())
        self._inner.prepare(config)

    def ready(self, config: Config) -> bool:
        ready = self._inner.ready(config)
        if ready:
            self.ready_at.setdefault(config.name, time.perf_counter())
        return ready

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        began = time.perf_counter()
        comparisons = self._inner.compare(configs, shape, rounds, budget_ms)
        self.compared.append((began, time.perf_counter(), [c.name for c in configs], rounds))
        return comparisons


def one_run(shape: Shape, trials: int, root: Path) -> dict[str, Any]:
    os.environ["GEMMTUNE_CACHE_DIR"] = str(root / "cache")
    os.environ["CUDA_CACHE_PATH"] = str(root / "nvrtc")
    url = f"sqlite:///{root / 'tune.db'}"
    sessions = open_database(url, optuna_tables=True)
    evaluator = GpuEvaluator(0)
    watched = Watched(evaluator)
    try:
        request = TuneRequest((shape,), trials=trials, database_url=url)
        study, _ = build_study(request, shape, watched, sessions)
        progress = study.search(trials)
        searched = time.perf_counter()
        needed: list[Config] = []
        real_compiled = study._compiled

        def compiled(configs: Sequence[Config], within_s: float | None = None) -> None:
            needed.extend(c for c in configs if c not in needed)
            real_compiled(configs, within_s)

        study._compiled = compiled  # type: ignore[method-assign]
        began = time.perf_counter()
        progress = study.finish(progress)
        chosen = set(study._chosen(study._done))
        rows = []
        for config in needed:
            name = config.name
            role = (
                "vendor" if name in chosen and config.family.startswith("cublas") else
                "finalist, measured here" if name in chosen and name in study._started else
                "finalist, measured by another worker" if name in chosen else "extra"
            )  # fmt: skip
            asked = watched.prepared.get(name)
            ready = watched.ready_at.get(name)
            rows.append(
                {
                    "config": name,
                    "role": role,
                    "asked_s": None if asked is None else round(asked - searched, 3),
                    "ready_s": None if ready is None else round(ready - searched, 3),
                }
            )
        study.close()
        return {
            "seconds": progress.seconds,
            "finals_began_s": round(began - searched, 3),
            "best": progress.best.config_name if progress.best else None,
            "needed": rows,
            "compare_calls": [
                {
                    "began_s": round(start - searched, 3),
                    "ended_s": round(end - searched, 3),
                    "rounds": rounds,
                    "configs": names,
                }
                for start, end, names, rounds in watched.compared
                if start >= began
            ],
        }
    finally:
        evaluator.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shape", type=parse_shape, default=Shape(4096, 4096, 4096))
    parser.add_argument("--trials", type=int, default=80)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="final-waits-") as tmp:
            run = one_run(args.shape, args.trials, Path(tmp))
        waits = [r for r in run["needed"] if (r["ready_s"] or 0) > 0.05]
        print(f"run {i}: seconds {run['seconds']}; ready after the search: {waits}", flush=True)
        runs.append(run)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    args.out.write_text(
        json.dumps(
            {
                "what": __doc__.splitlines()[0],
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "commit": commit,
                "shape": str(args.shape),
                "trials": args.trials,
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
