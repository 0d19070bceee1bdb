"""``gemmtune worker`` through the entry point: bad options are one line, and a worker on an
empty queue says so and exits (the queue's real work: tests/tuner/run/test_queue_workers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tuner.cli.running import cli, one_error_line


def test_bad_options_are_one_line_and_touch_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "untouched.db"
    url = f"sqlite:///{db}"
    code, _, err = cli(capsys, "worker", "--gpu", "0", "--gpus", "2", "--db", url)
    assert code == 2
    one_error_line(err, "--gpu", "--gpus", "not both")
    code, _, err = cli(capsys, "worker", "--evaluator", "nope", "--db", url)
    assert code == 2
    one_error_line(err, "unknown evaluator 'nope'", "gpu, replay")
    assert not db.exists()


def test_a_worker_on_an_empty_queue_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    code, out, err = cli(capsys, "worker", "--evaluator", "replay", "--db", url)
    assert code == 0, err
    assert "finished 0 studies, searched in 0, 0 failed attempts" in " ".join(out.split())


def test_a_worker_that_stops_says_why_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its problems stay queued for the other workers (tests/tuner/run/test_worker_stops.py);
    the command says why it stopped and fails, so a supervisor sees it."""
    from tuner.run import queue_worker

    def stopping(*args: object, **kwargs: object) -> None:
        raise queue_worker.WorkerStopped("gpu0: 3 problems failed in a row on this worker")

    monkeypatch.setattr(queue_worker, "run_worker", stopping)
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    code, _, err = cli(capsys, "worker", "--evaluator", "replay", "--db", url)
    assert code == 1
    assert "stopped: gpu0: 3 problems failed in a row" in " ".join(err.split())
