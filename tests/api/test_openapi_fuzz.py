"""Schemathesis against a live server, on SQLite and PostgreSQL: every check (no 5xx, statuses,
bodies and headers as the OpenAPI schema documents them, invalid data refused, valid data
accepted), continuing past failures so one run reports them all.

``tests/api/schemathesis.toml`` says which refusals of schema-valid data are by design (a 422
for what JSON Schema cannot express, such as a family's rules).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.api.conftest import TRUSTED, make_app, seed, serving

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Per operation; enough for the coverage phase to try every documented constraint and the
# fuzzing phase to mix them, in about 20 s per backend.
EXAMPLES = 30


def test_every_check_passes_on_every_operation(db_url: str, tmp_path: Path) -> None:
    seed(db_url)
    app = make_app(db_url)
    with serving(app) as base:
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                "from schemathesis.cli import schemathesis; schemathesis()",
                "--config-file",
                str(CONFIG),
                "--no-color",
                "run",
                f"{base}/openapi.json",
                "--checks",
                "all",
                "--continue-on-failure",
                "--header",
                f"Authorization: Bearer {TRUSTED}",
                "--max-examples",
                str(EXAMPLES),
                "--seed",
                "1",
                "--workers",
                "1",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # its caches stay out of the checkout
            timeout=300,
            check=False,
        )
    app.state.engine.dispose()
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failures" not in run.stdout.split("SUMMARY")[-1]
