"""Conformance: the write path stores every candidate and keeps best_config honest."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

import storage
import storage.records
from storage import (
    BestConfig,
    Device,
    Measurement,
    MeasurementIn,
    Shape,
    ShapeIn,
    make_session_factory,
    record_measurement,
    record_measurements,
)
from tests.conftest import NewDatabase

from .factories import A100, H100, SQUARE, measurement


def _count(session: Session, model: type[object]) -> int:
    return session.scalar(select(func.count()).select_from(model)) or 0


def _best(session: Session, shape: ShapeIn = SQUARE) -> BestConfig | None:
    return session.scalars(
        select(BestConfig).join(BestConfig.shape).where(Shape.m == shape.m, Shape.k == shape.k)
    ).one_or_none()


def test_ok_measurement_is_stored_and_becomes_best(session: Session) -> None:
    stored = record_measurement(
        session, H100, SQUARE, measurement(ms=1.25, study="s1", trial_number=3)
    )
    session.commit()
    row = session.get(Measurement, stored.id)
    assert row is not None
    assert (row.device.name, row.device.arch, row.device.sm_count) == (H100.name, "sm_90", 132)
    assert (row.shape.m, row.shape.dtype, row.shape.layout) == (4096, "float32", "NN")
    assert row.params["BM"] == 128
    assert row.status == "ok" and row.reason is None
    assert row.ratio == pytest.approx(1.6)  # derived: cuBLAS's 2.0 ms over our 1.25 ms
    assert row.provenance["cc"] == "9.0"
    assert (row.study, row.trial_number) == ("s1", 3)
    assert row.created_at.tzinfo is not None
    best = _best(session)
    assert best is not None and best.measurement_id == row.id


def test_failed_measurements_are_stored_with_reason_and_never_best(session: Session) -> None:
    for status in ("invalid", "pruned", "compile_failed", "launch_failed", "timeout"):
        record_measurement(session, H100, SQUARE, measurement(ms=None, status=status))
    # A wrong result can be fast; it must still never win.
    record_measurement(
        session, H100, SQUARE, measurement(ms=0.01, status="wrong_result", reason="max err 3e-1")
    )
    session.commit()
    rows = session.scalars(select(Measurement).order_by(Measurement.id)).all()
    assert [r.status for r in rows] == [
        "invalid",
        "pruned",
        "compile_failed",
        "launch_failed",
        "timeout",
        "wrong_result",
    ]
    assert all(r.reason for r in rows)
    assert rows[-1].reason == "max err 3e-1"
    assert _count(session, BestConfig) == 0
    ok = record_measurement(session, H100, SQUARE, measurement(ms=5.0))
    session.commit()
    best = _best(session)
    assert best is not None and best.measurement_id == ok.id


def test_best_is_replaced_only_by_strictly_faster_ok(session: Session) -> None:
    first = record_measurement(session, H100, SQUARE, measurement(ms=2.0, config_name="a"))
    record_measurement(session, H100, SQUARE, measurement(ms=3.0, config_name="slower"))
    record_measurement(session, H100, SQUARE, measurement(ms=2.0, config_name="equal"))
    session.commit()
    best = _best(session)
    assert best is not None and best.measurement_id == first.id
    faster = record_measurement(session, H100, SQUARE, measurement(ms=1.5, config_name="fast"))
    session.commit()
    best = _best(session)
    assert best is not None and best.measurement_id == faster.id
    assert best.measurement.config_name == "fast"
    assert _count(session, BestConfig) == 1
    assert _count(session, Device) == 1 and _count(session, Shape) == 1


def test_best_is_kept_per_device_and_shape(session: Session) -> None:
    other_shape = ShapeIn(1024, 1024, 1024)
    record_measurement(session, H100, SQUARE, measurement(ms=1.0))
    record_measurement(session, A100, SQUARE, measurement(ms=2.0))
    record_measurement(session, H100, other_shape, measurement(ms=0.1))
    session.commit()
    assert _count(session, BestConfig) == 3
    assert _count(session, Device) == 2 and _count(session, Shape) == 2


def test_one_measurement_is_all_or_nothing(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_args: object) -> None:
        raise RuntimeError("crash after the measurement row was written")

    monkeypatch.setattr(storage.records, "offer_best", explode)
    factory = make_session_factory(engine)
    with pytest.raises(RuntimeError), factory.begin() as session:
        record_measurement(session, H100, SQUARE, measurement(ms=1.0))
    with factory() as session:
        assert _count(session, Measurement) == 0
        assert _count(session, Device) == 0
        assert _count(session, Shape) == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"status": "great"}, "`status`"),
        ({"ms": -1.0}, "`ms`"),
        ({"ms": float("nan")}, "`ms`"),
        ({"params": {"BM": "128"}}, "params['BM']"),
        ({"trial_number": -1}, "`trial_number`"),
        ({"config_name": ""}, "`config_name`"),
        ({"accuracy": ""}, "`accuracy` must be a non-empty string of at most 32 characters"),
        ({"accuracy": " "}, "`accuracy`"),
        ({"accuracy": "x" * 33}, "`accuracy` must be a non-empty string of at most 32"),
        ({"accuracy": None}, "`accuracy`"),
    ],
)
def test_bad_measurement_values_name_the_field(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        measurement(**overrides)


def test_accuracy_labels_up_to_the_column_length_are_accepted() -> None:
    assert measurement().accuracy == "exact"
    assert measurement(accuracy="x" * 32).accuracy == "x" * 32


def test_bad_shape_names_the_field() -> None:
    with pytest.raises(ValueError, match="`k` must be an integer >= 1, got 0"):
        ShapeIn(16, 16, 0)


def test_measurement_input_is_frozen() -> None:
    m: MeasurementIn = measurement()
    with pytest.raises(AttributeError):
        m.ms = 0.5  # type: ignore[misc]


def _outcome(session: Session) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every measurement (in id order) and every best_config, by content rather than by id."""
    rows = session.execute(
        select(
            Device.name,
            Shape.m,
            Shape.k,
            Measurement.config_name,
            Measurement.status,
            Measurement.ms,
            Measurement.study,
        )
        .join(Measurement.device)
        .join(Measurement.shape)
        .order_by(Measurement.id)
    ).all()
    best = session.execute(
        select(Device.name, Shape.m, Measurement.config_name, Measurement.ms)
        .select_from(BestConfig)
        .join(BestConfig.device)
        .join(BestConfig.shape)
        .join(Measurement, BestConfig.measurement_id == Measurement.id)
        .order_by(Device.name, Shape.m)
    ).all()
    return [tuple(r) for r in rows], [tuple(b) for b in best]


