"""A bulk write that other writers can work beside: rows staged in temporary tables in short
transactions, then merged into the real tables in one short transaction (``gemmtune import``).

SQLite has one write lock per file. A temporary table lives in the connection's own temporary
database, so filling it takes no lock on the results file: other processes commit while an
import stages its rows, and wait only for the merge (``INSERT ... SELECT`` in the database
engine, plus the best configs). On PostgreSQL a temporary table is private to the session and
unlogged. Nothing staged is visible to anyone until the merge commits, and the merge is one
transaction: an import that fails at any point leaves nothing of its rows, devices or shapes
behind; its staging tables are dropped (and die with the connection anyway).

Best configs follow the rule of :func:`storage.record_measurement`, as in
:func:`storage.bulk.record_measurements`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from storage.bulk import (
    Progress,
    Record,
    RowIds,
    best_offers,
    copy_rows,
    measurement_row,
    offer_all,
)
from storage.device_claims import claim_problem, known_devices, lock_device_names
from storage.errors import StorageError
from storage.inputs import DeviceIn, MeasurementIn, ShapeIn
from storage.models import Measurement
from storage.records import Offer

# Rows staged per transaction: a few thousand, so each staging transaction is short.
STAGE_BATCH = 2000
_IDS_PER_QUERY = 500

_MEASUREMENT: Table = Measurement.__table__  # type: ignore[assignment]
# The measurement's own columns (its id and foreign keys are set by the merge).
_VALUE_COLUMNS = [
    c.name for c in _MEASUREMENT.columns if c.name not in ("id", "device_id", "shape_id")
]


class _Stage:
    """The temporary tables of one import: its rows (by position in the import, with the
    index of their device and shape) and, filled by the merge, device and shape ids."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        tag = uuid.uuid4().hex[:12]
        metadata = MetaData()
        self.rows = Table(
            f"import_rows_{tag}",
            metadata,
            Column("position", Integer, primary_key=True, autoincrement=False),
            Column("device_key", Integer, nullable=False),
            Column("shape_key", Integer, nullable=False),
            Column("id", Integer),
            *(Column(name, _MEASUREMENT.c[name].type) for name in _VALUE_COLUMNS),
            prefixes=["TEMPORARY"],
        )
        self.devices = _key_table(f"import_devices_{tag}", metadata)
        self.shapes = _key_table(f"import_shapes_{tag}", metadata)
        self.tables = (self.rows, self.devices, self.shapes)
        with connection.begin():
            for table in self.tables:
                table.create(connection)

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Stage ``rows`` and commit (a short transaction of its own)."""
        with self.connection.begin():
            if self.connection.dialect.name == "postgresql":
                copy_rows(self.connection.connection.dbapi_connection, self.rows.name, rows)
            else:
                self.connection.execute(insert(self.rows), rows)

    def drop(self) -> None:
        with suppress(SQLAlchemyError):
            self.connection.rollback()
            for table in self.tables:
                self.connection.exec_driver_sql(f"DROP TABLE IF EXISTS {table.name}")
            self.connection.commit()


def _key_table(name: str, metadata: MetaData) -> Table:
    return Table(
        name,
        metadata,
        Column("key", Integer, primary_key=True, autoincrement=False),
        Column("id", Integer, nullable=False),
        prefixes=["TEMPORARY"],
    )


def write_staged(
    sessions: sessionmaker[Session],
    records: Sequence[Record],
    progress: Progress | None = None,
    devices: Sequence[DeviceIn] = (),
    shapes: Sequence[ShapeIn] = (),
) -> int:
    """Store ``records`` (all of them, or on any error none), staging them first, and
    ``devices`` and ``shapes`` besides theirs; how many records.

    ``progress(staged, total)`` follows the staging; the merge that ends it is short.
    """
    if not records:
        return 0
    devices = list(dict.fromkeys([*devices, *(device for device, _, _ in records)]))
    shapes = list(dict.fromkeys([*shapes, *(shape for _, shape, _ in records)]))
    device_keys = {device: i for i, device in enumerate(devices)}
    shape_keys = {shape: i for i, shape in enumerate(shapes)}
    with sessions() as session:
        bind = session.get_bind()
    # A connection of its own: its staging tables and transactions are the import's.
    engine = bind if isinstance(bind, Engine) else bind.engine
    with engine.connect() as connection:
        stage = _Stage(connection)
        try:
            for start in range(0, len(records), STAGE_BATCH):
                batch = records[start : start + STAGE_BATCH]
                stage.add(
                    [
                        _staged_row(start + i, m, device_keys[device], shape_keys[shape])
                        for i, (device, shape, m) in enumerate(batch)
                    ]
                )
                if progress is not None:
                    progress(start + len(batch), len(records))
            offered = best_offers(
                Offer(device_keys[d], shape_keys[s], position, m)
                for position, (d, s, m) in enumerate(records)
            )
            vouched = {device for device, _, m in records if m.trusted}
            claimed = list(dict.fromkeys(device for device, _, _ in records))
            _merge(stage, devices, shapes, offered, vouched, claimed)
        finally:
            stage.drop()
    return len(records)


def _staged_row(position: int, m: MeasurementIn, device_key: int, shape_key: int) -> dict[str, Any]:
    row = measurement_row(m, device_key, shape_key)
    row["device_key"], row["shape_key"] = row.pop("device_id"), row.pop("shape_id")
    return {"position": position, **row}


def _merge(
    stage: _Stage,
    devices: list[DeviceIn],
    shapes: list[ShapeIn],
    offered: list[Offer],
    vouched: set[DeviceIn],
    claimed: list[DeviceIn],
) -> None:
    """Move the staged rows into the real tables and offer the best configs, in one
    transaction (on SQLite one ``BEGIN IMMEDIATE``: the write lock for the merge only).

    The records' devices are judged again against what the database knows now, under the
    names' locks (:mod:`storage.device_claims`): the import checked them before staging,
    and a trusted upload may have stored one of those names otherwise since."""
    connection = stage.connection
    with connection.begin(), Session(bind=connection) as session:  # the session joins it
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        names = {device.name for device in claimed}
        lock_device_names(session, names)
        known = known_devices(session, names)
        for device in claimed:
            problem = claim_problem(device, known)
            if problem is not None:
                raise StorageError(f"device {problem} (stored meanwhile); nothing imported")
        ids = RowIds(session)
        ids.add(devices, shapes)
        ids.vouch(vouched)  # the devices of the file's trusted records
        connection.execute(
            insert(stage.devices), [{"key": i, "id": ids.device(d)} for i, d in enumerate(devices)]
        )
        connection.execute(
            insert(stage.shapes), [{"key": i, "id": ids.shape(s)} for i, s in enumerate(shapes)]
        )
        _number(stage)
        rows, by_device, by_shape = stage.rows, stage.devices, stage.shapes
        ordered = (
            select(rows.c.id, by_device.c.id, by_shape.c.id, *(rows.c[n] for n in _VALUE_COLUMNS))
            .join_from(rows, by_device, by_device.c.key == rows.c.device_key)
            .join(by_shape, by_shape.c.key == rows.c.shape_key)
            .order_by(rows.c.position)
        )
        columns = ["id", "device_id", "shape_id", *_VALUE_COLUMNS]
        connection.execute(insert(_MEASUREMENT).from_select(columns, ordered))
        new_ids = _ids_at(stage, [offer.measurement_id for offer in offered])
        # The offers name devices and shapes by index and rows by position until now.
        best = [
            Offer(
                ids.device(devices[o.device_id]),
                ids.shape(shapes[o.shape_id]),
                new_ids[o.measurement_id],
                o.measurement,
            )
            for o in offered
        ]
        offer_all(session, best)
        session.flush()


def _number(stage: _Stage) -> None:
    """Give every staged row its measurement id, in staging order."""
    connection, rows = stage.connection, stage.rows
    if connection.dialect.name == "postgresql":
        # Ids from the sequence, drawn in position order (the inner ORDER BY, then nextval).
        connection.execute(
            text(
                f"UPDATE {rows.name} AS r SET id = n.id FROM (SELECT o.position, "
                "nextval('measurement_id_seq') AS id FROM "
                f"(SELECT position FROM {rows.name} ORDER BY position) AS o) AS n "
                "WHERE r.position = n.position"
            )
        )
        return
    # SQLite: the merge holds the write lock, so the ids after the largest are free.
    last = connection.execute(select(func.coalesce(func.max(_MEASUREMENT.c.id), 0))).scalar_one()
    connection.execute(rows.update().values(id=rows.c.position + last + 1))


def _ids_at(stage: _Stage, positions: list[int]) -> dict[int, int]:
    """Measurement ids of the staged rows at ``positions``."""
    rows = stage.rows
    found: dict[int, int] = {}
    for start in range(0, len(positions), _IDS_PER_QUERY):
        chunk = positions[start : start + _IDS_PER_QUERY]
        query = select(rows.c.position, rows.c.id).where(rows.c.position.in_(chunk))
        found.update({position: new_id for position, new_id in stage.connection.execute(query)})
    return found
