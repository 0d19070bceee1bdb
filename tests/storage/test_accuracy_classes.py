"""Conformance: best configs are kept per accuracy class, on every write path, and readers can
ask for the classes they accept (a strict caller never gets an emulated config)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import storage
from storage import (
    Measurement,
    ShapeIn,
    best_configs,
    best_for,
    export_json,
    import_json,
    make_engine,
    make_session_factory,
    measurement_values,
    record_measurement,
    record_measurements,
    upgrade,
)
from storage.bulk import Record
from storage.staging import write_staged
from tests.conftest import NewDatabase

from .factories import A100, H100, SQUARE, measurement

EMULATED = "bf16x3"  # a class storage knows only as a label
SMALL = ShapeIn(1024, 1024, 1024)


def _bests(session: Session) -> list[tuple[str, int, str, str]]:
    """Every best config as (device, m, accuracy, config name), checking that each row's class
    is its measurement's."""
    found = []
    for best in best_configs(session):
        assert best.accuracy == best.measurement.accuracy
        found.append((best.device.name, best.shape.m, best.accuracy, best.measurement.config_name))
    return sorted(found)


def test_each_accuracy_class_keeps_its_own_best(session: Session) -> None:
    record_measurement(session, H100, SQUARE, measurement(ms=2.0, config_name="strict"))
    emulated = measurement(ms=1.0, config_name="emulated", accuracy=EMULATED)
    record_measurement(session, H100, SQUARE, emulated)
    session.commit()
    # Faster, but of another class: the strict best stays.
    assert _bests(session) == [
        (H100.name, 4096, EMULATED, "emulated"),
        (H100.name, 4096, "exact", "strict"),
    ]
    quicker = measurement(ms=0.5, config_name="emulated_quicker", accuracy=EMULATED)
    record_measurement(session, H100, SQUARE, quicker)
    record_measurement(session, H100, SQUARE, measurement(ms=1.5, config_name="strict_quicker"))
    record_measurement(session, H100, SQUARE, measurement(ms=1.8, config_name="strict_slower"))
    session.commit()
    # Each faster one replaced the best of its own class only.
    assert _bests(session) == [
        (H100.name, 4096, EMULATED, "emulated_quicker"),
        (H100.name, 4096, "exact", "strict_quicker"),
    ]


def test_an_unlabelled_measurement_is_exact(session: Session) -> None:
    stored = record_measurement(session, H100, SQUARE, measurement(ms=1.0))
    session.commit()
    assert stored.accuracy == "exact"
    assert measurement_values(stored)["accuracy"] == "exact"
    labelled = record_measurement(session, H100, SQUARE, measurement(ms=1.0, accuracy=EMULATED))
    assert measurement_values(labelled)["accuracy"] == EMULATED


def _mixed_records() -> list[Record]:
    """Both classes on two devices and two shapes, with ties, finals, failures and untrusted
    rows of the emulated class too."""
    final: dict[str, Any] = {"phase": "final"}
    emulated: dict[str, Any] = {"accuracy": EMULATED}
    return [
        (H100, SQUARE, measurement(ms=3.0, config_name="a")),
        (H100, SQUARE, measurement(ms=1.0, config_name="b", **emulated)),
        (H100, SQUARE, measurement(ms=2.0, config_name="c")),
        (H100, SQUARE, measurement(ms=1.0, config_name="d_tie", **emulated)),
        (H100, SQUARE, measurement(ms=0.1, status="wrong_result", config_name="e", **emulated)),
        (H100, SMALL, measurement(ms=0.4, config_name="f", **emulated)),
        (H100, SMALL, measurement(ms=0.6, config_name="g", **final, **emulated)),
        (H100, SMALL, measurement(ms=0.3, config_name="h", trusted=False)),
        (H100, SMALL, measurement(ms=0.9, config_name="i")),
        (A100, SQUARE, measurement(ms=5.0, config_name="j", **emulated)),
        (A100, SQUARE, measurement(ms=0.7, config_name="beats_old_strict")),
    ]


# Stored before the batch: a best of each class that the batch beats or not.
_BEFORE: list[Record] = [
    (A100, SQUARE, measurement(ms=4.0, config_name="old_emulated", accuracy=EMULATED)),
    (A100, SQUARE, measurement(ms=0.8, config_name="old_strict")),
    (H100, SMALL, measurement(ms=0.2, config_name="old_small")),
]

_EXPECTED_BESTS = [
    (A100.name, 4096, EMULATED, "old_emulated"),
    (A100.name, 4096, "exact", "beats_old_strict"),
    (H100.name, 1024, EMULATED, "g"),
    (H100.name, 1024, "exact", "old_small"),
    (H100.name, 4096, EMULATED, "b"),
    (H100.name, 4096, "exact", "c"),
]


