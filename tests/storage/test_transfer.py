"""Conformance: export then import reproduces the results; importing is idempotent and strict."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from storage import (
    Measurement,
    ShapeIn,
    StorageError,
    best_configs,
    export_json,
    import_json,
    list_devices,
    make_engine,
    make_session_factory,
    record_measurement,
    upgrade,
)

from .factories import A100, H100, SQUARE, measurement


def sessions_of(session: Session) -> sessionmaker[Session]:
    """Sessions on the database of ``session`` (an import runs its own transactions)."""
    return make_session_factory(session.get_bind())  # type: ignore[arg-type]


def _fill(session: Session) -> None:
    small = ShapeIn(128, 256, 512)
    for i, ms in enumerate((3.0, 1.0, 2.0, 1.0)):
        record_measurement(
            session,
            H100,
            SQUARE,
            measurement(ms=ms, config_name=f"c{i}", study="s", trial_number=i),
        )
    record_measurement(session, H100, SQUARE, measurement(ms=None, status="timeout"))
    record_measurement(session, A100, small, measurement(ms=0.2, config_name="a"))
    record_measurement(session, A100, small, measurement(ms=0.1, status="wrong_result"))
    session.commit()


def _summary(session: Session) -> tuple[Any, ...]:
    bests = sorted(
        (
            b.device.name,
            (b.shape.m, b.shape.n, b.shape.k, b.shape.dtype, b.shape.layout),
            b.measurement.config_name,
            b.measurement.ms,
            b.measurement.created_at,
        )
        for b in best_configs(session)
    )
    count = session.scalar(select(func.count()).select_from(Measurement))
    return bests, count, [(d.name, d.arch, d.sm_count) for d in list_devices(session)]


def test_export_import_round_trip(session: Session, new_database: Callable[[], str]) -> None:
    _fill(session)
    data = json.loads(json.dumps(export_json(session)))  # must survive real JSON
    assert data["version"] == 1 and len(data["measurements"]) == 7
    assert data["measurements"][0]["device"] == {
        "name": H100.name,
        "arch": "sm_90",
        "sm_count": 132,
    }
    target = make_engine(new_database())
    try:
        upgrade(target)
        factory = make_session_factory(target)
        assert import_json(factory, data) == 7
        with factory() as other:
            assert _summary(other) == _summary(session)
            best = best_configs(other, device=H100.name)
            assert [b.measurement.config_name for b in best] == ["c1"]  # first of the 1.0 ms ties
        assert import_json(factory, data) == 0
        with factory() as other:
            assert _summary(other)[1] == 7
    finally:
        target.dispose()


def test_import_into_same_database_adds_nothing(session: Session) -> None:
    _fill(session)
    before = _summary(session)
    assert import_json(sessions_of(session), export_json(session)) == 0
    assert _summary(session) == before


def test_half_shapes_of_every_layout_round_trip_and_old_exports_read_as_nn(
    session: Session, new_database: Callable[[], str]
) -> None:
    """dtype and layout are part of a shape's key through export and import; an export written
    before layouts (``row-major``) lands on NN, the same row as an NN shape."""
    for index, layout in enumerate(("NN", "NT", "TN", "TT")):
        shape = ShapeIn(64, 64, 64, "bfloat16", layout)
        record_measurement(session, H100, shape, measurement(ms=1.0 + index))
    record_measurement(session, H100, ShapeIn(64, 64, 64), measurement(ms=9.0))
    session.commit()
    data = json.loads(json.dumps(export_json(session)))
    old = json.loads(json.dumps(data))
    for item in old["measurements"]:
        if item["shape"]["dtype"] == "float32":
            item["shape"]["layout"] = "row-major"
    target = make_engine(new_database())
    try:
        upgrade(target)
        factory = make_session_factory(target)
        assert import_json(factory, old) == 5
        with factory() as other:
            assert _summary(other) == _summary(session)
            keys = {(b.shape.dtype, b.shape.layout) for b in best_configs(other)}
            assert keys == {("float32", "NN")} | {("bfloat16", x) for x in ("NN", "NT", "TN", "TT")}
        assert import_json(factory, data) == 0  # the NN row is the row-major one
    finally:
        target.dispose()


def _policy(session: Session) -> list[tuple[str, str | None, str, bool, dict[str, Any]]]:
    rows = session.scalars(select(Measurement).order_by(Measurement.config_name))
    return [(r.config_name, r.study, r.phase, r.trusted, r.provenance) for r in rows]


def test_phase_and_trust_round_trip_and_old_exports_are_translated(
    session: Session, new_database: Callable[[], str]
) -> None:
    """An export carries ``phase`` and ``trusted`` as fields; one written before they were
    (finalists under ``<study>|finalists`` with ``"phase": "final"`` in their provenance, an
    untrusted upload with ``"trusted": false``) imports to the same rows and the same best
    config, and the two files are the same measurements to a later import."""
    screened = measurement(ms=0.5, config_name="screened", study="s", trial_number=0)
    final = measurement(ms=0.8, config_name="final", study="s", phase="final")
    untrusted = measurement(ms=0.1, config_name="untrusted", provenance={"worker": "w"})
    for m in (screened, final, replace(untrusted, trusted=False)):
        record_measurement(session, H100, SQUARE, m)
    session.commit()
    data = json.loads(json.dumps(export_json(session)))
    assert [(m["phase"], m["trusted"]) for m in data["measurements"]] == [
        ("screening", True),
        ("final", True),
        ("screening", False),
    ]
    old = json.loads(json.dumps(data))
    for item in old["measurements"]:
        if item.pop("phase") == "final":
            item["study"] += "|finalists"
            item["provenance"]["phase"] = "final"
        if not item.pop("trusted"):
            item["provenance"]["trusted"] = False
    target = make_engine(new_database())
    try:
        upgrade(target)
        factory = make_session_factory(target)
        assert import_json(factory, old) == 3
        with factory() as other:
            assert _policy(other) == _policy(session)
            assert _summary(other) == _summary(session)
            (best,) = best_configs(other)
            assert best.measurement.config_name == "final"
        assert import_json(factory, data) == 0  # the translated rows are these rows
    finally:
        target.dispose()


@pytest.fixture
def sqlite_session(tmp_path: Path) -> Iterator[Session]:
    """Input validation does not depend on the backend: one cheap SQLite file is enough."""
    engine = make_engine(f"sqlite:///{tmp_path / 'validation.db'}")
    upgrade(engine)
    with make_session_factory(engine)() as session:
        yield session
    engine.dispose()


def _valid_export(session: Session) -> dict[str, Any]:
    record_measurement(session, H100, SQUARE, measurement(ms=1.0))
    session.commit()
    data: dict[str, Any] = json.loads(json.dumps(export_json(session)))
    return data


@pytest.mark.parametrize(
    ("corrupt", "field"),
    [
        (lambda d: d.update(format="optuna"), "`format`"),
        (lambda d: d.update(version=99), "`version`"),
        (lambda d: d.update(measurements={}), "`measurements`"),
        (lambda d: d["measurements"][0].pop("config_name"), "measurements[0].config_name"),
        (lambda d: d["measurements"][0]["shape"].update(m="big"), "measurements[0].shape: `m`"),
        (lambda d: d["measurements"][0].update(status="fast"), "measurements[0]: `status`"),
        (lambda d: d["measurements"][0].update(created_at="yesterday"), "created_at"),
        (lambda d: d["measurements"][0].update(msx=1.0), "unknown field(s): msx"),
        (lambda d: d["devices"][0].update(sm_count=-4), "devices[0]: `sm_count`"),
    ],
)
def test_malformed_import_names_the_field(
    sqlite_session: Session, corrupt: Callable[[dict[str, Any]], object], field: str
) -> None:
    data = _valid_export(sqlite_session)
    import_json(sessions_of(sqlite_session), data)  # the uncorrupted export is accepted
    corrupt(data)
    with pytest.raises(StorageError) as info:
        import_json(sessions_of(sqlite_session), data)
    assert field in str(info.value)
    assert "\n" not in str(info.value)


def test_import_rejects_non_object(sqlite_session: Session) -> None:
    with pytest.raises(StorageError, match="`export` must be a JSON object"):
        import_json(sessions_of(sqlite_session), [1, 2])


def test_import_reports_progress_and_adds_in_order(session: Session, tmp_path: Path) -> None:
    _fill(session)
    data = export_json(session)
    for entry in data["measurements"]:
        entry["study"] = "moved"  # new rows: not the stored ones
    calls: list[tuple[int, int]] = []
    added = import_json(sessions_of(session), data, lambda done, total: calls.append((done, total)))
    assert added == len(data["measurements"]) == 7
    assert calls[-1] == (7, 7)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_export_reports_progress_as_it_reads(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(session)
    monkeypatch.setattr("storage.transfer.EXPORT_CHUNK", 3)
    calls: list[tuple[int, int]] = []
    data = export_json(session, lambda done, total: calls.append((done, total)))
    assert calls == [(3, 7), (6, 7), (7, 7)]  # one call per chunk of rows read
    assert [m["config_name"] for m in data["measurements"][:4]] == ["c0", "c1", "c2", "c3"]
    assert len({json.dumps(m, default=str) for m in data["measurements"]}) == 7  # none twice
