"""``gemmtune report`` on the command line, on the committed bench result: no GPU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

import storage
from tests.storage.factories import H100, measurement
from tests.tuner.cli.running import cli, one_error_line
from tests.tuner.report.test_tuning_summary import FIRST, at, store
from tuner.data import read_suite_file, results_dir

BENCH = results_dir() / "h100-suite.json"


def test_report_writes_suite_bests_that_the_readers_accept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'tuning.db'}"
    rows = [(H100, FIRST, measurement(study="s1", created_at=at(t))) for t in (0, 3, 9, 900)]
    store(storage.open_database(url), rows)
    out_file = tmp_path / "h100.json"
    code, out, err = cli(capsys, "report", str(BENCH), "--db", url, "--out", str(out_file))
    assert code == 0, err
    written = read_suite_file(out_file)
    assert out.strip() == f"wrote {out_file}: {len(written.rows)} shapes"
    assert [r.config for r in written.rows] == [r.config for r in read_suite_file(BENCH).rows]
    first = written.document["shapes"][0]
    assert (first["studies"], first["candidates_evaluated"], first["tuning_wall_s"]) == (
        {"s1": 4},
        4,
        9.0,  # the 891 s pause is between runs
    )


def test_report_with_the_committed_suite_bests_as_the_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'seeded.db'}"
    storage.open_database(url)
    out_file = tmp_path / "bests.json"
    seeded = results_dir() / "h100.json"
    code, _, err = cli(
        capsys, "report", str(BENCH), "--db", url, "--out", str(out_file), "--seeded", str(seeded)
    )
    assert code == 0, err
    document = read_suite_file(out_file).document
    assert document["wall_time"].startswith("carried from h100.json")
    assert all(row["candidates_evaluated"] == 0 for row in document["shapes"])  # an empty store


@pytest.mark.parametrize(
    ("bench", "db_name", "needles"),
    [
        ("gone.json", "tuning.db", ("suite file", "gone.json", "does not exist")),
        (str(BENCH), "never.db", ("no SQLite database at", "never.db")),
    ],
)
def test_report_errors_are_one_line_and_write_nothing(
    bench: str,
    db_name: str,
    needles: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    storage.open_database(f"sqlite:///{tmp_path / 'tuning.db'}")
    url = f"sqlite:///{tmp_path / db_name}"
    code, out, err = cli(capsys, "report", bench, "--db", url, "--out", "bests.json")
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert not (tmp_path / "bests.json").exists()


def test_report_needs_where_to_write(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "report", str(BENCH))
    assert code == 2
    one_error_line(err, "--out")
