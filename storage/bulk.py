"""The one bulk write path: many measurements at once (preload, ``gemmtune import``).

Rows go in as multi-row ``INSERT ... RETURNING`` statements of :data:`BULK_CHUNK` rows (Core,
no ORM objects: thousands of rows a second on SQLite and PostgreSQL), and best_config is kept
by the same rule as :func:`storage.record_measurement`, which tuning uses one row at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from sqlalchemy import func, insert, select, tuple_
from sqlalchemy.orm import Session

from storage.conflicts import upsert_statement
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, ShapeIn
from storage.models import BestConfig, Device, Measurement, Shape, utcnow
from storage.records import Offer, offer_best, vouch_for_devices
from tuner.core.phases import Phase

# Rows inserted together: large enough for multi-row INSERTs, small enough to report progress
# often.
BULK_CHUNK = 1000

_LOOKUP_CHUNK = 500  # keys per lookup of device or shape ids
Progress = Callable[[int, int], None]  # (records written, records in all)
Record = tuple[DeviceIn, ShapeIn, MeasurementIn]


class RowIds:
    """Device and shape ids by value: read in one query per table, the missing ones created in
    one statement (a bulk write meets the same few devices and shapes over and over)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._devices: dict[DeviceIn, int] = {}
        self._shapes: dict[ShapeIn, int] = {}

    def add(
        self, devices: Iterable[DeviceIn], shapes: Iterable[ShapeIn], create: bool = True
    ) -> None:
        """Know every one of ``devices`` and ``shapes``: creating those missing, or with
        ``create=False`` only those stored (:meth:`known` tells which)."""
        devices, shapes = set(devices) - self._devices.keys(), set(shapes) - self._shapes.keys()
        if devices:
            values = [asdict(d) for d in devices]
            self._devices.update(self._ensure(Device, values, DeviceIn, create))
        if shapes:
            values = [asdict(s) for s in shapes]
            self._shapes.update(self._ensure(Shape, values, ShapeIn, create))

    def known(self, device: DeviceIn, shape: ShapeIn) -> tuple[int, int] | None:
        """The ids of a device and shape both known, else None."""
        device_id, shape_id = self._devices.get(device), self._shapes.get(shape)
        return None if device_id is None or shape_id is None else (device_id, shape_id)

    def vouch(self, devices: Iterable[DeviceIn]) -> None:
        """Mark these (known) devices trusted: a trusted record of theirs is being written."""
        vouch_for_devices(self.session, (self.device(d) for d in set(devices)))

    def device(self, device: DeviceIn) -> int:
        if device not in self._devices:
            self.add([device], [])
        return self._devices[device]

    def shape(self, shape: ShapeIn) -> int:
        if shape not in self._shapes:
            self.add([], [shape])
        return self._shapes[shape]

    def _ensure(
        self, model: Any, values: list[dict[str, Any]], kind: Any, create: bool
    ) -> dict[Any, int]:
        if create:
            statement = upsert_statement(self.session, model).on_conflict_do_nothing()
            self.session.execute(statement, values)
        names = list(values[0])
        columns = [getattr(model, name) for name in names]
        found: dict[Any, int] = {}
        for start in range(0, len(values), _LOOKUP_CHUNK):
            keys = [tuple(v[name] for name in names) for v in values[start : start + _LOOKUP_CHUNK]]
            rows = self.session.execute(
                select(*columns, model.id).where(tuple_(*columns).in_(keys))
            )
            found.update({kind(*row[:-1]): row[-1] for row in rows})
        return found


def record_measurements(
    session: Session,
    records: Iterable[Record],
    progress: Progress | None = None,
    ids_of: RowIds | None = None,
) -> list[int]:
    """Store many measurements in one go; their ids, in order.

    The rows and the best_config are exactly those of calling
    :func:`storage.record_measurement` for each record in order: each (device, shape, accuracy
    class) offers best_config only the first of its fastest final re-measurements, or without
    any, of its fastest ok measurements (by that rule no other record of the batch could win).
    ``progress`` is called after each chunk. Nothing commits here; the best_config rows stay
    locked until the caller commits.
    """
    pending = list(records)
    known = ids_of or RowIds(session)
    known.add((d for d, _, _ in pending), (s for _, s, _ in pending))
    known.vouch(d for d, _, m in pending if m.trusted)
    ids: list[int] = []
    written: list[Offer] = []
    for start in range(0, len(pending), BULK_CHUNK):
        chunk = pending[start : start + BULK_CHUNK]
        keys = [(known.device(device), known.shape(shape)) for device, shape, _ in chunk]
        rows = [measurement_row(m, *key) for key, (_, _, m) in zip(keys, chunk, strict=True)]
        chunk_ids = _insert(session, rows)
        written += (
            Offer(*key, new_id, m)
            for key, (_, _, m), new_id in zip(keys, chunk, chunk_ids, strict=True)
        )
        ids += chunk_ids
        if progress is not None:
            progress(len(ids), len(pending))
    offer_all(session, best_offers(written))
    return ids


