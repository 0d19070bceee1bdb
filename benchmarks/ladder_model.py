"""How well the cost model orders measured ladder runs (``hopper_ladder.py`` files): no GPU.

    python benchmarks/ladder_model.py --run FILE [--run FILE ...] --out model.json

A ladder file holds fixed configs timed beside cuBLAS on many shapes. For every shape, each pair
of its verified configs whose measured times differ by more than ``--margin`` (2 %) is a
question the cost model (``tuner.model.cost_model.estimate``, the device's table rates: what a
study without probed rates ranks by) answers right when it estimates the faster one faster; a
pair it estimates equal counts as wrong. Reported per group of shapes (by rounds of output
tiles of the faster config over the device's SMs, the quantity that decides how full a
persistent grid runs) and for held-out rows apart: pairs, agreement, and the median of measured
time over estimate (1.00 = as fast as the model thinks); and per shape the model's pick (the
config it estimates fastest among those measured) as a share of the measured best, with their
geometric mean and lowest. ``--tma-l2-scale S`` (repeatable) reruns the comparison with the L2
bytes of a ``tma_ws`` k tile divided by S, a hypothesis about how fast TMA's copies are fed from
L2; ``--tma-stream-latency L`` (repeatable) with ``TMA_STREAM_LATENCY`` set to L clocks (0: an
idle load's latency, the model before that term); the model is otherwise unchanged, each run
apart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any
from unittest.mock import patch

from tuner.core.shape import Shape
from tuner.kernels.candidate import build_candidate
from tuner.kernels.families import parse_config
from tuner.kernels.resources import table_device
from tuner.model import tile_work
from tuner.model.cost_model import estimate

GROUPS = ((0.0, 1.0, "under one round"), (1.0, 2.0, "1-2 rounds"), (2.0, float("inf"), ">= 2"))


@contextmanager
def tma_stream_latency(clocks: int) -> Iterator[None]:
    """The cost model with a ``tma_ws`` copy's streaming latency set to ``clocks``."""
    with patch.object(tile_work, "TMA_STREAM_LATENCY", clocks):
        yield


@contextmanager
def tma_l2_scaled(scale: float) -> Iterator[None]:
    """The cost model with a ``tma_ws`` k tile's L2 bytes divided by ``scale``."""
    work = tile_work.TILE_MODELS["half_tma"]

    def scaled(*args: Any, **kwargs: Any) -> tile_work.TileWork:
        tile = work(*args, **kwargs)
        return replace(tile, l2_bytes=round(tile.l2_bytes / scale))

    with patch.dict(tile_work.TILE_MODELS, {"half_tma": scaled}):
        yield


def group_of(rounds: float) -> str:
    """The name of the group a row's tile rounds fall in."""
    return next(name for low, high, name in GROUPS if low <= rounds < high)


def read_rows(paths: list[Path], arch: str) -> list[dict[str, Any]]:
    """Every verified row of the files, with the model's estimate beside its measured time (a
    config measured twice on one shape, in two files, keeps its first row)."""
    device = table_device(arch)
    sms = device.sm_count
    seen: set[tuple[str, str]] = set()
    rows = []
    for path in paths:
        for row in json.loads(path.read_text())["rows"]:
            key = (row["shape"], row["config"])
            if row.get("status") != "ok" or key in seen:
                continue
            seen.add(key)
            dims, dtype, layout = row["shape"].split()
            m, n, k = (int(x) for x in dims.split("x"))
            shape = Shape(m, n, k, dtype, layout)
            config = parse_config(row["config"])
            estimated = estimate(build_candidate(config, shape, device), shape, device).ms
            rows.append(
                {
                    "shape": row["shape"],
                    "config": row["config"],
                    "heldout": bool(row.get("heldout")),
                    "tile_rounds": row["tiles"] / sms,
                    "ms": row["ours_ms"],
                    "estimate_ms": estimated,
                }
            )
    return rows


