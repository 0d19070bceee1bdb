"""Progress bars: drawn on a terminal, silent when stderr is piped or redirected."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

import tuner.cli._progress as progress
from tests.tuner.cli.running import cli


def terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Make the bars draw into a string, as on an 80-column terminal."""
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
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
