"""The suite bests: a bench result plus each shape's tuning cost, from a database or carried."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

import storage
from tests.storage.factories import A100, H100, measurement
from tuner.core.errors import InputError
from tuner.data import read_suite_file, results_dir
from tuner.report.tuning_summary import (
    KEPT,
    TuningCost,
    active_seconds,
    summary_document,
    tuning_cost,
)

T0 = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
FIRST = (1024, 1024, 1024)  # the committed suite's first shape


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def store(
    sessions: sessionmaker[Session], rows: list[tuple[storage.DeviceIn, tuple[int, int, int], Any]]
) -> None:
    with sessions() as session:
        for device, dims, row in rows:
            storage.record_measurement(session, device, storage.ShapeIn(*dims), row)
        session.commit()


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    return storage.open_database(f"sqlite:///{tmp_path / 'tuning.db'}")


def test_active_seconds_leave_out_the_pauses_between_runs() -> None:
    stamps = [at(200), at(0), at(10), at(20), at(205)]  # a second run 180 s after the first
    assert active_seconds(stamps, gap_s=60) == 25.0
    assert active_seconds(stamps, gap_s=180) == 205.0
    assert active_seconds([at(0)], gap_s=60) == 0.0


def test_tuning_cost_counts_the_studies_of_one_device(sessions: sessionmaker[Session]) -> None:
    failed = measurement(status="compile_failed", ms=None, study="s1", created_at=at(4))
    store(
        sessions,
        [
            (H100, FIRST, measurement(study="s1", created_at=at(0))),
            (H100, FIRST, failed),
            (H100, FIRST, measurement(study=None, created_at=at(500))),  # an import, later
            (H100, (2048, 2048, 2048), measurement(study="s2", created_at=at(1))),
            (A100, FIRST, measurement(study="elsewhere", created_at=at(2))),
        ],
    )  # fmt: skip
    with sessions() as session:
        cost = tuning_cost(session, H100.name, gap_s=60)
    assert cost == {
        FIRST: TuningCost({"s1": 2, "(none)": 1}, 3, 4.0),
        (2048, 2048, 2048): TuningCost({"s2": 1}, 1, 0.0),
    }


def test_a_summary_keeps_the_bench_rows_and_adds_their_cost() -> None:
    bench = read_suite_file(results_dir() / "h100-suite.json")
    cost = {FIRST: TuningCost({"s1": 7}, 7, 12.5)}
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    doc = summary_document(bench, cost, gap_s=90, now=now)
    assert doc["date"] == "2026-11-27T12:00:00+00:00" and doc["measured"] == bench.document["date"]
    assert doc["source"]["bench"] == "h100-suite.json" and "gaps over 90 s" in doc["wall_time"]
    assert doc["summary"] == bench.document["summary"]
    rows, bench_rows = doc["shapes"], bench.document["shapes"]
    assert [{k: r[k] for k in KEPT} for r in rows] == [
        {k: r.get(k) for k in KEPT} for r in bench_rows
    ]
    assert (rows[0]["studies"], rows[0]["candidates_evaluated"], rows[0]["tuning_wall_s"]) == (
        {"s1": 7},
        7,
        12.5,
    )
    assert all("studies" not in r for r in rows[1:])  # nothing stored for them


def test_a_seeded_summary_carries_the_earlier_cost_where_the_config_stayed(tmp_path: Path) -> None:
    bench = read_suite_file(results_dir() / "h100-suite.json")
    earlier_doc = json.loads((results_dir() / "h100.json").read_text())
    kept, changed = bench.document["shapes"][0], bench.document["shapes"][1]
    earlier_doc["shapes"][0].update(config=kept["config"], studies={"old": 40}, tuning_wall_s=33.0)
    earlier_doc["shapes"][0].update(candidates_evaluated=40)
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(earlier_doc))
    second = (changed["m"], changed["n"], changed["k"])
    cost = {second: TuningCost({"h100-sweep-x": 5, "(none)": 2}, 7, 3.0)}
    doc = summary_document(bench, cost, seeded=read_suite_file(earlier))
    first_row, second_row = doc["shapes"][0], doc["shapes"][1]
    assert (first_row["studies"], first_row["candidates_evaluated"]) == ({"old": 40}, 40)
    assert first_row["tuning_wall_s"] == 33.0
    assert (second_row["studies"], second_row["candidates_evaluated"]) == ({"h100-sweep-x": 5}, 5)
    assert second_row["tuning_wall_s"] is None
    assert doc["wall_time"].startswith("carried from earlier.json")


def test_a_file_that_is_no_bench_result_is_named(tmp_path: Path) -> None:
    document = json.loads((results_dir() / "h100-suite.json").read_text())
    del document["method"], document["summary"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"plain.json has no method, summary: give a result"):
        summary_document(read_suite_file(path), {})
