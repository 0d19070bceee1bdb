"""Where every reader finds the committed data: inside the package, unless the variable says."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner.data
from tuner.data import (
    RESULTS_ENV_VAR,
    data_location,
    default_suite,
    output_dir,
    read_suite_file,
    read_sweep_table,
    results_dir,
    suite_files,
    sweep_tables,
)
from tuner.data.location import SUITE_BESTS, all_suite_files

PACKAGE = Path(tuner.data.__file__).parent


@pytest.fixture(autouse=True)
def no_results_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESULTS_ENV_VAR, raising=False)


def test_the_package_holds_the_results_and_the_default_suite() -> None:
    where = data_location()
    assert (where.results, where.suite) == (
        PACKAGE / "results",
        PACKAGE / "suites" / "shapes.csv",
    )
    assert not where.from_environment and results_dir() == where.results
    assert where.describe() == f"{PACKAGE / 'results'} (from the installed package)"
    assert default_suite().read_text().strip()


def test_the_variable_moves_the_results_not_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RESULTS_ENV_VAR, str(tmp_path))
    where = data_location()
    assert (where.results, where.from_environment) == (tmp_path, True)
    assert default_suite() == PACKAGE / "suites" / "shapes.csv"
    assert where.describe() == f"{tmp_path} (from ${RESULTS_ENV_VAR})"


def test_an_empty_variable_is_no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RESULTS_ENV_VAR, "")
    assert results_dir() == PACKAGE / "results"


def test_bench_writes_into_the_working_directory_never_into_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert output_dir() == tmp_path
    monkeypatch.setenv(RESULTS_ENV_VAR, str(tmp_path / "results"))
    assert output_dir() == tmp_path  # the variable says where to read, not where to write


def test_the_readers_find_the_committed_files_by_their_patterns() -> None:
    folder = results_dir()
    tables = sweep_tables(folder)
    assert folder / "h100-sweep.jsonl" in tables
    assert all(p.name.endswith(".jsonl") and "-sweep" in p.name for p in tables)
    suites = [p.name for p in suite_files(folder)]
    assert {"h100-suite.json", "h200-suite.json"} <= set(suites)
    assert all(name.endswith("-suite.json") for name in suites)
    assert (folder / SUITE_BESTS).is_file()
    every = {p.name for p in all_suite_files(folder)}
    assert set(suites) < every  # the strict float32 suites, and those of other types and classes
    assert {"h100-suite-bfloat16-nt.json", "h100-suite-float32-nn-bf16x3.json"} <= every


def test_the_results_folder_holds_only_what_the_readers_read() -> None:
    """Anything else there would travel in every wheel and image without a reader."""
    folder = results_dir()
    read = {*sweep_tables(folder), *all_suite_files(folder), folder / SUITE_BESTS}
    assert sorted(folder.iterdir()) == sorted(read)


def test_every_committed_file_reads_under_the_strict_policy() -> None:
    """A committed file that broke its format would stop a replay, a study or a server."""
    folder = results_dir()
    for path in sweep_tables(folder):
        assert read_sweep_table(path).rows, path
    for path in [*all_suite_files(folder), folder / SUITE_BESTS]:
        assert read_suite_file(path).rows, path
