"""Recorder conformance: the in-memory recorder and the SQL one on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import storage
from storage import open_database
from tests.conftest import NewDatabase
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.families import parse_config
from tuner.model.rates import DeviceRates
from tuner.search.recorder import MemoryRecorder, Recorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder

DEVICE = ReplayEvaluator().device
A = parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128")
B = parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128")


@pytest.fixture(params=["memory", "sql"])
def recorder(request: pytest.FixtureRequest, new_database: NewDatabase) -> Iterator[Recorder]:
    """The memory recorder (run once per backend param too: cheap) or the SQL one."""
    if request.param == "memory":
        yield MemoryRecorder()
        return
    sessions = open_database(new_database())
    yield SqlRecorder(sessions)
    engine = sessions.kw["bind"]
    engine.dispose()


def ok(config_name: str, ms: float) -> Result:
    config = parse_config(config_name)
    return Result(config.name, config.family, config.as_dict(), "ok", ms=ms, tflops=1.0)


def test_records_every_status_and_reads_it_back(recorder: Recorder) -> None:
    shape = Shape(256, 256, 256)
    good = ok(A.name, 0.5)
    bad = Result.failed(B, "launch_failed", "illegal address", provenance={"device": "x"})
    recorder.record(good, DEVICE, shape, "s1", 0)
    recorder.record(bad, DEVICE, shape, "s1", 3)
    recorder.record(ok(B.name, 0.1), DEVICE, shape, "s2", None)
    got = recorder.evaluated("s1")
    assert set(got) == {A.name, B.name}
    assert got[A.name].status == "ok" and got[A.name].ms == 0.5
    assert got[A.name].params == A.as_dict()
    assert (got[B.name].status, got[B.name].reason) == ("launch_failed", "illegal address")
    assert got[B.name].provenance == {"device": "x"}
    assert recorder.evaluated("nothing") == {}


def test_a_finalists_re_measurement_is_kept_apart_from_the_studys_screening(
    recorder: Recorder,
) -> None:
    """Recorded in its study with phase final, a re-measurement of a screened candidate leaves
    what the study reads back as screened (and its claim) as they were."""
    shape = Shape(256, 256, 256)
    assert recorder.claim("s1", A.name)
    recorder.record(ok(A.name, 0.5), DEVICE, shape, "s1", 0)
    recorder.record(ok(A.name, 0.6), DEVICE, shape, "s1", None, phase=Phase.FINAL)
    assert {name: r.ms for name, r in recorder.evaluated("s1").items()} == {A.name: 0.5}
    assert not recorder.claim("s1", A.name)


def test_a_claim_is_taken_once_per_study(recorder: Recorder) -> None:
    assert recorder.claim("s1", A.name)
    assert not recorder.claim("s1", A.name)
    assert recorder.claim("s2", A.name)
    assert recorder.claim("s1", B.name)


def test_a_released_claim_can_be_taken_again(recorder: Recorder) -> None:
    assert recorder.claim("s1", A.name)
    recorder.release("s1", A.name)
    assert recorder.claim("s1", A.name)
    assert not recorder.claim("s1", A.name)


def test_history_holds_the_fastest_ok_time_of_each_config_and_shape(recorder: Recorder) -> None:
    small, big = Shape(256, 256, 256), Shape(512, 512, 512)
    recorder.record(ok(A.name, 0.5), DEVICE, small, "s1", 0)
    recorder.record(ok(A.name, 0.4), DEVICE, small, "s2", 0)  # the same config again, faster
    recorder.record(ok(B.name, 0.9), DEVICE, big, "s3", 0)
    recorder.record(Result.failed(B, "wrong_result", "x", ms=0.01), DEVICE, small, "s1", 1)
    seen = {
        (o.shape, o.config_name): o.ms for o in recorder.history(DEVICE, "float32", "NN", "float32")
    }
    assert seen[(big, B.name)] == 0.9 and (small, B.name) not in seen  # failures are no history
    assert min(ms for (s, name), ms in seen.items() if (s, name) == (small, A.name)) == 0.4


def test_rates_are_stored_and_read_back(recorder: Recorder) -> None:
    assert recorder.rates(DEVICE) is None
    rates = DeviceRates(63.7, 66.0, 3.1, 2.2, "probed on the test device")
    recorder.record_rates(DEVICE, rates)
    assert recorder.rates(DEVICE) == rates
    assert recorder.rates(replace(DEVICE, name="another GPU")) is None


def test_sql_recent_is_what_other_workers_stored_since_the_last_look(
    new_database: NewDatabase,
) -> None:
    url = new_database()
    mine, theirs = SqlRecorder(open_database(url)), SqlRecorder(open_database(url))
    shape = Shape(256, 256, 256)
    mine.record(ok(A.name, 0.5), DEVICE, shape, "s1", 0)
    assert set(mine.evaluated("s1")) == {A.name} and mine.recent("s1") == {}
    theirs.record(ok(B.name, 0.7), DEVICE, shape, "s1", 1)
    assert set(mine.recent("s1")) == {B.name}
    assert mine.recent("s1") == {}  # read once


def test_sql_neighbours_are_the_nearest_shapes_bests(new_database: NewDatabase) -> None:
    sessions = open_database(new_database())
    recorder = SqlRecorder(sessions)
    recorder.record(ok(A.name, 1.0), DEVICE, Shape(1024, 1024, 1024), "s", 0)
    recorder.record(ok(B.name, 1.0), DEVICE, Shape(64, 64, 64), "s", 1)
    recorder.record(ok(B.name, 9.0), DEVICE, Shape(2000, 2000, 2000), "t", 0)  # own shape
    other = replace(DEVICE, name="another GPU")
    recorder.record(ok(B.name, 0.1), other, Shape(2048, 2048, 2048), "u", 0)
    assert recorder.neighbours(DEVICE, Shape(2000, 2000, 2000), 5) == [A.name, B.name]
    assert recorder.neighbours(DEVICE, Shape(2000, 2000, 2000), 1) == [A.name]
    assert recorder.neighbours(DEVICE, Shape(96, 64, 64), 5) == [B.name, A.name]
    with sessions() as session:
        assert len(storage.best_configs(session)) == 4
    sessions.kw["bind"].dispose()


def test_memory_recorder_has_no_neighbours() -> None:
    recorder = MemoryRecorder()
    recorder.record(ok(A.name, 1.0), DEVICE, Shape(1024, 1024, 1024), "s", 0)
    assert recorder.neighbours(DEVICE, Shape(1000, 1000, 1000), 3) == []
