"""Bad input to any command ends with exit code 2 and one line naming the value, and leaves
files and databases as they were."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

import storage
from tests.tuner.cli.running import cli, one_error_line

NOT_UTF8 = b"class,M,N,K\nsquare,1000,1000,1000\nll\xe9m,4096,4096,4096\n"  # Latin-1 "é"


def dump_of(path: Path) -> list[str]:
    """The database's content as SQL (its file's bytes move when SQLite checkpoints)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return list(connection.iterdump())


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A database with the schema and nothing else."""
    url = f"sqlite:///{tmp_path / 'results.db'}"
    storage.open_database(url)
    return url


def test_compile_with_nvrtc_without_cupy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # find_spec answers None: not installed
    args = ("compile", "-c", "vectorized_bm64_bn64_bk16_tm4_tn4", "--compiler", "nvrtc")
    code, out, err = cli(capsys, *args)
    assert code == 2 and out == ""
    one_error_line(err, "--compiler nvrtc needs CuPy", "gemmtune[gpu]", "--compiler nvcc")


def test_compile_with_nvcc_without_the_toolkit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc there
    args = ("space", "-f", "warptile", "-s", "64x64x64", "--compile", "--compiler", "nvcc")
    code, _, err = cli(capsys, *args)
    assert code == 2
    one_error_line(err, "--compiler nvcc needs", "nvcc on PATH")


@pytest.mark.parametrize("where", ["directory", "missing-folder"])
def test_export_to_a_path_that_cannot_be_a_file(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    target = tmp_path if where == "directory" else tmp_path / "nope" / "dump.json"
    code, out, err = cli(capsys, "export", str(target), "--db", db)
    assert code == 2 and out == ""
    one_error_line(
        err, repr(str(target)), "directory" if where == "directory" else "does not exist"
    )
    assert not (tmp_path / "nope").exists()


def test_export_from_a_mistyped_database_leaves_the_file_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text("yesterday's export")
    code, _, err = cli(capsys, "export", str(dump), "--db", f"sqlite:///{tmp_path / 'typo.db'}")
    assert code == 2
    one_error_line(err, "typo.db")
    assert dump.read_text() == "yesterday's export"


def test_a_csv_that_is_not_utf8(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_bytes(NOT_UTF8)
    for command in (
        ("tune-batch", str(shapes), "--evaluator", "replay"),
        ("bench", "--suite", str(shapes)),
    ):
        code, _, err = cli(capsys, *command, "--db", db)
        assert code == 2, command
        one_error_line(err, repr(str(shapes)), "not UTF-8")


def test_json_that_is_not_utf8(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump.json"
    dump.write_bytes(b'{"format": "gemmtune-export", "note": "\xff"}')
    code, _, err = cli(capsys, "import", str(dump), "--db", db)
    assert code == 2
    one_error_line(err, repr(str(dump)), "not UTF-8")


@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_serve_on_an_impossible_port(capsys: pytest.CaptureFixture[str], port: str) -> None:
    code, out, err = cli(capsys, "serve", "--port", port)
    assert code == 2 and out == ""
    one_error_line(err, "--port")


@pytest.mark.parametrize(
    "command",
    [
        ("tune", "--evaluator", "replay", "--shape", "1000x1000x1000", "--trials", "1"),
        ("import", "EXPORT"),
        ("db", "upgrade"),
    ],
)
@pytest.mark.parametrize("query", ["?mode=ro", "?mode=ro&uri=true"])
def test_a_read_only_sqlite_url_for_a_command_that_writes(
    tmp_path: Path,
    db: str,
    capsys: pytest.CaptureFixture[str],
    command: tuple[str, ...],
    query: str,
) -> None:
    dump = tmp_path / "export.json"
    assert cli(capsys, "export", str(dump), "--db", db)[0] == 0
    path = Path(db.removeprefix("sqlite:///"))
    before = dump_of(path)
    url = f"sqlite:///{'file:' if 'uri' in query else ''}{path}{query}"
    args = [str(dump) if a == "EXPORT" else a for a in command]
    code, _, err = cli(capsys, *args, "--db", url)
    assert code == 2
    one_error_line(err, "read-only by mode=ro", str(path))
    assert dump_of(path) == before


def test_a_read_only_sqlite_url_is_fine_for_reading(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///file:{db.removeprefix('sqlite:///')}?mode=ro&uri=true"
    code, out, _ = cli(capsys, "best", "--shape", "1000x1000x1000", "--db", url)
    assert code == 0 and "source: default" in out


@pytest.mark.parametrize("limit", ["-3", "-1"])
def test_space_refuses_a_negative_limit(capsys: pytest.CaptureFixture[str], limit: str) -> None:
    code, _, err = cli(
        capsys, "space", "--family", "warptile", "--shape", "64x64x64", "--limit", limit
    )
    assert code == 2
    one_error_line(err, "`--limit`", limit, "0 or more")


def test_tune_refuses_a_negative_timeout(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ("tune", "--evaluator", "replay", "--shape", "64x64x64", "--trials", "2")
    code, _, err = cli(capsys, *args, "--timeout", "-1", "--db", db)
    assert code == 2
    one_error_line(err, "`timeout` must be at least 0 seconds", "-1")


@pytest.mark.parametrize("kind", ["not UTF-8", "directory"])
def test_a_replay_table_that_cannot_be_read_is_one_line(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    table = tmp_path / "table.jsonl"
    if kind == "directory":
        table.mkdir()
    else:
        table.write_bytes(b'{"family": "warptile", "name": "caf\xe9"}\n')  # Latin-1
    args = ("tune", "--evaluator", "replay", "--replay-table", str(table), "-s", "64x64x64")
    code, _, err = cli(capsys, *args, "--db", db)
    assert code == 2
    needle = "is a directory; give a file" if kind == "directory" else "is not UTF-8 text"
    one_error_line(err, f"sweep table {str(table)!r}", needle)
