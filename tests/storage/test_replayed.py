"""Replayed measurements (``evaluator = replay``): stored and listed, never a device's best config,
on either write path; kept by export and import; and rows stored before revision 0011 are
marked by the tables their provenance names, the best configs they held given back to measured
rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

import storage
from storage import downgrade, make_engine, make_session_factory, upgrade
from storage.models import Measurement

from .factories import H100, SQUARE, measurement

REPLAYED = {"replayed_from": "h100-sweep.jsonl", "device": H100.name}


def replayed(ms: float, **overrides: Any) -> storage.MeasurementIn:
    return measurement(ms, evaluator="replay", provenance=REPLAYED, **overrides)


def best_ms(session: Session) -> float | None:
    found = storage.best_for(session, H100.name, 4096, 4096, 4096)
    return None if found is None else found[1].ms


@pytest.mark.parametrize("phase", ["screening", "final"])
def test_a_replayed_time_never_replaces_a_measured_best(session: Session, phase: str) -> None:
    storage.record_measurement(session, H100, SQUARE, measurement(2.348, phase="final"))
    storage.record_measurement(session, H100, SQUARE, replayed(1.0, phase=phase))
    session.commit()
    assert best_ms(session) == 2.348
    stored = session.scalars(select(Measurement).where(Measurement.ms == 1.0)).one()
    assert stored.evaluator == "replay"


def test_replayed_times_alone_make_no_best_on_either_write_path(session: Session) -> None:
    storage.record_measurement(session, H100, SQUARE, replayed(1.0, phase="final"))
    storage.record_measurements(session, [(H100, SQUARE, replayed(0.5, phase="final"))])
    session.commit()
    assert best_ms(session) is None
    assert storage.best_configs(session) == []
    found = storage.fastest_replayed(session, H100.name, 4096, 4096, 4096)
    assert found is not None and found.ms == 0.5  # what a bench on the replay reuses


def test_the_bulk_path_offers_only_measured_times(session: Session) -> None:
    storage.record_measurements(
        session,
        [
            (H100, SQUARE, replayed(0.5, phase="final")),
            (H100, SQUARE, measurement(3.0)),
            (H100, SQUARE, replayed(0.7)),
        ],
    )
    session.commit()
    assert best_ms(session) == 3.0


def test_an_unknown_evaluator_is_refused() -> None:
    with pytest.raises(ValueError, match="`evaluator` must be one of gpu, replay"):
        measurement(1.0, evaluator="guess")


def test_export_and_import_keep_the_mark(session: Session, new_database: Callable[[], str]) -> None:
    storage.record_measurement(session, H100, SQUARE, measurement(2.0))
    storage.record_measurement(session, H100, SQUARE, replayed(1.0))
    session.commit()
    exported = json.loads(json.dumps(storage.export_json(session)))
    by_ms = {m["ms"]: m for m in exported["measurements"]}
    assert (by_ms[2.0]["evaluator"], by_ms[1.0]["evaluator"]) == ("gpu", "replay")
    # An export written before the field: its replayed row is known by its provenance.
    older = json.loads(json.dumps(exported))
    for record in older["measurements"]:
        del record["evaluator"]
    for data in (exported, older):
        engine = make_engine(new_database())
        upgrade(engine)
        sessions = make_session_factory(engine)
        assert storage.import_json(sessions, data) == 2
        with sessions() as other:
            rows = other.scalars(select(Measurement).order_by(Measurement.ms)).all()
            assert [(r.ms, r.evaluator) for r in rows] == [(1.0, "replay"), (2.0, "gpu")]
            assert best_ms(other) == 2.0
        engine.dispose()


def _write_0009(engine: Engine, rows: list[tuple[float, str, dict[str, Any]]]) -> list[int]:
    """Measurements of 4096^3 on the H100 as revision 0009's code stored them (no evaluator:
    a replayed one said so only in its provenance), the first one the best config, as a replay
    made it then. Ids in order."""
    with engine.begin() as connection:
        device = connection.execute(
            sa.text(
                "INSERT INTO device (name, arch, sm_count) VALUES (:n, 'sm_90', 132) RETURNING id"
            ),
            {"n": H100.name},
        ).scalar_one()
        shape = connection.execute(
            sa.text("INSERT INTO shape (m, n, k) VALUES (4096, 4096, 4096) RETURNING id")
        ).scalar_one()
        ids = []
        for ms, phase, provenance in rows:
            ids.append(
                connection.execute(
                    sa.text(
                        "INSERT INTO measurement (device_id, shape_id, family, config_name, "
                        "params, status, ms, provenance, phase) VALUES (:d, :s, 'warptile', "
                        ":name, '{}', 'ok', :ms, :prov, :phase) RETURNING id"
                    ),
                    {
                        "d": device,
                        "s": shape,
                        "name": f"warptile_{len(ids)}",
                        "ms": ms,
                        "prov": json.dumps(provenance),
                        "phase": phase,
                    },
                ).scalar_one()
            )
        connection.execute(
            sa.text(
                "INSERT INTO best_config (device_id, shape_id, accuracy, measurement_id) "
                "VALUES (:d, :s, 'exact', :m)"
            ),
            {"d": device, "s": shape, "m": ids[0]},
        )
    return ids


def test_upgrade_marks_replayed_rows_and_gives_their_bests_back(engine: Engine) -> None:
    downgrade(engine, "0009")
    ids = _write_0009(
        engine,
        [
            (2.774, "final", REPLAYED),  # the replayed best that replaced the served one
            (2.348, "final", {"device": H100.name}),  # the measured best it replaced
            (2.0, "screening", {"device": H100.name}),  # faster, but a final outranks it
        ],
    )
    upgrade(engine)
    sessions: sessionmaker[Session] = make_session_factory(engine)
    with sessions() as session:
        marks = dict(session.execute(select(Measurement.id, Measurement.evaluator)).all())
        assert marks == {ids[0]: "replay", ids[1]: "gpu", ids[2]: "gpu"}
        found = storage.best_for(session, H100.name, 4096, 4096, 4096)
        assert found is not None and found[1].id == ids[1]


def test_upgrade_drops_a_best_only_replayed_rows_held(engine: Engine) -> None:
    downgrade(engine, "0009")
    _write_0009(engine, [(2.774, "final", REPLAYED), (2.5, "screening", REPLAYED)])
    upgrade(engine)
    with make_session_factory(engine)() as session:
        assert storage.best_configs(session) == []
        assert session.scalar(select(sa.func.count()).select_from(storage.BestConfig)) == 0
