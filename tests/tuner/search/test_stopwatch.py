"""Where a study's seconds went (``Progress.seconds``, ``tuner.search.stopwatch``): each step
and each part of the search is timed, the parts within the search, and the CLI prints them."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import storage
from tests.tuner.fakes import Forwarding
from tuner.cli.tune import seconds_line
from tuner.core.config import Config
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.stopwatch import Stopwatch
from tuner.search.study import Study

POLLS = 3  # times each candidate answers "not compiled yet"
MEASURE_S = 0.004


class SlowToCompile(Forwarding):
    """Each candidate compiles only after it was asked about ``POLLS`` times since it was last
    prepared, and each measurement keeps the device ``MEASURE_S``."""

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.asked: Counter[str] = Counter()

    def prepare(self, config: Config) -> None:  # compiling (again): not ready for a while
        self.asked[config.name] = 0
        self.inner.prepare(config)

    def ready(self, config: Config) -> bool:
        self.asked[config.name] += 1
        return self.asked[config.name] > POLLS

    def evaluate(self, config: Config, shape: Shape) -> Result:
        time.sleep(MEASURE_S)
        return self.inner.evaluate(config, shape)


def test_a_study_says_where_its_seconds_went() -> None:
    study = Study(Shape(4096, 4096, 4096), ("warptile",), SlowToCompile(ReplayEvaluator()),
                  MemoryRecorder(), sampler="random", seed=1)  # fmt: skip
    searched = study.search(6)
    assert set(searched.seconds) >= {"prepare", "search", "propose", "compile_wait", "record"}
    preparation = ("space", "sampler", "storage")  # the preparation's parts, each timed
    assert all(searched.seconds[part] >= 0 for part in preparation)
    assert sum(searched.seconds[part] for part in preparation) <= searched.seconds["prepare"]
    assert "finalists" not in searched.seconds and "gather" not in searched.seconds
    outcome = study.finish(searched)
    seconds = outcome.seconds
    assert all(value >= 0 for value in seconds.values())
    assert seconds["compile_wait"] > 0  # the device waited for every candidate's compile
    assert seconds["finalists"] > 0
    assert "gather" in seconds  # what every worker stored, read back at the finish
    # The finalists waited for their kernels (each answers "not compiled" a few times more).
    assert 0 < seconds["final_compiles"] <= seconds["finalists"]
    parts = ("propose", "compile_wait", "measure", "record", "others")
    assert sum(seconds.get(part, 0.0) for part in parts) <= seconds["search"] + 1e-3
    # The measurement happens in ``start`` for an evaluator that answers at once: it counts as
    # the search's, not as any part's.
    assert seconds["search"] >= 6 * MEASURE_S


def test_the_stopwatch_adds_every_entry_of_a_part() -> None:
    clock = Stopwatch()
    for _ in range(3):
        with clock.part("wait"):
            time.sleep(0.002)
    clock.add("other", 0.5)
    assert clock.seconds["wait"] >= 0.006
    assert clock.rounded()["other"] == 0.5
    assert list(clock.rounded()) == ["wait", "other"]


def test_the_seconds_line_puts_each_steps_parts_in_brackets() -> None:
    # As a study's clock leaves them: a part is added when it is first left, the search after
    # its parts, the wait for the trials' copy after the finalists.
    seconds = {"space": 0.3, "sampler": 0.2, "storage": 0.05, "prepare": 0.61, "propose": 1.0,
               "compile_wait": 4.14, "search": 9.42, "gather": 0.01, "final_compiles": 1.26,
               "finalists": 3.0, "mirror": 0.2}  # fmt: skip
    assert seconds_line(seconds) == (
        "seconds: prepare 0.6 (space 0.3, sampler 0.2, storage 0.1), "
        "search 9.4 (propose 1.0, compile_wait 4.1), gather 0.0, "
        "finalists 3.0 (final_compiles 1.3), mirror 0.2"
    )


def test_a_study_with_a_persistent_optuna_study_times_the_wait_for_its_copy(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    engine = storage.open_engine(url, optuna_tables=True)
    try:
        recorder = SqlRecorder(storage.make_session_factory(engine))
        study = Study(Shape(4096, 4096, 4096), ("warptile",), ReplayEvaluator(), recorder,
                      sampler="random", seed=1, optuna_storage=url)  # fmt: skip
        progress = study.search(4)
        searched = set(progress.seconds)
        seconds = study.finish(progress).seconds
        study.close()
    finally:
        engine.dispose()
    assert "mirror" not in searched  # the copy is waited for after the finalists
    assert "mirror" in seconds and list(seconds)[-1] == "mirror"