def best_offers(written: Iterable[Offer]) -> list[Offer]:
    """Of measurements written in this order, the one each (device, shape, accuracy class) key
    offers as its best: the first of its fastest final re-measurements, or without any, of its
    fastest ok measurements (``record_measurement``'s rule: no other could win). Only those
    that compete (``MeasurementIn.competes``: trusted, measured on the device)."""
    fastest: dict[tuple[int, int, str], Offer] = {}
    for offer in written:
        m = offer.measurement
        if not m.competes:
            continue
        held = fastest.get(offer.key)
        if held is None or _rank(m) < _rank(held.measurement):
            fastest[offer.key] = offer
    return list(fastest.values())


def _rank(m: MeasurementIn) -> tuple[bool, float]:
    """Finals before screening times, then faster first (``record_measurement``'s rule)."""
    return (m.phase != Phase.FINAL, m.ms if m.ms is not None else float("inf"))


def offer_all(session: Session, offers: list[Offer]) -> None:
    """:func:`offer_best` for each offer, with the (device, shape, accuracy class) keys that
    have no best yet done in one statement."""
    if not offers:
        return
    now = utcnow()
    rows = [
        {
            "device_id": o.device_id,
            "shape_id": o.shape_id,
            "accuracy": o.measurement.accuracy,
            "measurement_id": o.measurement_id,
            "updated_at": now,
        }
        for o in offers
    ]
    statement = (
        upsert_statement(session, BestConfig)
        .on_conflict_do_nothing()
        .returning(
            BestConfig.device_id,
            BestConfig.shape_id,
            BestConfig.accuracy,
            sort_by_parameter_order=True,
        )
    )
    created = {tuple(row) for row in session.execute(statement, rows)}
    for offer in offers:
        if offer.key not in created:
            offer_best(session, offer)


def _insert(session: Session, rows: list[dict[str, Any]]) -> list[int]:
    """Insert measurement rows; their new ids, in order."""
    if session.get_bind().dialect.name == "postgresql":
        return _copy_into_postgresql(session, rows)
    table = Measurement.__table__
    statement = insert(table).returning(table.c.id, sort_by_parameter_order=True)  # type: ignore[arg-type]
    return list(session.execute(statement, rows).scalars())


def _copy_into_postgresql(session: Session, rows: list[dict[str, Any]]) -> list[int]:
    """``COPY`` with ids drawn from the sequence first: psycopg parses a multi-row INSERT of
    thousands of parameters in Python, which made it the slowest part of a bulk write."""
    ids = list(
        session.execute(
            select(func.nextval("measurement_id_seq")).select_from(
                func.generate_series(1, len(rows))
            )
        ).scalars()
    )
    dbapi = session.connection().connection.dbapi_connection
    copy_rows(dbapi, "measurement", [{"id": i, **row} for i, row in zip(ids, rows, strict=True)])
    return ids


def copy_rows(dbapi: Any, table: str, rows: list[dict[str, Any]]) -> None:
    """``COPY`` ``rows`` (dicts with the same keys, JSON columns as values) into ``table``
    through a psycopg connection."""
    columns = list(rows[0])
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with dbapi.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([json.dumps(v) if k in _JSON_COLUMNS else v for k, v in row.items()])


_JSON_COLUMNS = frozenset(("params", "provenance"))


def measurement_row(m: MeasurementIn, device_id: int, shape_id: int) -> dict[str, Any]:
    """A measurement table row's values (without its id)."""
    values = {name: getattr(m, name) for name in MEASUREMENT_FIELDS}
    values.update(
        device_id=device_id,
        shape_id=shape_id,
        params=dict(m.params),
        provenance=dict(m.provenance),
        ratio=m.effective_ratio(),
        created_at=m.created_at or utcnow(),
    )
    return values
