"""``gemmtune tune`` and friends end to end on the replay table, into SQLite and PostgreSQL.

Most commands run in process through ``tuner.cli.main`` (the console entry point's function);
several workers and kill -9 need real processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

import storage
from tests.conftest import NewDatabase
from tests.tuner.cli.running import cli, one_error_line
from tuner.core.phases import Phase
from tuner.core.shape import Shape
from tuner.data import results_dir
from tuner.run.runner import (
    DEFAULT_FAMILIES,
    DEFAULT_HALF_FAMILIES,
    VENDOR_FAMILIES,
    default_families,
)
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import study_name

BIG, MID = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000)
QUICK = ("--evaluator", "replay", "--family", "warptile", "--sampler", "random")


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def name_of(replay: ReplayEvaluator, shape: Shape, families: tuple[str, ...]) -> str:
    return study_name(replay.device.name, shape, families)


def rows_of(url: str, study: str | None = None) -> list[storage.Measurement]:
    """Every stored measurement (of ``study``), in trial order."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            if study is not None:
                return list(storage.measurements_for_study(session, study))
            return list(
                session.scalars(select(storage.Measurement).order_by(storage.Measurement.id))
            )
    finally:
        engine.dispose()


def counts(url: str) -> tuple[int, int]:
    """(measurements of candidates, claims) stored; finalists' re-measurements not counted."""
    engine = storage.make_engine(url)
    try:
        with engine.connect() as connection:
            measurements = connection.scalar(
                select(func.count())
                .select_from(storage.Measurement)
                .where(storage.Measurement.phase == Phase.SCREENING.value)
            )
            claims = connection.scalar(select(func.count()).select_from(storage.Claim))
        return measurements or 0, claims or 0
    finally:
        engine.dispose()


def stored_so_far(url: str) -> int:
    """Measurements stored by a worker that may still be creating the schema."""
    try:
        return counts(url)[0]
    except DBAPIError:
        return 0


def flat(text: str) -> str:
    """Rich wraps long lines at the terminal width; undo that."""
    return " ".join(text.split())


# 1. A replayed study end to end, on both backends.


def test_replayed_study_end_to_end(
    new_database: NewDatabase, replay: ReplayEvaluator, capsys: pytest.CaptureFixture[str]
) -> None:
    url = new_database()
    code, out, err = cli(
        capsys, "tune", "--evaluator", "replay", "--shape", "4096x4096x4096", "--trials", "20",
        "--db", url,
    )  # fmt: skip
    assert code == 0, err
    name = name_of(replay, BIG, ("warptile", "pipelined"))
    assert "20 evaluated" in flat(out)
    rows = rows_of(url, name)
    assert len(rows) == 20 and len({r.config_name for r in rows}) == 20
    assert all(r.study == name for r in rows)
    numbers = [r.trial_number for r in rows]
    assert None not in numbers and len(set(numbers)) == 20
    trials = optuna.load_study(study_name=name, storage=url).trials
    for row in rows:
        assert row.trial_number is not None
        assert trials[row.trial_number].user_attrs["config"] == row.config_name
        recorded = replay.rows[(BIG, row.config_name)]
        assert (row.status, row.ms, row.cublas_ms) == (
            recorded.status, recorded.ms, recorded.cublas_ms
        )  # fmt: skip
        assert (row.registers, row.smem_bytes, row.occupancy) == (
            recorded.registers, recorded.smem_bytes, recorded.occupancy
        )  # fmt: skip
    fastest = min((r for r in rows if r.status == "ok"), key=lambda r: r.ms or 0.0)
    assert {r.evaluator for r in rows_of(url)} == {"replay"}  # finalists too
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine)() as session:
        best = storage.best_for(session, replay.device.name, 4096, 4096, 4096)
        found = storage.fastest_replayed(session, replay.device.name, 4096, 4096, 4096)
    engine.dispose()
    # What the study found is the final re-measurement of the fastest screened config (the
    # replay answers the finalists with the table's times); replayed, it is no best config.
    assert best is None
    assert found is not None and found.config_name == fastest.config_name
    assert (found.study, found.phase) == (name, Phase.FINAL) and found.ms == fastest.ms

    # So nothing is served from it: the answer is the default rule's, and no result is listed.
    code, out, _ = cli(capsys, "best", "--shape", "4096x4096x4096", "--db", url)
    assert code == 0 and out.splitlines()[0] != fastest.config_name
    assert "source: default" in out

    code, out, _ = cli(capsys, "results", "--format", "json", "--db", url)
    assert code == 0 and json.loads(out) == []


# 2. Resume.