def _one_by_one(sessions: sessionmaker[Session], records: list[Record]) -> None:
    with sessions.begin() as session:
        for device, shape, m in records:
            record_measurement(session, device, shape, m)


def _bulk(sessions: sessionmaker[Session], records: list[Record]) -> None:
    with sessions.begin() as session:
        record_measurements(session, records)


def _staged(sessions: sessionmaker[Session], records: list[Record]) -> None:
    write_staged(sessions, records)


Write = Callable[[sessionmaker[Session], list[Record]], None]


def test_bulk_and_staged_writes_keep_classes_as_one_by_one(new_database: NewDatabase) -> None:
    outcomes: dict[str, Any] = {}
    writes: dict[str, Write] = {"one_by_one": _one_by_one, "bulk": _bulk, "staged": _staged}
    for name, write in writes.items():
        engine = make_engine(new_database())
        try:
            upgrade(engine)
            sessions = make_session_factory(engine)
            _one_by_one(sessions, _BEFORE)
            write(sessions, _mixed_records())
            with sessions() as session:
                rows = session.scalars(select(Measurement).order_by(Measurement.id))
                outcomes[name] = (_bests(session), [(r.config_name, r.accuracy) for r in rows])
        finally:
            engine.dispose()
    assert outcomes["one_by_one"][0] == _EXPECTED_BESTS
    assert outcomes["bulk"] == outcomes["one_by_one"]
    assert outcomes["staged"] == outcomes["one_by_one"]


@pytest.fixture
def both_classes(session: Session) -> Session:
    """H100 SQUARE: exact 2.0 ms, emulated 1.0 ms; H100 SMALL: emulated only (0.1 ms)."""
    record_measurement(session, H100, SQUARE, measurement(ms=2.0, config_name="strict"))
    record_measurement(
        session, H100, SQUARE, measurement(ms=1.0, config_name="emulated", accuracy=EMULATED)
    )
    record_measurement(
        session, H100, SMALL, measurement(ms=0.1, config_name="small_emulated", accuracy=EMULATED)
    )
    session.commit()
    return session


def _best_name(session: Session, accuracies: set[str] | None) -> str | None:
    found = best_for(session, H100.name, 4096, 4096, 4096, accuracies=accuracies)
    return None if found is None else found[1].config_name


def test_best_for_returns_only_the_classes_asked_for(both_classes: Session) -> None:
    assert _best_name(both_classes, {"exact"}) == "strict"  # though the emulated one is faster
    assert _best_name(both_classes, None) == "emulated"  # any class: the fastest
    assert _best_name(both_classes, {EMULATED}) == "emulated"
    assert _best_name(both_classes, {"exact", EMULATED}) == "emulated"
    assert _best_name(both_classes, {"tf32"}) is None
    anywhere = best_for(both_classes, None, 4096, 4096, 4096, accuracies=["exact"])
    assert anywhere is not None and anywhere[0].accuracy == "exact"


def test_a_bare_string_of_classes_is_refused(both_classes: Session) -> None:
    with pytest.raises(ValueError, match="`accuracies`"):
        best_for(both_classes, H100.name, 4096, 4096, 4096, accuracies="exact")


def test_export_import_keeps_classes_and_old_exports_read_as_exact(
    both_classes: Session, new_database: NewDatabase
) -> None:
    data = json.loads(json.dumps(export_json(both_classes)))
    assert [m["accuracy"] for m in data["measurements"]] == ["exact", EMULATED, EMULATED]
    old = json.loads(json.dumps(data))
    for item in old["measurements"]:
        del item["accuracy"]  # written before accuracy classes
    for exported, expected in ((data, _bests(both_classes)), (old, None)):
        engine = make_engine(new_database())
        try:
            upgrade(engine)
            sessions = make_session_factory(engine)
            assert import_json(sessions, exported) == 3
            with sessions() as session:
                if expected is not None:
                    assert _bests(session) == expected
                else:
                    # All strict now: one best per device and shape, the faster one.
                    assert _bests(session) == [
                        (H100.name, 1024, "exact", "small_emulated"),
                        (H100.name, 4096, "exact", "emulated"),
                    ]
                    classes = session.scalars(select(Measurement.accuracy)).all()
                    assert set(classes) == {"exact"}
        finally:
            engine.dispose()


def test_importing_a_class_too_long_names_the_field(both_classes: Session) -> None:
    data = json.loads(json.dumps(export_json(both_classes)))
    data["measurements"][1]["accuracy"] = "x" * 33
    sessions = make_session_factory(both_classes.get_bind())  # type: ignore[arg-type]
    with pytest.raises(storage.StorageError, match=r"measurements\[1\]: `accuracy`"):
        import_json(sessions, data)
