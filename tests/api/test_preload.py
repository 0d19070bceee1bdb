"""``gemmtune serve --preload``: the committed sweep tables and suite files go into an empty
database through record_measurements; a database with results is left alone; a folder with no
results says so."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

import storage
from api.preload import (
    SUITE_FILE,
    SWEEP_FILE,
    Outcome,
    measured_at,
    preload,
    sweep_records,
)
from tuner.answers.index import load_snapshot
from tuner.data import ResultsFileError, read_suite_file, read_sweep_table, results_dir
from tuner.data.location import all_suite_files
from tuner.kernels.families import accuracy_of, parse_config

BENCH_FILE = "h100-suite.json"

H100 = "NVIDIA H100 80GB HBM3"
PROVENANCE = {"device": H100, "sm_count": 132, "compute_capability": "9.0"}


def suite(rows: list[dict[str, object]]) -> str:
    """A suite file of the H100 holding ``rows``."""
    return json.dumps({"device": H100, "provenance": PROVENANCE, "shapes": rows})


def small_results(folder: Path, rows: int = 40) -> Path:
    """The header and the first ``rows`` rows of the real sweep, plus a tiny h100.json."""
    folder.mkdir(parents=True, exist_ok=True)
    with (results_dir() / SWEEP_FILE).open() as source:
        head = list(itertools.islice(source, rows + 1))
    (folder / SWEEP_FILE).write_text("".join(head))
    best = {
        "m": 512,
        "n": 256,
        "k": 128,
        "status": "ok",
        "config": "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128",
        "ms": 0.01,
        "tflops": 3.4,
        "cublas_tflops": 3.0,
        "ratio": 1.13,
    }
    (folder / SUITE_FILE).write_text(suite([best]))
    return folder


@pytest.fixture
def sessions(db_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on an empty database of this test's backend."""
    engine = storage.make_engine(db_url)
    storage.upgrade(engine)
    yield storage.make_session_factory(engine)
    engine.dispose()


def test_preload_fills_an_empty_database_once(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results")
    done = preload(sessions, folder)
    assert (done.outcome, done.count, done.files) == (Outcome.STORED, 41, 2)
    assert str(done) == f"preloaded 41 measurements from 2 files in {folder}"
    again = preload(sessions, folder)  # idempotent
    assert (again.outcome, again.count) == (Outcome.HELD, 0)
    assert str(again) == "database already holds results; preload skipped"
    with sessions() as session:
        _, total = storage.list_measurements(session, limit=1)
        snapshot = load_snapshot(session)
        trials = storage.measurements_for_study(session, "h100-sweep-4096x4096x4096")
    assert total == 41
    shapes = {(e.m, e.n, e.k) for e in snapshot.entries}
    assert shapes == {(4096, 4096, 4096), (512, 256, 128)}
    best = next(e for e in snapshot.entries if e.m == 512)
    assert (best.device.arch, best.ratio) == ("sm_90", 1.13)
    assert [t.trial_number for t in trials] == list(range(40))


def test_a_folder_without_results_says_so(sessions: sessionmaker[Session], tmp_path: Path) -> None:
    """An empty database and nothing to load: not "already holds results"."""
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "empty", tmp_path / "missing"):
        done = preload(sessions, folder)
        assert (done.outcome, done.count) == (Outcome.NOTHING, 0)
        assert f"no committed results found at {folder}" in str(done)
        assert "already" not in str(done)
    with sessions() as session:
        assert not storage.holds_measurements(session)