def agreement(rows: list[dict[str, Any]], margin: float) -> dict[str, Any]:
    """Pairs per group (and held out apart) and how many the model orders as measured."""
    by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_shape[row["shape"]].append(row)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong = []
    for shape, measured in by_shape.items():
        for a, b in combinations(measured, 2):
            faster, slower = (a, b) if a["ms"] < b["ms"] else (b, a)
            if slower["ms"] / faster["ms"] - 1 <= margin:
                continue
            right = faster["estimate_ms"] < slower["estimate_ms"]
            name = "held out" if faster["heldout"] else group_of(faster["tile_rounds"])
            tally[name][0] += 1
            tally[name][1] += right
            if not right:
                wrong.append(
                    {
                        "shape": shape,
                        "faster": faster["config"],
                        "slower": slower["config"],
                        "measured_ratio": round(slower["ms"] / faster["ms"], 3),
                        "estimated_ratio": round(slower["estimate_ms"] / faster["estimate_ms"], 3),
                    }
                )
    groups = {}
    for name in [*(g[2] for g in GROUPS), "held out"]:
        members = [
            r
            for r in rows
            if (r["heldout"] if name == "held out" else not r["heldout"])
            and (name == "held out" or group_of(r["tile_rounds"]) == name)
        ]
        pairs, right = tally.get(name, [0, 0])
        groups[name] = {
            "rows": len(members),
            "pairs": pairs,
            "ordered_right": right,
            "share_right": round(right / pairs, 3) if pairs else None,
            "median_measured_over_estimate": round(
                statistics.median(r["ms"] / r["estimate_ms"] for r in members), 3
            )
            if members
            else None,
        }
    return {"groups": groups, "picks": picks(rows), "wrong": wrong}


def picks(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per shape, the measured time of the config the model estimates fastest over the best
    measured (1.00: the model picks the best); geometric mean and lowest, held out apart."""
    by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_shape[row["shape"]].append(row)
    shares = {
        shape: min(r["ms"] for r in measured) / min(measured, key=lambda r: r["estimate_ms"])["ms"]
        for shape, measured in by_shape.items()
    }
    summary: dict[str, Any] = {"per_shape": {s: round(v, 3) for s, v in shares.items()}}
    for name, held in (("suite", False), ("held out", True)):
        values = [v for s, v in shares.items() if by_shape[s][0]["heldout"] == held]
        summary[name] = (
            {
                "shapes": len(values),
                "geomean": round(statistics.geometric_mean(values), 3),
                "lowest": round(min(values), 3),
            }
            if values
            else None
        )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, action="append", required=True)
    parser.add_argument("--arch", default="sm_90", help="the table device the model assumes")
    parser.add_argument("--margin", type=float, default=0.02)
    parser.add_argument("--tma-l2-scale", type=float, action="append", default=[])
    parser.add_argument("--tma-stream-latency", type=int, action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    rows = read_rows(options.run, options.arch)
    result = agreement(rows, options.margin)
    for name, group in result["groups"].items():
        print(name, json.dumps(group))
    print("picks", json.dumps({k: v for k, v in result["picks"].items() if k != "per_shape"}))
    hypotheses = {}
    for scale in options.tma_l2_scale:
        with tma_l2_scaled(scale):
            scored = agreement(read_rows(options.run, options.arch), options.margin)
        hypotheses[str(scale)] = {"groups": scored["groups"], "picks": scored["picks"]}
        brief = {k: v for k, v in scored["picks"].items() if k != "per_shape"}
        groups = json.dumps(scored["groups"])
        print(f"tma_ws L2 bytes / {scale}:", groups, "picks", json.dumps(brief))
    latencies = {}
    for clocks in options.tma_stream_latency:
        with tma_stream_latency(clocks):
            scored = agreement(read_rows(options.run, options.arch), options.margin)
        latencies[str(clocks)] = {"groups": scored["groups"], "picks": scored["picks"]}
        right = sum(g["ordered_right"] for g in scored["groups"].values())
        pairs = sum(g["pairs"] for g in scored["groups"].values())
        brief = {k: v for k, v in scored["picks"].items() if k != "per_shape"}
        print(f"TMA_STREAM_LATENCY {clocks}: pairs {right}/{pairs}, picks", json.dumps(brief))
    document = {
        "what": "cost model order against measured ladder runs (no GPU)",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "runs": [str(p) for p in options.run],
        "arch": options.arch,
        "margin": options.margin,
        **result,
        "tma_l2_scale": hypotheses,
        "tma_stream_latency": latencies,
        "rows": rows,
    }
    options.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
