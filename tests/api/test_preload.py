"""``gemmtune serve --preload``: the committed sweep table (and h100.json when there) go into an
empty database through record_measurement; a database with results is left alone."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import storage
from api.preload import BENCH_FILE, SUITE_FILE, SWEEP_FILE, preload, results_dir, sweep_records
from tuner.answer_index import load_snapshot


def small_results(folder: Path, rows: int = 40) -> Path:
    """The header and the first ``rows`` rows of the real sweep, plus a tiny h100.json."""
    folder.mkdir(parents=True, exist_ok=True)
    with (results_dir() / SWEEP_FILE).open() as source:
        head = list(itertools.islice(source, rows + 1))
    (folder / SWEEP_FILE).write_text("".join(head))
    suite = [
        {
            "m": 512,
            "n": 256,
            "k": 128,
            "config": "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128",
            "ms": 0.01,
            "tflops": 3.4,
            "cublas_tflops": 3.0,
            "ratio": 1.13,
            "provenance": {
                "device": "NVIDIA H100 80GB HBM3",
                "sm_count": 132,
                "compute_capability": "9.0",
            },
        }
    ]
    (folder / SUITE_FILE).write_text(json.dumps({"results": suite}))
    return folder


def test_preload_fills_an_empty_database_once(db_url: str, tmp_path: Path) -> None:
    folder = small_results(tmp_path / "results")
    engine = storage.make_engine(db_url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    assert preload(sessions, folder) == 41
    assert preload(sessions, folder) == 0  # idempotent
    with sessions() as session:
        _, total = storage.list_measurements(session, limit=1)
        snapshot = load_snapshot(session)
        trials = storage.measurements_for_study(session, "h100-sweep-4096x4096x4096")
    engine.dispose()
    assert total == 41
    shapes = {(e.m, e.n, e.k) for e in snapshot.entries}
    assert shapes == {(4096, 4096, 4096), (512, 256, 128)}
    suite = next(e for e in snapshot.entries if e.m == 512)
    assert (suite.device.arch, suite.ratio) == ("sm_90", 1.13)
    assert [t.trial_number for t in trials] == list(range(40))


def test_the_latest_bench_file_is_stored_too_and_its_faster_config_served(
    db_url: str, tmp_path: Path
) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    faster = "dmma_bm64_bn64_bk16_wm32_wn32_mk8_sk1_mb4_wd1"
    bench = {"shapes": [{"m": 512, "n": 256, "k": 128, "config": faster, "ms": 0.008}]}
    (folder / BENCH_FILE).write_text(json.dumps(bench))
    engine = storage.make_engine(db_url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    assert preload(sessions, folder) == 3 + 1 + 1
    with sessions() as session:
        entry = next(e for e in load_snapshot(session).entries if e.m == 512)
    engine.dispose()
    assert (entry.config_name, entry.ms) == (faster, 0.008)


def test_every_sweep_table_is_a_study_per_file_and_shape(db_url: str, tmp_path: Path) -> None:
    folder = small_results(tmp_path / "results", rows=3)
    with (results_dir() / "h100-sweep-warptile_splitk-large_k.jsonl").open() as source:
        head = list(itertools.islice(source, 6))
    (folder / "h100-sweep-warptile_splitk-large_k.jsonl").write_text("".join(head))
    engine = storage.make_engine(db_url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    assert preload(sessions, folder) == 3 + 5 + 1
    with sessions() as session:
        sliced = storage.measurements_for_study(
            session, "h100-sweep-warptile_splitk-large_k-256x256x65536"
        )
        main = storage.measurements_for_study(session, "h100-sweep-4096x4096x4096")
    engine.dispose()
    assert [t.trial_number for t in sliced] == list(range(5))
    assert {t.family for t in sliced} == {"warptile_splitk"}
    assert len(main) == 3


def test_committed_sweep_parses(tmp_path: Path) -> None:
    records = list(sweep_records(results_dir() / SWEEP_FILE))
    assert len(records) > 5000
    assert {r[0].name for r in records} == {"NVIDIA H100 80GB HBM3"}
    assert all(r[2].status in ("ok", "pruned") for r in records)
