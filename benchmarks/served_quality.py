"""What a shipped results file does for shapes it does not hold: the served answer on held-out
shapes, before and after, timed beside cuBLAS (issue 44, item 4; GPU for the timing).

    python benchmarks/served_quality.py --added tuner/data/results/h100-grid-suite.json \
        [--added tuner/data/results/h200-grid-suite.json] \
        --heldout benchmarks/grid_heldout.csv [--heldout benchmarks/heldout.csv] \
        [--rounds 3] --out served.json
    python benchmarks/served_quality.py ... --answers-only   # no GPU: only what is served

Two databases are preloaded as ``gemmtune serve`` preloads (:func:`api.preload.preload`): one
from the installed results folder without the ``--added`` files ("before"), one with them
("after"). For each held-out row (``class,M,N,K[,dtype,layout]``; ``--dtype``/``--layout``
for rows without) both answer for this GPU (name, arch and SM count), as POST
/v1/configs/best would: exact, nearest, far or default, and the config. On the GPU, the two
configs are then verified and timed in the same alternating rounds beside the default cuBLAS
call on the same operands (``GpuEvaluator.compare``: CUDA events, warm-up, medians), so each
ratio is cuBLAS time / the served config's time. Writes every row, the geomeans before and
after, the device, date, versions and the commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latency_under_writes import commit

import storage
from api.preload import preload
from tuner.answers.device_kind import DeviceSpec
from tuner.answers.index import load_snapshot
from tuner.core.shape import Shape
from tuner.data import results_dir
from tuner.data.shape_lists import SuiteEntry, read_suite
from tuner.run.bench import geomean


@dataclass(frozen=True)
class Served:
    """One answer: its config and where it came from."""

    config: str
    source: str


def served_answers(
    folder: Path, entries: list[SuiteEntry], device: DeviceSpec, work: Path
) -> list[Served]:
    """What a server preloaded from ``folder`` answers ``device`` for each entry."""
    url = f"sqlite:///{work / (folder.name + '.db')}"
    sessions = storage.open_database(url)
    preload(sessions, folder)
    with sessions() as session:
        snapshot = load_snapshot(session)
    answers = []
    for entry in entries:
        s = entry.shape
        answer = snapshot.answer(s.m, s.n, s.k, s.dtype, s.layout, device=device, out_dtype=s.out)
        answers.append(Served(answer.name, answer.source))
    return answers


def folders(added: list[Path], work: Path) -> tuple[Path, Path]:
    """Copies of the installed results folder without the ``added`` files ("before") and with
    them."""
    before, after = work / "before", work / "after"
    names = [path.name for path in added]
    shutil.copytree(results_dir(), before, ignore=shutil.ignore_patterns(*names))
    shutil.copytree(before, after)
    for path in added:
        shutil.copy(path, after / path.name)
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--added", type=Path, action="append", required=True, help="a results file shipped"
    )
    parser.add_argument("--heldout", type=Path, action="append", required=True)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--layout", default="NN")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--answers-only", action="store_true", help="no GPU: what is served")
    parser.add_argument(
        "--device",
        default="NVIDIA H100 80GB HBM3,sm_90,132",
        help="name,arch,SM count asked about with --answers-only",
    )
    parser.add_argument("--commit", default=None, help="the code's commit (default: git's)")
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    entries = [
        e for path in options.heldout for e in read_suite(path, options.dtype, options.layout)
    ]

    evaluator: Any = None
    if options.answers_only:
        name, arch, sms = options.device.rsplit(",", 2)
        device = DeviceSpec(name, arch, int(sms))
        provenance: dict[str, Any] = {"answers_only": True}
    else:
        from tuner.gpu.worker import GpuEvaluator

        evaluator = GpuEvaluator()
        device = DeviceSpec(evaluator.device.name, evaluator.device.arch, evaluator.device.sm_count)
        provenance = dict(evaluator.provenance)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            before_dir, after_dir = folders(options.added, work)
            before = served_answers(before_dir, entries, device, work)
            after = served_answers(after_dir, entries, device, work)
            for entry, old, new in zip(entries, before, after, strict=True):
                row = _row(entry.label, entry.shape, old, new)
                if evaluator is not None:
                    _time(evaluator, entry.shape, old, new, options.rounds, row)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if evaluator is not None:
            evaluator.close()
    summary = {
        side: {
            "geomean_ratio": geomean([r[side]["ratio"] for r in rows if r[side].get("ratio")]),
            "sources": {
                s: sum(r[side]["source"] == s for r in rows)
                for s in sorted({r[side]["source"] for r in rows})
            },
        }
        for side in ("before", "after")
    }
    document = {
        "what": "served answers on held-out shapes without and with "
        + " and ".join(path.name for path in options.added)
        + ", timed beside the default cuBLAS call (ratio = cuBLAS ms / served config ms)",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": device.name,
        "provenance": {**provenance, "host_python": platform.python_version()},
        "commit": options.commit or commit(),
        "heldout": [str(p) for p in options.heldout],
        "rounds": options.rounds,
        "summary": summary,
        "rows": rows,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(document, indent=1) + "\n")
    print(json.dumps(summary))


def _row(label: str | None, shape: Shape, before: Served, after: Served) -> dict[str, Any]:
    return {
        "class": label,
        "shape": shape.label(),
        "before": {"config": before.config, "source": before.source},
        "after": {"config": after.config, "source": after.source},
    }


def _time(
    evaluator: Any, shape: Shape, before: Served, after: Served, rounds: int, row: dict[str, Any]
) -> None:
    """Both served configs in the same rounds beside cuBLAS (one timing when they agree)."""
    from tuner.kernels.families import parse_config

    names = list(dict.fromkeys([before.config, after.config]))
    replies = evaluator.compare([parse_config(n) for n in names], shape, rounds)
    by_name = dict(zip(names, replies, strict=True))
    for side, served in (("before", before), ("after", after)):
        reply = by_name[served.config]
        row[side].update(
            status=reply.status, reason=reply.reason, ms=reply.ms, cublas_ms=reply.cublas_ms
        )
        if reply.status == "ok" and reply.ms and reply.cublas_ms:
            row[side]["ratio"] = reply.cublas_ms / reply.ms


if __name__ == "__main__":
    main()
