"""Running ``gemmtune`` in this process, as the console entry point does, for the CLI tests."""

from __future__ import annotations

import pytest

from tuner.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``gemmtune ARGS`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    else:
        code = 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str, *needles: str) -> None:
    """``err`` is one ``gemmtune: error:`` line holding every needle (no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gemmtune: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
