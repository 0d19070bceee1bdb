"""How well the cost model (``tuner.model.cost_model.estimate``) orders measured sweep tables.

    python benchmarks/model_agreement.py [--table FILE ...] [--min-rows 20] [--json OUT]

Default tables: every H100 sweep table the package ships but skinny's and dmma's (the model
has no FP64 tensor-core branch). For each table and
shape (its ``ok`` rows) it prints the rows, the Spearman rank correlation between the estimate
and the measured time, the model rank of the first config within 2 % of the table's best (the
candidates a search that followed the model blindly would measure to get there) and the best
time among the model's first ten as a share of the table's best. Then, over all tables, the
median of measured time / estimate per family and warps per SM, divided by the median over all
rows (1.00 = as the model expects relative to the rest; above 1 = slower than it thinks).
Nothing runs on a GPU. ``--warp-issue-share Q`` replaces the model's ``issue_efficiency`` for
the run with another hypothesis: a warp issues in at most a share Q of its scheduler's clocks, so
a scheduler with w warps issues in min(1, Q * w) of them (warps dealt round-robin).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from unittest.mock import patch

import numpy as np

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.data import results_dir, sweep_tables
from tuner.kernels.families import get_family, parse_config
from tuner.model import throughput, tile_work
from tuner.model.cost_model import Estimate, estimate
from tuner.search.replay import ReplayEvaluator

TOLERANCE = 0.02  # "within 2 % of the best", as benchmarks/search.py
TOP = 10


@dataclass(frozen=True)
class Agreement:
    """The model against one table's measurements of one shape."""

    table: str
    shape: str
    rows: int
    spearman: float
    first_within: int  # model rank (1-based) of the first config within TOLERANCE of the best
    top_share: float  # table's best time / best time among the model's first TOP


def ranks(values: np.ndarray) -> np.ndarray:
    """0-based ranks, ties given the mean of the ranks they span."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + ends - 1) / 2.0)[inverse]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation of two equally long sequences."""
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def agreement(table: str, shape: Shape, estimates: np.ndarray, times: np.ndarray) -> Agreement:
    """Compare estimated cycles with measured times of the same configs."""
    order = np.argsort(estimates, kind="stable")
    good = times <= times.min() * (1 + TOLERANCE)
    return Agreement(
        table=table,
        shape=str(shape),
        rows=len(times),
        spearman=spearman(estimates, times),
        first_within=int(np.flatnonzero(good[order])[0]) + 1,
        top_share=float(times.min() / times[order[:TOP]].min()),
    )


def warps_per_sm(config: Config, model: Estimate, warp_size: int) -> int:
    """Resident warps per SM the model assumes in a full wave (``model``: its estimate)."""
    params = config.as_dict()
    threads = get_family(config.family).threads(params)
    blocks = (
        params["SMBLOCKS"]
        if get_family(config.family).cost.schedule == "persistent"
        else model.blocks_per_sm
    )
    return -(-threads // warp_size) * blocks


def capped_issue(share: float) -> Callable[[int], float]:
    """Issue efficiency if each warp fills at most ``share`` of its scheduler's clocks."""

    def efficiency(warps: int) -> float:
        w = max(warps, 1)
        per = [
            w // throughput.SCHEDULERS + (i < w % throughput.SCHEDULERS)
            for i in range(throughput.SCHEDULERS)
        ]
        return sum(min(1.0, share * n) for n in per) / throughput.SCHEDULERS

    return efficiency


def collect(
    tables: list[Path], min_rows: int
) -> tuple[list[Agreement], dict[tuple[str, int], list[float]]]:
    """Per table and shape, the agreement; per (family, warps per SM), log(measured/estimated)."""
    results: list[Agreement] = []
    errors: dict[tuple[str, int], list[float]] = defaultdict(list)
    for path in tables:
        replay = ReplayEvaluator(path)
        for shape in replay.shapes():
            ok = [
                (parse_config(name), ms)
                for (s, name), row in replay.rows.items()
                if s == shape and (ms := row.ok_ms) is not None
            ]
            if len(ok) < min_rows:
                continue
            models = [estimate(c, shape, replay.device) for c, _ in ok]
            est = np.array([m.cycles for m in models])
            times = np.array([ms for _, ms in ok])
            results.append(agreement(path.name, shape, est, times))
            for (config, ms), model in zip(ok, models, strict=True):
                warps = warps_per_sm(config, model, replay.device.warp_size)
                errors[(config.family, warps)].append(math.log(ms / model.cycles))
    return results, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, action="append", default=None)
    parser.add_argument("--min-rows", type=int, default=20, help="skip smaller shape slices")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--warp-issue-share", type=float, default=None, metavar="Q")
    args = parser.parse_args(argv)
    tables = args.table or sorted(
        p
        for p in sweep_tables(results_dir())
        if p.name.startswith("h100-") and "skinny" not in p.name and "dmma" not in p.name
    )
    model = (
        patch.object(tile_work, "issue_efficiency", capped_issue(args.warp_issue_share))
        if args.warp_issue_share is not None
        else contextlib.nullcontext()
    )
    with model:
        results, errors = collect(tables, args.min_rows)

    print(f"{'table':44s} {'shape':16s} {'rows':>5s} {'rho':>6s} {'first':>6s} {'top10':>6s}")
    for r in results:
        print(
            f"{r.table:44s} {r.shape:16s} {r.rows:5d} {r.spearman:6.2f} {r.first_within:6d} "
            f"{r.top_share:6.2f}"
        )
    print(
        f"mean Spearman {statistics.mean(r.spearman for r in results):.3f}, median first within "
        f"{TOLERANCE:.0%} {statistics.median(r.first_within for r in results)}, geometric mean "
        f"top-{TOP} share {math.exp(statistics.mean(math.log(r.top_share) for r in results)):.3f}"
    )
    overall = statistics.median(x for xs in errors.values() for x in xs)
    by_warps = {
        f"{family} {warps}": {
            "rows": len(xs),
            "relative_error": math.exp(statistics.median(xs) - overall),
        }
        for (family, warps), xs in sorted(errors.items())
    }
    print("measured / estimated, relative to the median of all rows, by family and warps per SM:")
    for key, value in by_warps.items():
        print(f"  {key:24s} {value['rows']:5d} rows  {value['relative_error']:.2f}")
    if args.json:
        doc = {
            "what": "the cost model (tuner.model.cost_model) against measured sweep tables",
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "tables": [p.name for p in tables],
            "tolerance": TOLERANCE,
            "issue_model": (
                f"min(1, {args.warp_issue_share} * warps per scheduler)"
                if args.warp_issue_share is not None
                else f"tuner.model.throughput.issue_efficiency (WARP_READY {throughput.WARP_READY})"
            ),
            "agreement": [asdict(r) for r in results],
            "by_family_and_warps": by_warps,
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
