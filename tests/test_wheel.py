"""The installed program: a wheel of this checkout, installed into a fresh virtual environment
and run from another folder, finds the committed results it needs (preload, replay, priors)
without the source tree.

The environment gets the wheel alone (``--no-deps``); the dependencies come from the running
environment's site-packages through a path file, which adds those folders without running
their own path files, so an editable install of this checkout stays out of sight. The wheel is
built by pip: without build isolation when hatchling is importable here, else in pip's isolated
build environment (which fetches hatchling from the package index).
"""

from __future__ import annotations

import importlib.util
import json
import os
import site
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

import storage
from tests.api.conftest import free_port
from tuner.answers.default_rule import default_config
from tuner.core.shape import Shape
from tuner.data import read_sweep_table, sweep_tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "tuner" / "data" / "results"
SUITES = ROOT / "tuner" / "data" / "suites"
BIG = Shape(4096, 4096, 4096)
# What the installed copy must not see: the checkout, or results picked by hand.
HIDDEN = ("PYTHONPATH", "GEMMTUNE_RESULTS_DIR", "GEMMTUNE_DATABASE_URL", "VIRTUAL_ENV")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    workdir: Path  # outside the checkout
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _build_wheel(out: Path) -> Path:
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation]
    subprocess.run([*pip, "-w", str(out), str(ROOT)], check=True, timeout=300)
    (wheel,) = out.glob("gemmtune-*.whl")
    return wheel


def _dependency_folders() -> list[str]:
    """The running environment's site-packages: where the dependencies are installed."""
    folders = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE and Path(site.getusersitepackages()).is_dir():
        folders.append(site.getusersitepackages())
    return [f for f in folders if Path(f).resolve() != ROOT]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    wheel = _build_wheel(base / "dist")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "gemmtune-test-dependencies.pth").write_text(
        "\n".join(_dependency_folders()) + "\n"
    )
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "-q", "--no-deps", str(wheel)], check=True, timeout=120)
    workdir = base / "elsewhere"
    workdir.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in HIDDEN}
    return Installed(wheel, venv, workdir, env)


def test_the_wheel_carries_the_package_data_and_no_lab(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    data = {n for n in names if n.startswith(("tuner/data/results/", "tuner/data/suites/"))}
    committed = {*RESULTS.iterdir(), *SUITES.iterdir()}
    assert data == {p.relative_to(ROOT).as_posix() for p in committed}
    assert "tuner/data/results/h100-sweep.jsonl" in data
    assert "tuner/_templates/warptile.cu.j2" in names
    assert not [n for n in names if n.startswith("benchmarks/") or "/_benchmarks/" in n]
    # The package with its shipped data came to 2.0 MB on 2026-11-28 (the half-C suite files
    # added); the lab's results alone are 11 MB before compression, so this still catches them.
    assert installed.wheel.stat().st_size < 2_500_000


def test_the_installed_copy_reads_its_packaged_data(installed: Installed) -> None:
    code = (
        "import json, tuner; from tuner.data import data_location as d; w = d(); "
        "print(json.dumps([tuner.__file__, str(w.results), str(w.suite), w.from_environment]))"
    )
    done = installed.run("python", "-c", code)
    assert done.returncode == 0, done.stderr
    module, results, suite, from_environment = json.loads(done.stdout)
    assert Path(module).is_relative_to(installed.venv), module  # not the checkout
    assert not from_environment and Path(results).is_relative_to(installed.venv)
    assert (Path(results) / "h100-sweep.jsonl").is_file() and Path(suite).is_file()


def test_serve_preloads_the_packaged_results_and_answers_exact(installed: Installed) -> None:
    port = free_port()
    db = f"sqlite:///{installed.workdir / 'serve.db'}"
    server = subprocess.Popen(
        [str(installed.venv / "bin" / "gemmtune"), "serve", "--port", str(port), "--db", db],
        cwd=installed.workdir,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        answer = None
        deadline = time.monotonic() + 90
        while answer is None and time.monotonic() < deadline and server.poll() is None:
            try:
                body = {"m": BIG.m, "n": BIG.n, "k": BIG.k}
                answer = httpx.post(f"http://127.0.0.1:{port}/v1/configs/best", json=body)
            except httpx.HTTPError:
                time.sleep(0.2)
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert answer is not None, f"the server did not answer:\n{out}"
    assert answer.json()["source"] == "exact", answer.text
    assert "preloaded" in out and "(from the installed package)" in out, out
    assert "already holds results" not in out


def committed_best(shape: Shape, families: tuple[str, ...]) -> str:
    """The fastest ``ok`` config of ``families`` at ``shape`` in any committed sweep table that
    the default replay table also holds (so a study on it can evaluate it)."""
    held = {r.config_name for r in read_sweep_table(RESULTS / "h100-sweep.jsonl").rows}
    rows = [
        row
        for path in sweep_tables(RESULTS)
        for row in read_sweep_table(path).rows
        if row.shape == shape and row.family in families and row.config_name in held
    ]
    return min((r for r in rows if r.ok_ms is not None), key=lambda r: r.ok_ms or 0.0).config_name


def test_a_replayed_study_starts_from_the_packaged_priors(installed: Installed) -> None:
    url = f"sqlite:///{installed.workdir / 'tune.db'}"
    done = installed.run(
        "gemmtune", "tune", "--evaluator", "replay", "--shape", str(BIG), "--trials", "5",
        "--warm-start", "3", "--db", url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "5 evaluated" in " ".join(done.stdout.split())
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine)() as session:
        query = (
            select(storage.Measurement)
            .where(storage.Measurement.trial_number.is_not(None))  # not the finalists' rows
            .order_by(storage.Measurement.trial_number)
        )
        trials = [m.config_name for m in session.scalars(query)]
    engine.dispose()
    assert len(trials) == 5
    # First the untuned answer (the default rule: this database holds nothing), then the
    # committed best of the shape from the packaged priors.
    assert trials[0] == default_config(BIG.m, BIG.n).name
    assert trials[1] == committed_best(BIG, ("warptile", "pipelined"))
