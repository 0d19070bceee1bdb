"""The best-config index on both backends: writes of this process merged at once, writes of
others merged by a refresh that reads only what changed, deleted and late rows found by the
fingerprint, failures that keep the old snapshot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

import storage
from tests.conftest import NewDatabase
from tests.storage.factories import A100, H100, SQUARE, measurement
from tuner.answers.index import LATE_COMMITS, BestIndex

CUBE = storage.ShapeIn(1024, 1024, 1024)
SMALL = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128"


@pytest.fixture
def sessions(new_database: NewDatabase) -> Iterator[sessionmaker[Session]]:
    """A database with a best config for 4096^3 (2 ms) and 1024^3 (0.5 ms) on the H100."""
    engine = storage.make_engine(new_database())
    storage.upgrade(engine)
    factory = storage.make_session_factory(engine)
    with factory.begin() as session:
        storage.record_measurement(session, H100, SQUARE, measurement(ms=2.0))
        storage.record_measurement(session, H100, CUBE, measurement(ms=0.5))
    yield factory
    engine.dispose()


def write(sessions: sessionmaker[Session], *records: tuple[object, ...]) -> list[int]:
    """Record (device, shape, measurement) records as another process would; their ids."""
    with sessions.begin() as session:
        return [storage.record_measurement(session, *r).id for r in records]  # type: ignore[arg-type]


def best_ms(index: BestIndex, shape: storage.ShapeIn = SQUARE) -> float | None:
    return index.snapshot().answer(shape.m, shape.n, shape.k, device=None).ms


def test_this_process_writes_are_answered_at_once(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    before = index.snapshot()
    ids = write(sessions, (H100, SQUARE, measurement(ms=1.0)))
    index.apply_written(ids)
    assert best_ms(index) == 1.0
    # Only that row was read again: the other best config is the same object as before.
    cube = next(b for b in before.bests.values() if b.entry is not None and b.entry.m == 1024)
    assert index.snapshot().bests[cube.best_id] is cube


def test_an_untrusted_write_changes_nothing(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    before = index.snapshot()
    untrusted = measurement(ms=0.1, trusted=False)
    index.apply_written(write(sessions, (H100, SQUARE, untrusted)))
    assert index.snapshot() is before and best_ms(index) == 2.0


def test_another_writers_best_is_answered_after_a_refresh(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    before = index.snapshot()
    index.refresh()
    assert index.snapshot() is before  # nothing changed: the same snapshot, cache and all
    write(sessions, (H100, SQUARE, measurement(ms=1.5)), (A100, CUBE, measurement(ms=0.4)))
    assert best_ms(index) == 2.0  # not read yet
    index.refresh()
    assert best_ms(index) == 1.5 and best_ms(index, CUBE) == 0.4
    assert {d.name for d in index.snapshot().devices} == {H100.name, A100.name}


def test_a_late_commit_is_found_by_the_fingerprint(sessions: sessionmaker[Session]) -> None:
    """A replaced best whose update time is older than the index's newest (less the overlap)
    is still read: the fingerprint differs, so the index reads everything."""
    index = BestIndex(sessions, ttl_s=3600)
    index.snapshot()
    write(sessions, (H100, SQUARE, measurement(ms=1.0)))
    long_ago = storage.models.utcnow() - 3 * LATE_COMMITS
    with sessions.begin() as session:
        session.execute(update(storage.BestConfig).values(updated_at=long_ago))
    index.refresh()
    assert best_ms(index) == 1.0


def test_a_deleted_best_config_is_dropped(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    assert best_ms(index, CUBE) == 0.5
    with sessions.begin() as session:
        shape = storage.find_shape(session, CUBE)
        assert shape is not None
        session.execute(delete(storage.BestConfig).where(storage.BestConfig.shape_id == shape.id))
    index.refresh()
    answer = index.snapshot().answer(1024, 1024, 1024)
    assert answer.source != "exact" and len(index.snapshot().entries) == 1


def test_an_unreadable_config_arriving_later_is_skipped(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    index.snapshot()
    odd = measurement(ms=0.01, family="mystery", config_name="mystery_bm1")
    write(sessions, (H100, SQUARE, odd))
    index.refresh()
    snapshot = index.snapshot()
    assert snapshot.unreadable == ("mystery_bm1",)
    assert best_ms(index) is not None and best_ms(index) != 0.01  # a default, not the odd one
    assert {e.config_name for e in snapshot.entries} == {measurement().config_name}


def test_new_device_rates_are_read(sessions: sessionmaker[Session]) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    assert index.snapshot().rates == {}
    with sessions.begin() as session:
        storage.record_device_rates(session, H100, storage.RatesIn(ffma_tflops=60.0))
    index.refresh()
    assert index.snapshot().rates[H100.name].ffma_tflops == 60.0


def test_a_failed_refresh_keeps_the_snapshot_and_says_stale(
    sessions: sessionmaker[Session],
) -> None:
    failing = {"now": False}

    def flaky() -> Session:
        if failing["now"]:
            raise OperationalError("SELECT", {}, Exception("connection refused"))
        return sessions()

    index = BestIndex(flaky, ttl_s=3600)  # type: ignore[arg-type]
    before = index.snapshot()
    write(sessions, (H100, SQUARE, measurement(ms=1.0)))
    failing["now"] = True
    index.refresh()
    assert index.snapshot() is before and best_ms(index) == 2.0
    assert index.stale is not None and "connection refused" in index.stale
    failing["now"] = False
    index.refresh()
    assert index.stale is None and best_ms(index) == 1.0


def test_refresh_if_due_reads_only_after_the_interval(sessions: sessionmaker[Session]) -> None:
    now = {"t": 0.0}
    index = BestIndex(sessions, ttl_s=5.0, clock=lambda: now["t"])
    assert index.refresh_if_due().answer(4096, 4096, 4096).ms == 2.0
    write(sessions, (H100, SQUARE, measurement(ms=1.0)))
    now["t"] = 4.0
    assert index.refresh_if_due().answer(4096, 4096, 4096).ms == 2.0
    now["t"] = 5.0
    assert index.refresh_if_due().answer(4096, 4096, 4096).ms == 1.0


def test_a_best_replaced_twice_between_refreshes_ends_as_the_last(
    sessions: sessionmaker[Session],
) -> None:
    index = BestIndex(sessions, ttl_s=3600)
    index.snapshot()
    small = measurement(ms=1.2, config_name=SMALL)
    write(sessions, (H100, SQUARE, measurement(ms=1.8)), (H100, SQUARE, small))
    index.refresh()
    answer = index.snapshot().answer(4096, 4096, 4096)
    assert (answer.name, answer.ms) == (SMALL, 1.2)