def test_rerun_resumes_the_study(
    tmp_path: Path, replay: ReplayEvaluator, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'resume.db'}"
    args: tuple[str, ...] = ("tune", "--evaluator", "replay", "--family", "warptile")
    args = (*args, "--sampler", "tpe")
    args = (*args, "--shape", "1000x1000x1000", "--db", url)
    assert cli(capsys, *args, "--trials", "6")[0] == 0
    name = name_of(replay, MID, ("warptile",))
    before = {(r.id, r.config_name) for r in rows_of(url, name)}
    code, out, err = cli(capsys, *args, "--trials", "15")
    assert code == 0, err
    assert "15 evaluated" in flat(out)
    rows = rows_of(url, name)
    assert len(rows) == 15 and len({r.config_name for r in rows}) == 15
    assert before <= {(r.id, r.config_name) for r in rows}
    assert cli(capsys, *args, "--trials", "15")[0] == 0  # target reached: nothing more
    assert len(rows_of(url, name)) == 15


# 3. Two workers on one study.


def test_two_workers_share_one_study(new_database: NewDatabase, replay: ReplayEvaluator) -> None:
    """PostgreSQL runs Optuna's random sampler (shared Optuna tables, claims); SQLite the
    exhaustive walk (claims and concurrent writes only), which keeps CI time down."""
    url = new_database()  # fresh: the workers also race to create the schema
    sampler = "random" if url.startswith("postgresql") else "exhaustive"
    args: tuple[str, ...] = ("tune", "--evaluator", "replay", "--family", "warptile")
    args = (*args, "--sampler", sampler)
    args = (*args, "--shape", "4096x4096x4096", "--trials", "30", "--db", url)
    workers = [spawn(*args) for _ in range(2)]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    rows = rows_of(url, name_of(replay, BIG, ("warptile",)))
    names = [r.config_name for r in rows]
    assert len(names) == len(set(names)), "a candidate was evaluated twice"
    # The target is reached; both workers may start their last candidate at the same moment.
    assert 30 <= len(rows) <= 31
    assert counts(url) == (len(rows), len(rows))  # every claim was measured and stored


# 4. kill -9 in the middle of a study.


def test_kill_9_loses_no_completed_trial(tmp_path: Path, replay: ReplayEvaluator) -> None:
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    args = ("tune", *QUICK, "--shape", "1000x1000x1000", "--db", url)
    worker = spawn(*args, "--trials", "200")
    try:
        while worker.poll() is None and (
            not (tmp_path / "killed.db").exists() or stored_so_far(url) < 5
        ):
            time.sleep(0.05)
    except Exception:
        worker.kill()
        raise
    assert worker.poll() is None, worker.communicate()[1]
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate()
    name = name_of(replay, MID, ("warptile",))
    before = {(r.id, r.config_name, r.status, r.ms) for r in rows_of(url, name)}
    assert len(before) >= 5
    target = len(before) + 5
    rerun = spawn(*args, "--trials", str(target))
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    rows = rows_of(url, name)
    assert before <= {(r.id, r.config_name, r.status, r.ms) for r in rows}
    assert len(rows) == target and len({r.config_name for r in rows}) == target


# 8. Bad input: exit code 2, one line naming the value, nothing stored.


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("tune", "--shape", "64x64x64", "--sampler", "annealing"), "'annealing'"),
        (("tune", "--shape", "64x64x64", "--family", "tiled"), "'tiled'"),
        (("tune", "--shape", "64x64x64", "--evaluator", "abacus"), "'abacus'"),
        (("tune", "--shape", "4096x"), "'4096x'"),
        (("tune", "--shape", "0x1x1"), "0"),
        (("tune", "--shape", "64x64x64", "--trials", "many"), "'--trials'"),
        (("best", "--shape", "12xAx3"), "'A'"),
        (("results", "--format", "xml"), "'xml'"),
        (("tune", "--shape", "64x64x64", "--dtype", "half"), "got 'half'"),
        (("tune", "--shape", "64x64x64", "--layout", "NC"), "got 'NC'"),
        (("best", "--shape", "8x8x8", "--layout", "row"), "NN, NT, TN, TT"),
        (
            (
                "tune",
                "-s",
                "64x64x64",
                "--dtype",
                "bfloat16",
                "-f",
                "warptile",
                "--evaluator",
                "replay",
            ),
            "no family of warptile computes bfloat16 inputs in layout NN writing bfloat16 C; "
            "use hmma",
        ),
    ],
    ids=[
        "sampler",
        "family",
        "evaluator",
        "shape",
        "zero",
        "trials",
        "best-shape",
        "format",
        "dtype",
        "layout",
        "best-layout",
        "no-family-computes",
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str
) -> None:
    db = tmp_path / "untouched.db"
    code, _, err = cli(capsys, *args, "--db", f"sqlite:///{db}")
    assert code == 2
    one_error_line(err, needle)
    if db.exists():
        assert counts(f"sqlite:///{db}") == (0, 0)


