"""``.ci/run`` fails the run when PostgreSQL does not come up, instead of letting the storage and
API suites skip their PostgreSQL half. Run on a copy of the script, with the system commands it
calls replaced by ones that fail the way a broken PostgreSQL does; ``python3`` is replaced too,
so a script that went on past the check would stop at its first step with a code of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WENT_ON = 99  # the fake python3's exit code: the script got past the PostgreSQL check


def fake(folder: Path, name: str, code: int) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\nexit {code}\n")
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("start_code", "needle"),
    [(1, ""), (0, ".ci/run: PostgreSQL did not start")],
    ids=["the start command fails", "it starts but never answers"],
)
def test_ci_run_fails_when_postgresql_does_not_start(
    tmp_path: Path, start_code: int, needle: str
) -> None:
    tree = tmp_path / "clone"
    (tree / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", tree / ".ci" / "run")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake(bin_, "pg_isready", 2)  # "no response"
    fake(bin_, "pg_ctlcluster", start_code)
    fake(bin_, "sleep", 0)  # the script waits 30 s for the server: not here
    fake(bin_, "chromium", 0)  # present: the script installs nothing
    fake(bin_, "python3", WENT_ON)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(tree / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode not in (0, WENT_ON), (done.returncode, done.stderr)
    assert needle in done.stderr
