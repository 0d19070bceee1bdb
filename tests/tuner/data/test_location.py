"""Where every reader finds the committed results, and what a wheel carries of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.data import (
    RESULTS_ENV_VAR,
    data_location,
    default_suite,
    location,
    output_dir,
    read_suite_file,
    read_sweep_table,
    results_dir,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def no_results_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESULTS_ENV_VAR, raising=False)


def test_a_checkout_reads_its_own_benchmarks_folder() -> None:
    where = data_location()
    assert (where.results, where.suite, where.origin) == (
        ROOT / "benchmarks" / "results",
        ROOT / "benchmarks" / "shapes.csv",
        "checkout",
    )
    assert output_dir() == results_dir() == where.results
    assert where.describe() == f"{ROOT / 'benchmarks' / 'results'} (from the source checkout)"


def test_the_variable_wins_for_results_not_for_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RESULTS_ENV_VAR, str(tmp_path))
    where = data_location()
    assert (where.results, where.origin) == (tmp_path, "environment")
    assert output_dir() == tmp_path
    assert default_suite() == ROOT / "benchmarks" / "shapes.csv"
    assert where.describe() == f"{tmp_path} (from ${RESULTS_ENV_VAR})"


def test_an_installed_copy_reads_its_packaged_data_and_writes_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"  # no pyproject.toml, no benchmarks/: not a checkout
    (site / "tuner").mkdir(parents=True)
    monkeypatch.setattr(location, "_ROOT", site)
    monkeypatch.chdir(tmp_path)
    where = data_location()
    assert (where.results, where.suite, where.origin) == (
        site / "tuner" / "_benchmarks" / "results",
        site / "tuner" / "_benchmarks" / "shapes.csv",
        "package",
    )
    assert output_dir() == tmp_path  # not into the install


def test_the_wheel_carries_what_the_readers_need_and_no_more() -> None:
    shipped = location.shipped_files(ROOT)
    results = ROOT / "benchmarks" / "results"
    names = {Path(source).relative_to(ROOT / "benchmarks").as_posix() for source in shipped}
    assert {f"results/{p.name}" for p in results.glob("h100-sweep*.jsonl")} <= names
    assert {"shapes.csv", "results/h100.json", "results/h100-suite.json"} <= names
    assert {"results/h200-suite.json"} <= names
    assert not [n for n in names if n.startswith(("results/ncu", "results/history"))]
    assert not [n for n in names if n.endswith((".log", ".md", ".svg"))]
    assert all(target.startswith("tuner/_benchmarks/") for target in shipped.values())
    assert shipped[str(ROOT / "benchmarks" / "shapes.csv")] == "tuner/_benchmarks/shapes.csv"


def test_every_shipped_file_reads_under_the_strict_policy() -> None:
    """A committed file that broke its format would stop a replay, a study or a server."""
    for source in location.shipped_files(ROOT):
        path = Path(source)
        if path.suffix == ".jsonl":
            assert read_sweep_table(path).rows, path
        elif path.suffix == ".json":
            assert read_suite_file(path).rows, path


def test_no_wheel_without_the_committed_results(tmp_path: Path) -> None:
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no committed results under"):
        location.shipped_files(tmp_path)