def test_gp_without_torch_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: gp runs (tested in test_study)")
    args = ("tune", "--evaluator", "replay", "--shape", "1000x1000x1000", "--sampler", "gp")
    code, _, err = cli(capsys, *args, "--db", f"sqlite:///{tmp_path / 'gp.db'}")
    assert code == 2
    one_error_line(err, "'gp'", "gemmtune[gp]")


def test_gpu_evaluator_without_a_gpu_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed: the GPU evaluator may really start")
    args = ("tune", "--evaluator", "gpu", "--shape", "64x64x64", "--trials", "1")
    code, _, err = cli(capsys, *args, "--db", f"sqlite:///{tmp_path / 'gpu.db'}")
    assert code == 2
    one_error_line(err, "--evaluator gpu", "CuPy")


def test_unreachable_postgresql(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:1/gemmtune"
    code, _, err = cli(
        capsys, "tune", "--evaluator", "replay", "--shape", "1000x1000x1000", "--db", url
    )
    assert code == 2
    one_error_line(err, "127.0.0.1:1")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_only_sqlite_is_refused_and_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ro.db"
    url = f"sqlite:///{db}"
    args = ("tune", "--evaluator", "replay", "--sampler", "exhaustive", "--shape", "1000x1000x1000")
    assert cli(capsys, *args, "--trials", "2", "--db", url)[0] == 0
    db.chmod(0o444)
    try:
        digest = _digest(db)
        code, _, err = cli(capsys, *args, "--db", url)
        assert code == 2
        one_error_line(err, "read-only", str(db))
        assert _digest(db) == digest
    finally:
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)


@pytest.fixture
def tuned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[str]:
    """A SQLite database holding two short exhaustive studies."""
    url = f"sqlite:///{tmp_path / 'tuned.db'}"
    for shape in ("4096x4096x4096", "1000x1000x1000"):
        args = ("tune", "--evaluator", "replay", "--sampler", "exhaustive", "--trials", "4")
        assert cli(capsys, *args, "--shape", shape, "--db", url)[0] == 0
    yield url


