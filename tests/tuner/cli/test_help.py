"""Every command and every option of ``gemmtune`` explains itself in ``--help``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer.main

from tests.tuner.cli.running import cli
from tuner import __version__
from tuner.cli import app


def commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf command under ``command`` with its path (``("db", "upgrade")``)."""
    children = getattr(command, "commands", None)
    if children is None:
        yield path, command
        return
    for name, child in children.items():
        yield from commands(child, (*path, name))


def test_every_option_and_argument_has_help() -> None:
    found = list(commands(typer.main.get_command(app)))
    assert len(found) >= 12  # space ... serve and db upgrade: the walk reached them
    missing = [
        f"{' '.join(path)} {param.name}"
        for path, command in found
        for param in command.params
        if not (getattr(param, "help", None) or "").strip()
    ]
    assert missing == []


def test_every_command_has_help() -> None:
    assert [
        path for path, command in commands(typer.main.get_command(app)) if not command.help
    ] == []


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "--version")
    assert (code, out.strip(), err) == (0, f"gemmtune {__version__}", "")
