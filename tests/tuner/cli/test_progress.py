"""Progress bars: drawn on a terminal, silent when stderr is piped or redirected."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import tuner.cli._progress as progress
from tests.tuner.cli.running import cli
from tuner.kernels.render import render
from tuner.kernels.space import Space


def terminal(monkeypatch: pytest.MonkeyPatch, width: int = 80) -> io.StringIO:
    """Make the bars draw into a string, as on a terminal of ``width`` columns (80)."""
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=width)
    monkeypatch.setattr(progress, "err", console)
    return screen


def test_a_step_bar_counts_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = terminal(monkeypatch)
    with progress.StepBar("compiling", 3) as bar:
        for _ in range(3):
            bar.advance()
    assert "compiling" in screen.getvalue() and "3/3" in screen.getvalue()


def test_a_step_bar_takes_a_library_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = terminal(monkeypatch)
    with progress.StepBar("importing") as bar:  # no total known up front
        bar(40, 120)
        bar(120)
    assert "importing" in screen.getvalue() and "120/120" in screen.getvalue()


def test_no_bar_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'quiet.db'}"
    args = ("--evaluator", "replay", "--sampler", "exhaustive", "--trials", "2", "--db", url)
    code, out, err = cli(capsys, "tune", "--shape", "1000x1000x1000", *args)
    assert code == 0 and "2 evaluated" in " ".join(out.split())
    dump = tmp_path / "dump.json"
    assert cli(capsys, "export", str(dump), "--db", url)[:1] == (0,)
    code, _, import_err = cli(capsys, "import", str(dump), "--db", url)
    assert code == 0 and err == "" and import_err == ""


def test_export_on_a_terminal_counts_the_rows_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'rows.db'}"
    args = ("--evaluator", "replay", "--sampler", "exhaustive", "--trials", "5", "--db", url)
    assert cli(capsys, "tune", "--shape", "1000x1000x1000", *args)[0] == 0
    monkeypatch.setattr("storage.transfer.EXPORT_CHUNK", 2)
    screen = terminal(monkeypatch)
    dump = tmp_path / "dump.json"
    assert cli(capsys, "export", str(dump), "--db", url)[0] == 0
    rows = len(json.loads(dump.read_text())["measurements"])
    assert rows > 2 and "exporting" in screen.getvalue() and f"{rows}/{rows}" in screen.getvalue()


def test_space_compile_on_a_terminal_counts_each_compiled_config(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tuner.cli.kernels as kernels

    compiled: list[str] = []

    def compile_each(space: Space, compiler: object, jobs: int | None, on_done: Any) -> Any:
        checks, counts = space.evaluate()
        for check in checks:
            compiled.append(check.config.name)
            on_done(render(check.config), None)
        return [], counts

    monkeypatch.setattr(kernels, "choose_compiler", lambda arch, asked: "nvcc")
    monkeypatch.setattr(kernels, "compile_candidates", compile_each)
    screen = terminal(monkeypatch)
    args = ("space", "-f", "smem_tiling", "-s", "256x256x256", "--compile", "--limit", "1")
    assert cli(capsys, *args)[0] == 0
    total = len(compiled)
    assert total > 1 and "compiling" in screen.getvalue()
    assert f"{total}/{total}" in screen.getvalue()


def test_tune_batch_lines_show_the_commands_pace_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tune-batch's study lines carry the command's candidates a minute, and shapes a minute
    once a shape is done (on a wide terminal: a narrow one cuts the line's end); ``tune``'s
    lines do not."""
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("1000,1000,1000\n4096,4096,4096\n")
    url = f"sqlite:///{tmp_path / 'pace.db'}"
    args = ("--evaluator", "replay", "--sampler", "exhaustive", "--trials", "3", "--db", url)
    screen = terminal(monkeypatch, width=160)
    assert cli(capsys, "tune-batch", str(shapes), *args)[0] == 0
    drawn = screen.getvalue()
    assert "candidates/min" in drawn and "shapes/min" in drawn
    screen = terminal(monkeypatch, width=160)
    assert cli(capsys, "tune", "--shape", "128x4096x4096", *args)[0] == 0
    assert "candidates/min" not in screen.getvalue()
