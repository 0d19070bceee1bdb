"""Queue workers as separate processes: started as other machines' would be (their own process,
environment and working folder, only the database URL shared) on replay devices, they tune every
queued shape once with exact budgets; a worker killed mid-shape loses nothing; a worker that
cannot start leaves its share to the others. Spawned processes are slow on a small CI machine:
a few tests, each doing several things."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from sqlalchemy import func, select

import storage
from storage import tune_queue
from storage.models import QueueEntry
from storage.tune_queue import DONE, RUNNING, Problem
from tests.conftest import NewDatabase
from tuner.core.phases import Phase
from tuner.core.shape import Shape
from tuner.run import worker_processes
from tuner.run.queue_worker import WorkerSettings
from tuner.run.request import TuneRequest
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import study_name

ROOT = Path(__file__).resolve().parents[3]
FAMILIES = ("warptile",)
SHAPES = (Shape(1000, 1000, 1000), Shape(128, 4096, 4096), Shape(4096, 4096, 4096))
TRIALS = 6


def machine_env(home: Path) -> dict[str, str]:
    """What another machine's worker has: its own home, caches and nothing of ours but the code
    (PYTHONPATH names this tree, as an installed gemmtune would be found)."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "GEMMTUNE_CACHE_DIR": str(home / "kernels"),
        "LANG": "C.UTF-8",
    }


def start_machine(home: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    args = ["worker", "--evaluator", "replay", "--sampler", "random", "--db", url, *extra]
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", *args],
        cwd=machine_env(home)["HOME"],
        env=machine_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def enqueue(url: str, shapes: tuple[Shape, ...], trials: int) -> None:
    engine = storage.open_engine(url, optuna_tables=True)
    try:
        with storage.make_session_factory(engine).begin() as session:
            problems = [Problem(s, "exact", "", FAMILIES, trials) for s in shapes]
            tune_queue.enqueue(session, problems)
    finally:
        engine.dispose()


def entries(url: str) -> list[QueueEntry]:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            return list(session.scalars(select(QueueEntry).order_by(QueueEntry.id)))
    finally:
        engine.dispose()


def screened(url: str, study: str) -> list[str]:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows = storage.measurements_for_study(session, study, phase=Phase.SCREENING)
            return [row.config_name for row in rows]
    finally:
        engine.dispose()


def optuna_configs(url: str, study: str) -> list[str]:
    optuna_storage = optuna.storages.RDBStorage(url)
    try:
        loaded = optuna.load_study(study_name=study, storage=optuna_storage)
        return [str(t.user_attrs.get("config")) for t in loaded.get_trials(deepcopy=False)]
    finally:
        optuna_storage.engine.dispose()


def check_tuned_once(url: str, shapes: tuple[Shape, ...], trials: int) -> None:
    """Every shape done, its study holding exactly ``trials`` candidates, none measured twice,
    each an Optuna trial once."""
    device = ReplayEvaluator().device.name
    done = entries(url)
    assert [e.state for e in done] == [DONE] * len(shapes)
    for shape in shapes:
        study = study_name(device, shape, FAMILIES)
        names = screened(url, study)
        assert len(names) == trials, (shape, names)
        assert len(set(names)) == trials, Counter(names).most_common(2)
        assert sorted(optuna_configs(url, study)) == sorted(names)
        assert study in {e.study for e in done}


def finish(process: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out


def test_workers_of_two_machines_share_one_database(
    new_database: NewDatabase, tmp_path: Path
) -> None:
    """The two-machine recipe of docs/tuning.md: PostgreSQL for several machines, SQLite for
    several processes of one."""
    url = new_database()
    enqueue(url, SHAPES, TRIALS)
    machines = [
        start_machine(tmp_path / f"machine{i}", url, "--seed", str(i), "--gpu", str(i))
        for i in (0, 1)
    ]
    outputs = [finish(machine) for machine in machines]
    check_tuned_once(url, SHAPES, TRIALS)
    assert all(e.attempt == 1 for e in entries(url))  # each shape taken once
    assert sum(out.count(f"{TRIALS} evaluated") for out in outputs) == len(SHAPES)


def test_a_worker_killed_mid_shape_loses_nothing(tmp_path: Path) -> None:
    """Killed (SIGKILL: no goodbye) once it has measured part of a study; a second worker takes
    the entry when its lease lapses and the study ends with its exact budget."""
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    trials = 40
    shape = SHAPES[2]
    enqueue(url, (shape,), trials)
    study = study_name(ReplayEvaluator().device.name, shape, FAMILIES)
    victim = start_machine(tmp_path / "victim", url, "--lease", "2")
    deadline = time.monotonic() + 240
    while len(screened_or_none(url, study)) < 2:
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the worker measured nothing"
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    [entry] = entries(url)
    assert entry.state == RUNNING and entry.attempt == 1  # killed mid-shape
    measured_before = len(screened(url, study))
    assert measured_before < trials
    finish(start_machine(tmp_path / "survivor", url, "--lease", "2", "--seed", "1"))
    check_tuned_once(url, (shape,), trials)
    assert entries(url)[0].attempt == 2  # taken again, once


def screened_or_none(url: str, study: str) -> list[str]:
    """The study's measurements, or none while the worker is still creating the schema."""
    try:
        return screened(url, study)
    except Exception:
        return []


def test_a_worker_that_cannot_start_leaves_its_share_to_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tune-batch --gpus 2`` as the CLI runs it, device 1's worker given a replay table that
    does not exist (as a GPU that fails its start ends its worker at once)."""
    url = f"sqlite:///{tmp_path / 'batch.db'}"
    command = worker_processes.worker_command

    def broken_on_one(settings: WorkerSettings, index: int) -> list[str]:
        args = command(settings, index)
        return [*args, "--replay-table", str(tmp_path / "missing.jsonl")] if index else args

    monkeypatch.setattr(worker_processes, "worker_command", broken_on_one)
    request = TuneRequest(
        shapes=SHAPES[:2],
        families=FAMILIES,
        sampler="random",
        seed=2,
        trials=TRIALS,
        evaluator="replay",
        database_url=url,
    )
    seen: list[tuple[int, int]] = []
    run = worker_processes.tune_on_processes(
        request, (0, 1), on_progress=lambda p, _: seen.append((p.done, p.total))
    )
    assert [w.split(" ")[0] for w in run.failed_workers] == ["gpu1"]
    assert "missing.jsonl" in run.failed_workers[0]
    assert (run.progress.done, run.progress.total, run.progress.evaluated) == (2, 2, 2 * TRIALS)
    assert seen[-1] == (2, 2)
    check_tuned_once(url, SHAPES[:2], TRIALS)
    engine = storage.make_engine(url)
    with engine.connect() as connection:  # the batch's shapes, and nothing else, were queued
        assert connection.scalar(select(func.count()).select_from(QueueEntry)) == 2
    engine.dispose()


def test_a_worker_takes_its_gpus_share_of_the_host_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from tuner.kernels import compile_pool

    monkeypatch.setattr(compile_pool.os, "cpu_count", lambda: 64)
    assert [compile_pool.host_share(g) for g in (1, 2, 4, 8)] == [63, 31, 15, 7]
    monkeypatch.setattr(compile_pool.os, "cpu_count", lambda: 2)
    assert compile_pool.host_share(4) == 1  # never none
    settings = WorkerSettings(compile_workers=5, wait=True)
    command = worker_processes.worker_command(settings, 3)
    assert command[command.index("--compile-workers") + 1] == "5"
    assert "--compile-workers" not in worker_processes.worker_command(WorkerSettings(), 3)