def test_bulk_load_stores_what_one_at_a_time_stores(new_database: NewDatabase) -> None:
    """record_measurements == record_measurement per record: the same rows, and the same best
    config per device and shape, with ties (the first stays), failures (never best), a fast
    wrong result, a best that already existed before the load (faster for one shape, slower
    for the other), and a final re-measurement slower than a screening time (it wins)."""
    small, thin = ShapeIn(1000, 1000, 1000), ShapeIn(128, 4096, 4096)
    before = [
        (H100, SQUARE, measurement(ms=0.9, config_name="old_fast")),
        (H100, small, measurement(ms=5.0, config_name="old_slow")),
    ]
    batch = [
        (H100, SQUARE, measurement(ms=1.0, config_name="a")),
        (H100, small, measurement(ms=2.0, config_name="b")),
        (H100, small, measurement(ms=1.5, config_name="c")),
        (H100, small, measurement(ms=1.5, config_name="tie_after_c")),
        (H100, small, measurement(ms=0.1, status="wrong_result", config_name="wrong")),
        (H100, small, measurement(ms=None, status="pruned", config_name="pruned")),
        (A100, small, measurement(ms=3.0, config_name="d")),
        (A100, small, measurement(ms=3.0, config_name="tie_after_d")),
        (H100, thin, measurement(ms=0.5, config_name="screened")),
        (H100, thin, measurement(ms=0.8, config_name="final", phase="final")),
    ]
    outcomes = []
    for bulk in (False, True):
        engine = storage.make_engine(new_database())
        storage.upgrade(engine)
        factory = make_session_factory(engine)
        with factory.begin() as session:
            for device, shape, m in before:
                record_measurement(session, device, shape, m)
        with factory.begin() as session:
            if bulk:
                stored = record_measurements(session, batch)
                assert len(stored) == len(set(stored)) == len(batch)
            else:
                for device, shape, m in batch:
                    record_measurement(session, device, shape, m)
        with factory() as session:
            outcomes.append(_outcome(session))
        engine.dispose()
    assert outcomes[0] == outcomes[1]
    _, best = outcomes[1]
    assert best == [
        (A100.name, 1000, "d", 3.0),
        (H100.name, 128, "final", 0.8),
        (H100.name, 1000, "c", 1.5),
        (H100.name, 4096, "old_fast", 0.9),
    ]
