"""Tune on miss on the GPU (issue 44, item 3): the served app queues a shape it answered
``default``, a real ``gemmtune worker`` process tunes it on the GPU, and the next answer for
that shape is ``exact``, naming the config the worker stored as best."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
BEST = "/v1/configs/best"


def test_a_missed_shape_is_tuned_on_the_gpu_and_answered_exact(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    import storage
    from tests.api.conftest import make_app
    from tests.api.test_tune_on_miss import queued

    url = f"sqlite:///{tmp_path / 'served.db'}"
    app = make_app(url, token=None, trusted=None, tune_on_miss=True, cache_ttl_s=0.1)
    question = {"m": 768, "n": 640, "k": 512}
    with TestClient(app) as client:
        assert client.post(BEST, json=question).json()["source"] == "default"
        deadline = time.monotonic() + 60  # polled: the bound only ends a hung test
        while not queued(url):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        worker = subprocess.run(
            [sys.executable, "-m", "tuner.cli", "worker", "--db", url, "--trials", "12"],
            capture_output=True, text=True, timeout=400, check=False, cwd=ROOT,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stdout + worker.stderr
        assert "finished 1 studies" in worker.stdout, worker.stdout
        assert " 0 failed attempts" in worker.stdout, worker.stdout
        answers: list[dict[str, object]] = []
        while not answers or answers[-1]["source"] != "exact":
            assert time.monotonic() < deadline + 400
            answers.append(client.post(BEST, json=question).json())
            time.sleep(0.1)
        engine = storage.make_engine(url)
        with storage.make_session_factory(engine)() as session:
            [best] = storage.best_configs(session)
        engine.dispose()
        assert best.measurement.evaluator == "gpu" and best.measurement.ratio
        assert answers[-1]["name"] == best.measurement.config_name
        assert (best.shape.m, best.shape.n, best.shape.k) == (768, 640, 512)
    app.state.engine.dispose()
