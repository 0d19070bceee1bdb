"""Tune on miss: with ``GEMMTUNE_TUNE_ON_MISS`` on, shapes answered ``far`` or ``default`` go to
the tuning queue (once each, rate-limited, only from callers with the token when one is set), and
once a worker has tuned them the answer is ``exact``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select

import storage
from storage.models import QueueEntry
from tests.api.conftest import TOKEN, make_app

BEST = "/v1/configs/best"
ROOT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"


def queued(url: str) -> list[tuple[int, int, int, str, str, str]]:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows = session.scalars(select(QueueEntry).order_by(QueueEntry.id))
            return [(e.m, e.n, e.k, e.dtype, e.device, e.source) for e in rows]
    finally:
        engine.dispose()


def test_misses_are_queued_once_and_only_when_asked(seeded: str) -> None:
    """7x7x70000 is far from every seeded shape; the queue gets each missed problem once, and
    only from a caller that sent the token."""
    off = make_app(seeded)
    with TestClient(off) as client:
        assert client.post(BEST, json={"m": 7, "n": 7, "k": 70000}).json()["source"] == "far"
    off.state.engine.dispose()
    assert queued(seeded) == []  # off by default

    app = make_app(seeded, token=TOKEN, trusted=None, tune_on_miss=True)
    client = TestClient(app)  # no lifespan: the test drains the notes itself
    auth = {"Authorization": f"Bearer {TOKEN}"}
    far = {"m": 7, "n": 7, "k": 70000, "device": H100}
    assert client.post(BEST, json=far).json()["source"] == "far"
    app.state.misses.drain()
    assert queued(seeded) == []  # a token is set and the caller sent none
    wrong = {"Authorization": "Bearer not-the-token"}
    assert client.post(BEST, json={**far, "k": 70001}, headers=wrong).status_code == 200
    app.state.misses.drain()
    assert queued(seeded) == []
    exact = {"m": 1024, "n": 1024, "k": 1024, "device": H100}
    assert client.post(BEST, json=exact, headers=auth).json()["source"] == "exact"
    for _ in range(2):
        assert client.post(BEST, json={**far, "k": 70002}, headers=auth).status_code == 200
    app.state.misses.drain()
    assert queued(seeded) == [(7, 7, 70002, "float32", H100, "api")]
    app.state.engine.dispose()


def test_the_rate_limit_and_a_full_queue_never_fail_an_answer(seeded: str) -> None:
    app = make_app(seeded, token=None, trusted=None, tune_on_miss=True, queue_limit=1)
    client = TestClient(app)
    for k in (70003, 70004):
        assert client.post(BEST, json={"m": 7, "n": 7, "k": k}).json()["source"] == "far"
    assert app.state.misses.drain() == 0  # two would pass the queue's limit of 1: dropped
    assert queued(seeded) == []
    limited = make_app(seeded, token=None, trusted=None, tune_on_miss=True,
                       tune_on_miss_per_minute=1)  # fmt: skip
    client = TestClient(limited)
    for k in (70005, 70006):  # the second within the minute: over the rate
        assert client.post(BEST, json={"m": 7, "n": 7, "k": k}).status_code == 200
    assert limited.state.misses.drain() == 1
    assert [row[2] for row in queued(seeded)] == [70005]
    app.state.engine.dispose()
    limited.state.engine.dispose()


def tune_a_miss(
    tmp_path: Path, question: dict[str, int], worker: list[str], timeout_s: float
) -> str:
    """End to end: the served app answers ``question`` ``default`` and queues it, the ``worker``
    command (argv after the Python executable, the database URL appended) tunes it, and the
    refreshed index then answers ``exact`` with the best the worker stored, whose config name is
    returned. Checks the worker's exit and the queue on the way."""
    url = f"sqlite:///{tmp_path / 'served.db'}"
    app = make_app(url, token=None, trusted=None, tune_on_miss=True, cache_ttl_s=0.1)
    with TestClient(app) as client:
        assert client.post(BEST, json=question).json()["source"] == "default"
        deadline = time.monotonic() + 60  # polled: the bound only ends a hung test
        while not queued(url):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        done = subprocess.run(
            [sys.executable, *worker, url],
            capture_output=True, text=True, timeout=timeout_s, check=False, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        answers: list[dict[str, object]] = []
        while not answers or answers[-1]["source"] != "exact":
            assert time.monotonic() < deadline + timeout_s
            answers.append(client.post(BEST, json=question).json())
            time.sleep(0.1)
        engine = storage.make_engine(url)
        with storage.make_session_factory(engine)() as session:
            [best] = storage.best_configs(session)
        engine.dispose()
        assert best.measurement.evaluator == "gpu" and best.measurement.ratio
        assert (best.shape.m, best.shape.n, best.shape.k) == tuple(question.values())
        assert answers[-1]["name"] == best.measurement.config_name
        assert {a["source"] for a in answers} <= {"default", "exact"}
    m, n, k = question.values()
    assert queued(url) == [(m, n, k, "float32", "", "api")]
    app.state.engine.dispose()
    return best.measurement.config_name


def test_a_missed_shape_is_tuned_by_a_worker_and_answered_exact(tmp_path: Path) -> None:
    """The worker is a replay whose numbers are reported as measured (replayed times never
    become served bests)."""
    worker = ["-m", "tests.tuner.run.measured_replay_worker"]
    tune_a_miss(tmp_path, {"m": 4096, "n": 4096, "k": 4096}, worker, timeout_s=300)