def test_the_latest_bench_file_is_stored_too_and_its_faster_config_served(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    faster = "dmma_bm64_bn64_bk16_wm32_wn32_mk8_sk1_mb4_wd1"
    rows = [
        {"m": 512, "n": 256, "k": 128, "status": "ok", "config": faster, "ms": 0.008},
        {"m": 64, "n": 64, "k": 64, "status": "no_config", "config": None},  # adds nothing
    ]
    (folder / BENCH_FILE).write_text(suite(rows))
    assert preload(sessions, folder).count == 3 + 1 + 1
    with sessions() as session:
        entry = next(e for e in load_snapshot(session).entries if e.m == 512)
    assert (entry.config_name, entry.ms) == (faster, 0.008)


def test_every_sweep_table_is_a_study_per_file_and_shape(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    with (results_dir() / "h100-sweep-warptile_splitk-large_k.jsonl").open() as source:
        head = list(itertools.islice(source, 6))
    (folder / "h100-sweep-warptile_splitk-large_k.jsonl").write_text("".join(head))
    assert preload(sessions, folder).count == 3 + 5 + 1
    with sessions() as session:
        sliced = storage.measurements_for_study(
            session, "h100-sweep-warptile_splitk-large_k-256x256x65536"
        )
        main = storage.measurements_for_study(session, "h100-sweep-4096x4096x4096")
    assert [t.trial_number for t in sliced] == list(range(5))
    assert {t.family for t in sliced} == {"warptile_splitk"}
    assert len(main) == 3


def test_a_bad_line_stops_the_preload_and_stores_nothing(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    with (folder / SWEEP_FILE).open("a") as table:
        table.write('{"kind": "result", "shape": "4096x4096x4096"}\n')
    with pytest.raises(ResultsFileError, match=rf"{SWEEP_FILE} line 5: `config_name`"):
        preload(sessions, folder)
    with sessions() as session:
        assert not storage.holds_measurements(session)


def test_committed_sweep_parses() -> None:
    records = list(sweep_records(read_sweep_table(results_dir() / SWEEP_FILE)))
    assert len(records) > 5000
    assert {r[0].name for r in records} == {H100}
    assert all(r[2].status in ("ok", "pruned") for r in records)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"ms": 1e-6}, "h100.json record 0: `ms` must be >= 0.001"),
        ({"config": "turbo_bm64"}, "h100.json: config name 'turbo_bm64' must start with"),
    ],
)
def test_a_results_file_with_an_implausible_row_preloads_nothing(
    sessions: sessionmaker[Session], tmp_path: Path, change: dict[str, object], needle: str
) -> None:
    from tuner.core.errors import InputError

    folder = small_results(tmp_path / "results")
    row = json.loads((folder / SUITE_FILE).read_text())["shapes"][0]
    (folder / SUITE_FILE).write_text(suite([{**row, **change}]))
    with pytest.raises(InputError, match=re.escape(needle)):
        preload(sessions, folder)
    with sessions() as session:
        assert not storage.holds_measurements(session)


def test_preloaded_rows_carry_their_measurement_time_not_the_preload_time(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=2)
    header = json.loads((folder / SWEEP_FILE).read_text().splitlines()[0])
    dated = {**PROVENANCE, "date": "2026-01-02T03:04:05+00:00"}
    row = {"m": 512, "n": 256, "k": 128, "status": "ok", "ms": 0.01}
    row["config"] = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128"
    (folder / SUITE_FILE).write_text(
        json.dumps({"device": H100, "provenance": dated, "shapes": [row]})
    )
    preload(sessions, folder)
    with sessions() as session:
        sweep = storage.measurements_for_study(session, "h100-sweep-4096x4096x4096")
        rows, _ = storage.list_measurements(session, limit=10)
    suite_row = next(r for r in rows if r.shape.m == 512)
    assert {r.created_at.isoformat() for r in sweep} == {header["date"]}
    assert suite_row.created_at.isoformat() == dated["date"]


def test_measured_at_reads_time_then_date_then_the_fallback() -> None:
    assert measured_at({"time": "2026-05-06T07:08:09+00:00", "date": "2020-01-01"}).day == 6  # type: ignore[union-attr]
    assert str(measured_at({"date": "2026-05-06T07:08:09"})) == "2026-05-06 07:08:09+00:00"
    assert str(measured_at({"date": "not a date"}, "2026-02-03T00:00:00Z")).startswith("2026-02-03")
    assert measured_at({}) is None