def test_tune_batch_runs_every_shape(
    tmp_path: Path, replay: ReplayEvaluator, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("# class,M,N,K\nsquare,1000,1000,1000\n128,4096,4096\n")
    url = f"sqlite:///{tmp_path / 'batch.db'}"
    args = ("--evaluator", "replay", "--sampler", "exhaustive", "--trials", "3", "--db", url)
    code, out, err = cli(capsys, "tune-batch", str(shapes), *args)
    assert code == 0, err
    for shape in (MID, Shape(128, 4096, 4096)):
        assert len(rows_of(url, name_of(replay, shape, ("warptile", "pipelined")))) == 3
    # The pace at the end: this command's shapes and candidates, and rates that agree with
    # its wall time. Rerun, the studies are done: the shapes count, no candidate does.
    assert pace_of(out)[:2] == (2, 6)
    code, out, err = cli(capsys, "tune-batch", str(shapes), *args)
    assert code == 0, err
    assert pace_of(out)[:2] == (2, 0)


def pace_of(out: str) -> tuple[int, int, float]:
    """Shapes, candidates and seconds of tune-batch's last line, checked against its rates."""
    line = " ".join(out.split()).rsplit(" best ", 1)[-1]
    found = re.search(
        r"(\d+) shapes, (\d+) candidates evaluated in ([\d.]+) s, ([\d.]+) s a shape: "
        r"([\d.]+) shapes/min, (\d+) candidates/min",
        line,
    )
    assert found is not None, out
    shapes, candidates, seconds = int(found[1]), int(found[2]), float(found[3])
    # The seconds are printed to a tenth: on a short run that rounding moves the rates by up to
    # 0.05 / seconds of themselves.
    rel = max(0.05, 0.06 / seconds)
    assert float(found[4]) == pytest.approx(seconds / shapes, abs=0.06)
    assert float(found[5]) == pytest.approx(60 * shapes / seconds, rel=rel, abs=0.006)
    assert int(found[6]) == pytest.approx(60 * candidates / seconds, rel=rel, abs=1)
    return shapes, candidates, seconds


@pytest.mark.parametrize(
    ("row", "needle"),
    [("1000,1000", "expected M,N,K"), ("1000,x,1000", "'x'"), ("a,b,0,1,1", "a,b,0,1,1")],
    ids=["short", "not-a-number", "long"],
)
def test_tune_batch_bad_row_names_its_line_and_stores_nothing(
    tuned: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, needle: str
) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(f"M,N,K\n4096,4096,4096\n{row}\n".replace("M,N,K", "# M,N,K"))
    before = counts(tuned)
    args = ("--evaluator", "replay", "--trials", "3", "--db", tuned)
    code, _, err = cli(capsys, "tune-batch", str(shapes), *args)
    assert code == 2
    one_error_line(err, "shapes.csv line 3", needle)
    assert counts(tuned) == before


def test_export_import_round_trip(
    tuned: str, new_database: NewDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.json"
    assert cli(capsys, "export", str(dump), "--db", tuned)[0] == 0
    target = new_database()
    code, out, err = cli(capsys, "import", str(dump), "--db", target)
    assert code == 0, err
    exported = len(json.loads(dump.read_text())["measurements"])
    assert exported > 8  # the fixture's 8 candidates and their finalists' re-measurements
    assert f"imported {exported} measurements" in flat(out)
    code, out, _ = cli(capsys, "import", str(dump), "--db", target)
    assert code == 0 and "imported 0 measurements" in flat(out)  # idempotent
    assert f"{exported} were already stored" in flat(out)  # and it says why nothing was added
    results = [
        json.loads(cli(capsys, "results", "--format", "json", "--db", db)[1])
        for db in (tuned, target)
    ]
    assert results[0] == results[1] == []  # replayed rows are no best config, here or there
    kept = [[(r.config_name, r.evaluator) for r in rows_of(db)] for db in (tuned, target)]
    assert kept[0] == kept[1] and {mark for _, mark in kept[1]} == {"replay"}


@pytest.mark.parametrize(
    ("text", "needle"),
    [('{"format": "gemmtune-export", ', "is not JSON"), ('{"format": "csv"}', "format")],
    ids=["truncated", "not-an-export"],
)
def test_import_of_malformed_json_changes_nothing(
    tuned: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    before = counts(tuned)
    code, _, err = cli(capsys, "import", str(bad), "--db", tuned)
    assert code == 2
    one_error_line(err, needle)
    assert counts(tuned) == before


def test_default_families_are_a_replay_tables_own_or_the_gpu_set(replay: ReplayEvaluator) -> None:
    assert default_families(replay) == ("warptile", "pipelined")  # what h100-sweep.jsonl holds
    streamk = ReplayEvaluator(results_dir() / "h100-sweep-streamk.jsonl")
    assert default_families(streamk) == ("streamk",)

    class NoTable:  # the GPU evaluator answers for every family
        families: tuple[str, ...] = ()

    # Without a replay table, the defaults that compute the shape's dtype and layout, and the
    # vendor library beside them.
    assert default_families(NoTable()) == (*DEFAULT_FAMILIES, *VENDOR_FAMILIES)  # type: ignore[arg-type]
    half = Shape(64, 64, 64, "bfloat16", "NT", "float32")
    assert default_families(NoTable(), half) == (*DEFAULT_HALF_FAMILIES, *VENDOR_FAMILIES)  # type: ignore[arg-type]
    half_c = half.with_out("bfloat16")  # split-K families write float32 C only
    assert default_families(NoTable(), half_c) == ("hmma", "wgmma", "tma_ws", *VENDOR_FAMILIES)  # type: ignore[arg-type]
    assert {"hmma", "wgmma"} <= set(DEFAULT_HALF_FAMILIES)
    assert default_families(NoTable(), Shape(64, 64, 64)) == (*DEFAULT_FAMILIES, *VENDOR_FAMILIES)  # type: ignore[arg-type]
    assert default_families(replay, half) == (
        "warptile",
        "pipelined",
    )  # its own, whatever the shape


def test_tune_on_two_merged_replay_tables(
    new_database: NewDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    """--replay-table twice: the tables merge, their families are the default, and the study
    evaluates only configs the tables hold (each answer the table's own)."""
    url = new_database()
    tables = [
        results_dir() / "h100-sweep-streamk.jsonl",
        results_dir() / "h100-sweep-skinny-128.jsonl",
    ]
    merged = ReplayEvaluator(tables)
    shape = Shape(128, 4096, 4096)
    code, out, err = cli(
        capsys, "tune", "--evaluator", "replay", "--replay-table", str(tables[0]),
        "--replay-table", str(tables[1]), "--shape", str(shape), "--trials", "12",
        "--sampler", "ranked", "--warm-start", "0", "--db", url,
    )  # fmt: skip
    assert code == 0, err
    assert "12 evaluated" in flat(out)
    rows = rows_of(url, name_of(merged, shape, ("streamk", "skinny")))
    assert len(rows) == 12
    for row in rows:
        assert row.ms == merged.rows[(shape, row.config_name)].ms
