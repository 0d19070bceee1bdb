"""The quick commands start without the machinery they do not use: ``gemmtune --help`` imports
no database, study or web library, and ``best`` and ``results`` no Optuna or Alembic (each a
third of a second or more of a start-up that should stay under one). Checked by what a fresh
interpreter has imported, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY_FOR_HELP = ("sqlalchemy", "alembic", "optuna", "numpy", "cupy", "fastapi", "uvicorn")
HEAVY_FOR_READS = ("alembic", "optuna", "cupy", "fastapi", "uvicorn")


def imported_after(args: list[str]) -> set[str]:
    """The top-level packages a fresh interpreter holds after running ``gemmtune *args``."""
    probe = (
        "import json, sys\n"
        "from tuner.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_imports_no_heavy_library() -> None:
    loaded = imported_after(["--help"])
    assert "typer" in loaded  # the probe ran the command line
    assert loaded.isdisjoint(HEAVY_FOR_HELP), sorted(loaded & set(HEAVY_FOR_HELP))


@pytest.mark.parametrize("command", [["best", "-s", "512x512x512"], ["results"]])
def test_reads_import_the_database_but_not_the_study_loop(
    tmp_path: Path, command: list[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'quick.db'}"
    subprocess.run(
        [sys.executable, "-m", "tuner.cli", "db", "upgrade", "--db", url],
        check=True,
        capture_output=True,
        timeout=120,
    )
    loaded = imported_after([*command, "--db", url])
    assert "sqlalchemy" in loaded  # it did read the database
    assert loaded.isdisjoint(HEAVY_FOR_READS), sorted(loaded & set(HEAVY_FOR_READS))
