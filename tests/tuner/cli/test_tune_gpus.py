"""``gemmtune tune --gpus`` and ``tune-batch --gpus`` through the entry point: bad values are one
line naming the value and the allowed ones; replay workers on fake devices share a study or a
batch with exact budgets, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import NewDatabase
from tests.tuner.cli.running import cli, one_error_line
from tests.tuner.cli.test_tune import BIG, MID, counts, flat, name_of, rows_of
from tests.tuner.gpu.test_gpu_selection import fake_gpu_host
from tuner.core.shape import Shape
from tuner.gpu.selection import REPLAY_GPUS
from tuner.search.replay import ReplayEvaluator

REPLAY = ("--evaluator", "replay", "--family", "warptile", "--sampler", "random", "--seed", "3")


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


@pytest.mark.parametrize("value", ["0", "9", "0,8", "1,1", "two", ""])
def test_bad_gpus_on_a_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    db = tmp_path / "untouched.db"
    args = ("tune", *REPLAY, "--shape", "64x64x64", "--gpus", value, "--db", f"sqlite:///{db}")
    code, _, err = cli(capsys, *args)
    assert code == 2
    one_error_line(err, "`--gpus`", f"got {value!r}", f"1..{REPLAY_GPUS}")
    assert not db.exists()


def test_bad_gpus_name_the_visible_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two of the host's GPUs visible: devices 0 and 1, whatever their physical numbers."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    fake_gpu_host(monkeypatch, 2)
    db = tmp_path / "untouched.db"
    for value in ("3", "4,5", "0"):
        code, _, err = cli(
            capsys, "tune", "--shape", "64x64x64", "--gpus", value, "--db", f"sqlite:///{db}"
        )
        assert code == 2
        one_error_line(err, f"got {value!r}", "1..2", "0..1", "CUDA_VISIBLE_DEVICES=4,5")
    assert "`--gpus 0,`" in err  # "0" is a count; device 0 alone is written "0,"
    assert not db.exists()


def test_one_study_on_three_replay_workers(
    new_database: NewDatabase, replay: ReplayEvaluator, capsys: pytest.CaptureFixture[str]
) -> None:
    url = new_database()
    args = ("tune", *REPLAY, "--shape", "4096x4096x4096", "--trials", "12", "--gpus", "3")
    code, out, err = cli(capsys, *args, "--db", url)
    assert code == 0, err
    rows = rows_of(url, name_of(replay, BIG, ("warptile",)))
    assert len(rows) == 12 == len({r.config_name for r in rows})
    assert counts(url) == (12, 12)  # every claim measured and stored
    assert "12 evaluated" in flat(out)
    # Three workers on one SQLite file are told of PostgreSQL before they start; never on it.
    assert ("note: 3 workers will write to one SQLite file" in flat(err)) is url.startswith(
        "sqlite"
    )


def test_a_batch_spread_over_two_replay_workers(
    new_database: NewDatabase,
    replay: ReplayEvaluator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = new_database()
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("# class,M,N,K\nsquare,1000,1000,1000\n128,4096,4096\n4096,4096,4096\n")
    args = ("tune-batch", str(shapes), *REPLAY, "--trials", "5", "--gpus", "0,1", "--db", url)
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    for shape in (MID, Shape(128, 4096, 4096), BIG):
        rows = rows_of(url, name_of(replay, shape, ("warptile",)))
        assert len(rows) == 5 == len({r.config_name for r in rows}), shape
    assert counts(url) == (15, 15)
    assert flat(out).count("5 evaluated") == 3
