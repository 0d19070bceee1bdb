"""``gemmtune results --format suite``: a tuning database's bests written as a suite file, which
a fresh server preloads and then answers every one of those problems ``exact`` with the same
config (how the shipped grid is made from the workers' database)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import storage
from api.preload import Outcome, preload
from tests.tuner.cli.running import cli, one_error_line
from tuner.answers.device_kind import DeviceSpec
from tuner.answers.index import load_snapshot
from tuner.data import read_suite_file

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def tuned_db(tmp_path: Path) -> str:
    """A database holding the committed H100 results (every suite file and sweep table)."""
    url = f"sqlite:///{tmp_path / 'tuned.db'}"
    assert preload(storage.open_database(url)).outcome is Outcome.STORED
    return url


def _key(best: Any) -> tuple[object, ...]:
    """A best config's problem: shape, dtype, layout, type of C and accuracy class."""
    s = best.shape
    return (s.m, s.n, s.k, s.dtype, s.layout, s.out_dtype, best.accuracy)


def _bests(url: str) -> dict[tuple[object, ...], Any]:
    """Each problem's best measurement on the H100."""
    with storage.open_existing_database(url)() as session:
        return {_key(b): b.measurement for b in storage.best_configs(session, H100)}


def test_a_written_suite_preloads_into_the_same_exact_answers(
    capsys: pytest.CaptureFixture[str], tuned_db: str, tmp_path: Path
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    path = folder / "h100-grid-suite.json"
    code, out, err = cli(
        capsys, "results", "--format", "suite", "--device", H100, "--out", str(path),
        "--suite", "a test grid", "--db", tuned_db,
    )  # fmt: skip
    assert code == 0, err
    bests = {key: m.config_name for key, m in _bests(tuned_db).items()}
    assert f"wrote {len(bests)} best configs" in out and len(bests) > 20
    written = read_suite_file(path)
    assert written.gpu.name == H100 and written.gpu.arch == "sm_90" and written.gpu.sm_count == 132
    assert written.document["suite"] == "a test grid"

    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    sessions = storage.open_database(fresh)
    assert preload(sessions, folder).outcome is Outcome.STORED
    assert {key: m.config_name for key, m in _bests(fresh).items()} == bests
    with sessions() as session:
        after = load_snapshot(session)
    with storage.open_existing_database(tuned_db)() as session:
        before = load_snapshot(session)
    for (m, n, k, dtype, layout, out_dtype, accuracy), config in bests.items():
        # The H100's answer: other devices' bests of the same problem are in the database too.
        asked = dict(accuracy=accuracy, out_dtype=out_dtype, device=DeviceSpec(H100))
        answer = after.answer(m, n, k, dtype, layout, **asked)
        assert answer.source == "exact", (m, n, k, dtype, layout, accuracy)
        assert answer.name == before.answer(m, n, k, dtype, layout, **asked).name
        if accuracy == "exact":
            assert answer.name == config, (m, n, k, dtype, layout)


def test_the_written_figures_are_the_databases(
    capsys: pytest.CaptureFixture[str], tuned_db: str, tmp_path: Path
) -> None:
    path = tmp_path / "h100-grid-suite.json"
    cli(capsys, "results", "--format", "suite", "--device", H100, "--out", str(path),
        "--db", tuned_db)  # fmt: skip
    rows = json.loads(path.read_text())["shapes"]
    stored = _bests(tuned_db)
    assert len(rows) == len(stored)
    for row in rows:
        problem = ("m", "n", "k", "dtype", "layout", "out_dtype", "accuracy")
        measurement = stored[tuple(row[name] for name in problem)]
        assert (row["config"], row["ms"], row["cublas_ms"], row["ratio"]) == (
            measurement.config_name,
            measurement.ms,
            measurement.cublas_ms,
            measurement.ratio,
        )


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--format", "suite", "--device", H100), ("give --out",)),
        (("--out", "x.json"), ("give --out",)),
        (("--format", "suite", "--out", "x.json"), ("name it with --device",)),
        (
            ("--format", "suite", "--device", "NVIDIA H20O", "--out", "x.json"),
            ("'NVIDIA H20O' is not a trusted GPU", H100),
        ),
        (("--format", "yaml"), ("table, json, csv or suite", "'yaml'")),
    ],
)
def test_bad_suite_requests_are_one_line(
    capsys: pytest.CaptureFixture[str],
    tuned_db: str,
    tmp_path: Path,
    args: tuple[str, ...],
    needles: tuple[str, ...],
) -> None:
    code, out, err = cli(capsys, "results", *args, "--db", tuned_db)
    assert code == 2 and out == ""
    one_error_line(err, *needles)


def test_a_database_with_nothing_tuned_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    storage.open_database(url)
    path = tmp_path / "grid-suite.json"
    code, _, err = cli(
        capsys, "results", "--format", "suite", "--device", H100, "--out", str(path), "--db", url
    )
    assert code == 2 and not path.exists()
    one_error_line(err, "not a trusted GPU")
