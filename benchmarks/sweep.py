"""Exhaustive sweep: every candidate of some families on some shapes, measured on the GPU.

    python benchmarks/sweep.py --family warptile --family pipelined \
        --shape 4096x4096x4096 --shape 1000x1000x1000 --out $OUT/sweep.jsonl \
        [--resume previous.jsonl] [--max-minutes 9] [--where THREADS=128,256 --where BK=16,32]

Writes a sweep table (``tuner.data.sweep_table``): a header with device, date and versions, then one
line per (shape, config), every status, failures with their reason. ``tuner.search.replay``,
``tuner.search.priors`` and the server's preload read it. Kernels do not depend on the shape, so
each family's candidates (union over shapes) compile once, on every core, while they are measured
one by one in the isolated GPU worker. ``--resume`` skips rows already measured (a sweep longer than
one GPU session runs in pieces). ``--where NAME=V1,V2`` keeps only the candidates whose parameter
NAME takes one of the values (a slice of a large space).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.core.config import Config
from tuner.core.shape import parse_shape
from tuner.data import SweepHeader, SweepRow, SweepTableWriter, read_sweep_table
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.space import Space


def already_done(paths: list[Path]) -> set[tuple[str, str]]:
    """(shape, config name) of every row of the tables a resumed sweep continues."""
    return {
        (str(row.shape), row.config_name) for path in paths for row in read_sweep_table(path).rows
    }


def parse_where(items: list[str]) -> dict[str, set[int]]:
    """``["THREADS=128,256", "BK=32"]`` -> ``{"THREADS": {128, 256}, "BK": {32}}``."""
    where: dict[str, set[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        try:
            parsed = {int(v) for v in values.split(",")}
        except ValueError:
            parsed = set()
        if not sep or not name.strip() or not parsed:
            raise SystemExit(f"--where {item!r} must look like NAME=INT[,INT...]")
        where[name.strip().upper()] = parsed
    return where


def selected(config: Config, where: dict[str, set[int]]) -> bool:
    """True when every parameter named in ``where`` that the config has takes a listed value."""
    params = config.as_dict()
    return all(params[name] in values for name, values in where.items() if name in params)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", action="append", required=True)
    parser.add_argument("--shape", action="append", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--resume", type=Path, action="append", default=[])
    parser.add_argument("--budget-ms", type=float, default=25.0, help="timed kernel ms per config")
    parser.add_argument("--max-minutes", type=float, default=9.0)
    parser.add_argument("--where", action="append", default=[], help="NAME=V1,V2: a slice")
    args = parser.parse_args()
    where = parse_where(args.where)

    deadline = time.monotonic() + args.max_minutes * 60
    done = already_done(args.resume)
    shapes = [parse_shape(s) for s in args.shape]
    evaluator = GpuEvaluator(budget_ms=args.budget_ms)
    header = SweepHeader(
        evaluator.device.name,
        evaluator.device.arch,
        evaluator.provenance,
        dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        {
            "budget_ms": args.budget_ms,
            "where": {name: sorted(values) for name, values in where.items()},
        },
    )
    with SweepTableWriter(args.out, header) as out:
        for family in args.family:
            todo = {
                s: [
                    c
                    for c in Space(family, s, evaluator.device).candidates()
                    if (str(s), c.name) not in done and selected(c, where)
                ]
                for s in shapes
            }
            # Compiled on every core, in the order they are measured, while the first run.
            union = list(dict.fromkeys(c for configs in todo.values() for c in configs))
            for config in union:
                evaluator.prepare(config)
            print(f"{family}: {len(union)} configs to compile", flush=True)
            for shape, configs in todo.items():
                best = None
                for config in configs:
                    if time.monotonic() > deadline:
                        print("time limit reached", flush=True)
                        evaluator.close()
                        return
                    r = evaluator.evaluate(config, shape)
                    out.add(SweepRow.from_result(r, shape))
                    if r.ms is not None and (best is None or r.ms < best.ms):
                        best = r
                if best is not None and best.tflops and best.ratio:
                    print(
                        f"  {shape}: {len(configs)} measured, best {best.config_name} "
                        f"{best.tflops:.1f} TFLOP/s, x{best.ratio:.2f} cuBLAS",
                        flush=True,
                    )
    evaluator.close()


if __name__ == "__main__":
    main()
