"""``python -m tests.tuner.run.measured_replay_worker URL``: a queue worker process whose device is
the replay's, its numbers reported as a GPU reports its own (``tests.tuner.fakes.AsMeasured``).

A replayed time never becomes a served best config (schema revision 0011), so a plain
``gemmtune worker --evaluator replay`` cannot turn an answer ``exact``; this worker stores what a
GPU worker would, without a GPU, and runs the same loop (``tuner.run.queue_worker``)."""

from __future__ import annotations

import sys

import storage
from tests.tuner.fakes import AsMeasured
from tuner.run.queue_worker import WorkerSettings, run_worker
from tuner.search.replay import ReplayEvaluator


def main(url: str) -> None:
    settings = WorkerSettings(sampler="random", seed=5, trials=4, database_url=url)
    engine = storage.open_engine(url, optuna_tables=True)
    try:
        summary = run_worker(
            settings, AsMeasured(ReplayEvaluator()), storage.make_session_factory(engine), "gpu0"
        )
    finally:
        engine.dispose()
    print(f"finished {len(summary.finished)}, failed {len(summary.failures)}")
    for failure in summary.failures:
        print(failure)


if __name__ == "__main__":
    main(sys.argv[1])
