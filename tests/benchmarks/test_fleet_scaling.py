"""benchmarks/fleet_scaling.py on the CPU: standing replay workers on one and two stand-in GPUs
tune a batch and one study, each candidate once, with every budget exact; on SQLite and, with
``--postgres``, on a fresh PostgreSQL database per run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from tests.lab_scripts import LAB

SHAPES = ("128,4096,4096", "1000,1000,1000", "4096,4096,4096")  # the replay table's


def _fleet(tmp_path: Path, *args: str) -> dict[str, Any]:
    """fleet_scaling.py's document for one and two replay workers run with ``args``."""
    out = tmp_path / "fleet.json"
    subprocess.run(
        [sys.executable, str(LAB / "fleet_scaling.py"), "--out", str(out), "--gpus", "2",
         "--evaluator", "replay", "--timeout", "300", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def _check_timelines(run: dict[str, Any]) -> None:
    """Every study's timeline puts each candidate to the worker that measured it, and orders
    enqueue, take, claims, results, finalists and the end."""
    assert set(run["timelines"]) == set(run["studies"])
    for name, timeline in run["timelines"].items():
        workers = timeline["workers"]
        counts = {worker: w["candidates"] for worker, w in workers.items()}
        assert counts == run["studies"][name]["by_worker"]
        # (``started_s`` may be a few milliseconds under 0: a worker stamps its take with the
        # moment it began to poll, and the entry may have been enqueued during that poll.)
        for w in workers.values():
            assert timeline["started_s"] <= w["claims"]["first_s"] <= w["claims"]["last_s"]
            assert w["claims"]["first_s"] <= w["results"]["first_s"] <= w["results"]["last_s"]
            assert w["results"]["last_s"] <= timeline["finished_s"]
        last_result = max(w["results"]["last_s"] for w in workers.values())
        assert last_result <= timeline["finals"]["first_s"] <= timeline["finals"]["last_s"]
        assert timeline["finals"]["last_s"] <= timeline["finished_s"]
        assert timeline["compile_crashes"] == 0  # replay workers compile nothing
        rows = timeline.get("candidates")
        if len(run["studies"]) == 1:  # one study: each candidate's row, claimed before measured
            assert rows is not None and len(rows) == sum(counts.values())
            assert {r["worker"] for r in rows} == set(counts)
            assert all(r["claim_s"] <= r["result_s"] <= timeline["finished_s"] for r in rows)
            assert [r["claim_s"] for r in rows] == sorted(r["claim_s"] for r in rows)
            assert all(r["compile_s"] is None for r in rows)  # replay workers compile nothing
        else:
            assert rows is None


def test_a_fleet_of_one_and_of_two_tunes_each_candidate_once(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("".join(f"replayed,{s}\n" for s in SHAPES))
    document = _fleet(tmp_path, "--shapes", str(shapes), "--trials", "5", "--study-trials", "9")
    for workload, shapes_n, trials in (("study", 1, 9), ("batch", 3, 5)):
        for key in ("gpus_1", "gpus_2"):
            run = document[workload][key]
            assert "error" not in run, run
            assert run["done"] == shapes_n and run["failed"] == 0
            assert len(run["studies"]) == shapes_n
            for study in run["studies"].values():
                assert study["evaluated"] == trials and not study["measured_twice"]
            assert run["evaluated"] == shapes_n * trials
            assert run["wall_s"] > 0 and run["ready_s"] > 0
            _check_timelines(run)
            finished = [s for per in run["study_seconds"].values() for s in per]
            assert len(finished) == shapes_n  # one line per study, from the worker that ended it
            # Which study each line was: every shape once, each worker's in its own order.
            named = run["finished_studies"]
            assert {w: len(per) for w, per in named.items()} == {
                w: len(per) for w, per in run["study_seconds"].items()
            }
            shapes = sorted(name.split("|")[1] for name in run["studies"])
            assert sorted(s for per in named.values() for s in per) == shapes
            assert all(s["search"] >= 0 and "prepare" in s for s in finished)
            if "cpu_busy_mean" in run:  # sampled every 0.5 s: a fast replay may end first
                assert 0.0 <= run["cpu_busy_mean"] <= run["cpu_busy_max"] <= 1.0
        comparison = document[workload]["comparison_2"]
        assert comparison["measured_twice"] is False
        assert set(comparison["shapes"]) == set(document[workload]["gpus_1"]["bests"])
    assert document["threads_per_core"] >= 1  # Linux, as CI
    # Both workers of the two-GPU batch measured: the shapes were spread over them.
    workers = {
        w for study in document["batch"]["gpus_2"]["studies"].values() for w in study["by_worker"]
    }
    assert workers == {"gpu0", "gpu1"}


def test_a_fleet_on_postgresql_gets_a_fresh_database_per_run_and_drops_it(
    tmp_path: Path, pg_admin: Engine | str
) -> None:
    if isinstance(pg_admin, str):
        pytest.skip(pg_admin)

    def bench_databases() -> set[str]:
        with pg_admin.connect() as connection:
            rows = connection.execute(
                text("SELECT datname FROM pg_database WHERE datname LIKE 'gemmtune_bench_%'")
            )
            return {row[0] for row in rows}

    before = bench_databases()
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("".join(f"replayed,{s}\n" for s in SHAPES[:2]))
    url = pg_admin.url.render_as_string(hide_password=False)
    document = _fleet(
        tmp_path, "--shapes", str(shapes), "--trials", "3", "--skip-study", "--postgres", url
    )
    assert document["database"] == "postgresql"
    for key in ("gpus_1", "gpus_2"):
        run = document["batch"][key]
        assert "error" not in run, run
        assert run["done"] == 2 and run["evaluated"] == 6
    assert bench_databases() == before  # each run's database dropped after it
