"""What ``tune`` and ``tune-batch`` accept (shape files with a header row, the suite format) and
what they refuse before any study runs (shapes and families a replay table does not hold)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tuner.cli.running import cli, one_error_line
from tuner.data import default_suite, results_dir
from tuner.search.replay import ReplayEvaluator

TABLE = "h100-sweep.jsonl"


@pytest.fixture(scope="module")
def held() -> list[str]:
    """The shapes the default replay table holds, as the CLI writes them."""
    return [str(shape) for shape in ReplayEvaluator(results_dir() / TABLE).shapes()]


@pytest.mark.parametrize(
    "header",
    ["class,M,N,K", "CLASS, m, n, k", "# class,M,N,K", "\ufeffclass,M,N,K"],
    ids=["plain", "spaced", "comment", "byte-order-mark"],
)
def test_tune_batch_reads_a_header_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: list[str], header: str
) -> None:
    shapes = tmp_path / "shapes.csv"
    m, n, k = held[0].split("x")
    shapes.write_text(f"{header}\nsuite,{m},{n},{k}\n", encoding="utf-8")  # a spreadsheet's BOM
    url = f"sqlite:///{tmp_path / 'batch.db'}"
    args = ("--evaluator", "replay", "--sampler", "exhaustive", "--trials", "2", "--db", url)
    code, out, err = cli(capsys, "tune-batch", str(shapes), *args)
    assert code == 0, err
    flat = " ".join(out.split())  # rich wraps long lines
    assert f"|{held[0]}|" in flat and "2 evaluated" in flat


def test_a_header_row_is_only_read_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("class,M,N,K\nsuite,1000,1000,1000\nclass,M,N,K\n")
    code, _, err = cli(capsys, "tune-batch", str(shapes), "--evaluator", "replay")
    assert code == 2
    one_error_line(err, "shapes.csv line 3")


def test_a_shape_the_replay_table_does_not_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: list[str]
) -> None:
    db = tmp_path / "never.db"
    args = ("--evaluator", "replay", "--db", f"sqlite:///{db}")
    code, out, err = cli(capsys, "tune", "--shape", "64x64x64", *args)
    assert code == 2 and out == ""
    one_error_line(err, TABLE, "no measurements for 64x64x64", ", ".join(held))
    assert not db.exists()


def test_the_suite_file_on_a_replay_names_the_first_missing_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: list[str]
) -> None:
    # The bench suite starts with 1024^3, which the table lacks.
    suite = default_suite()
    db = tmp_path / "never.db"
    code, _, err = cli(
        capsys, "tune-batch", str(suite), "--evaluator", "replay", "--db", f"sqlite:///{db}"
    )
    assert code == 2
    one_error_line(err, "no measurements for 1024x1024x1024", ", ".join(held))
    assert not db.exists()


def test_a_family_the_replay_table_does_not_hold_for_the_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: list[str]
) -> None:
    args = ("--evaluator", "replay", "--db", f"sqlite:///{tmp_path / 'never.db'}")
    code, _, err = cli(capsys, "tune", "--shape", held[0], "--family", "streamk", *args)
    assert code == 2
    one_error_line(err, f"no streamk measurements for {held[0]}", "warptile, pipelined")