def test_suite_files_of_every_type_layout_and_class_are_stored(
    sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    half = {
        ("bfloat16", "NT"): "wgmma_bm128_bn256_bk64_wgm2_s4_sw4_dt1_ly1",
        ("float16", "NN"): "wgmma_bm128_bn256_bk64_wgm2_s4_sw4_dt0_ly0",
    }
    for (dtype, layout), config in half.items():
        row = {"m": 512, "n": 256, "k": 128, "dtype": dtype, "layout": layout}
        row |= {"status": "ok", "config": config, "ms": 0.004}
        (folder / f"h100-suite-{dtype}-{layout.lower()}.json").write_text(suite([row]))
    assert preload(sessions, folder).count == 3 + 1 + 2
    with sessions() as session:
        entries = load_snapshot(session).entries
    served = {(e.dtype, e.layout): e.config_name for e in entries if e.m == 512}
    assert {key: served[key] for key in half} == half
    assert served[("float32", "NN")] not in half.values()


def test_the_committed_results_answer_every_type_and_class_they_hold_exactly(
    sessions: sessionmaker[Session],
) -> None:
    """For each (dtype, layout, type of C, accuracy class) of the shipped suite files, a
    preloaded database answers one of its shapes ``exact``, and a shape beside it ``nearest``,
    when asked for the C they were measured writing. Asked for a half C (the default for half
    inputs) where only float32-C results of that dtype and layout ship, a half shape is
    answered ``nearest``: a config of the suites with OUT set for the asked C, never a split-K
    one."""
    kinds: dict[tuple[str, str, str, str], tuple[int, int, int]] = {}
    for path in all_suite_files(results_dir()):
        for row in read_suite_file(path).rows:
            if row.status == "ok" and row.config is not None:
                key = (
                    row.shape.dtype,
                    row.shape.layout,
                    row.shape.out,
                    accuracy_of(parse_config(row.config).family),
                )
                kinds.setdefault(key, (row.shape.m, row.shape.n, row.shape.k))
    assert {dtype for dtype, _, _, _ in kinds} >= {"float32", "bfloat16", "float16"}
    assert {out for _, _, out, _ in kinds} == {"float32", "bfloat16", "float16"}
    half_c = {(dtype, layout) for dtype, layout, out, _ in kinds if out != "float32"}
    assert any(accuracy != "exact" for _, _, _, accuracy in kinds)
    assert preload(sessions).outcome is Outcome.STORED
    with sessions() as session:
        snapshot = load_snapshot(session)
    for (dtype, layout, out, accuracy), (m, n, k) in sorted(kinds.items()):
        asked = {"accuracy": accuracy, "out_dtype": out}
        exact = snapshot.answer(m, n, k, dtype, layout, **asked)
        assert exact.source == "exact", (dtype, layout, accuracy, (m, n, k))
        beside = snapshot.answer(m + 8, n, k, dtype, layout, **asked)
        assert beside.source == "nearest", (dtype, layout, accuracy, (m + 8, n, k))
        if dtype != "float32" and (dtype, layout) not in half_c:
            half = snapshot.answer(m, n, k, dtype, layout, accuracy=accuracy)
            assert (half.source, half.out_dtype) == ("nearest", dtype), (dtype, layout)
            assert half.params["OUT"] == {"float16": 1, "bfloat16": 2}[dtype]
            assert "_splitk" not in half.family


def test_the_served_app_answers_every_committed_type_and_class_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``gemmtune serve`` runs (the app from the environment, preloaded into an empty
    database), asked over HTTP: for each (dtype, layout, type of C, accuracy class) of the
    committed suite files, one of its shapes is answered ``exact`` with the suite's dtype and
    layout, and a shape beside it ``nearest``; BF16 NT with float32 and with BF16 C among them
    (the shipped grid's)."""
    from fastapi.testclient import TestClient

    from api.serve import app_from_environment

    asked: dict[tuple[str, str, str], tuple[int, int, int]] = {}
    for path in all_suite_files(results_dir()):
        for row in read_suite_file(path).rows:
            if row.status == "ok" and row.config is not None:
                accuracy = accuracy_of(parse_config(row.config).family)
                key = (row.shape.dtype, row.shape.layout, row.shape.out, accuracy)
                asked.setdefault(key, (row.shape.m, row.shape.n, row.shape.k))
    assert ("bfloat16", "NT", "float32", "exact") in asked
    assert ("bfloat16", "NT", "bfloat16", "exact") in asked
    monkeypatch.setenv("GEMMTUNE_DATABASE_URL", f"sqlite:///{tmp_path}/served.db")
    monkeypatch.setenv("GEMMTUNE_PRELOAD", "1")
    app = app_from_environment()
    try:
        with TestClient(app) as client:
            for (dtype, layout, out, accuracy), (m, n, k) in sorted(asked.items()):
                # Asked for the C a suite measured writing, its shape is exact.
                kind = {"dtype": dtype, "layout": layout, "accuracy": accuracy, "out_dtype": out}
                exact = client.post("/v1/configs/best", json={"m": m, "n": n, "k": k, **kind})
                assert exact.status_code == 200, exact.text
                body = exact.json()
                assert body["source"] == "exact", (kind, (m, n, k), body["source"])
                assert (body["dtype"], body["layout"]) == (dtype, layout)
                near = client.post("/v1/configs/best", json={"m": m + 8, "n": n, "k": k, **kind})
                assert near.json()["source"] == "nearest", (kind, (m + 8, n, k))
    finally:
        app.state.engine.dispose()
