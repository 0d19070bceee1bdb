"""Write path: record one evaluated candidate and keep best_config current, race-safely.

Several tuning workers write at once. Device and shape rows are created with
``INSERT ... ON CONFLICT DO NOTHING`` followed by a select, so two workers meeting a new GPU or
shape never collide on the unique keys. The best_config row is locked (``SELECT ... FOR UPDATE``
on PostgreSQL; on SQLite the driver opens the transaction at the first INSERT, which takes the
single write lock, so the rest of it is serialised) before comparing times, so a slower result
can never overwrite a faster one that committed meanwhile.

Nothing here commits: the caller's transaction holds the device, shape, measurement and
best_config writes together, e.g. ``with factory.begin() as session: record_measurement(...)``.
Keep it to one measurement per transaction when other workers share the database, so the
best_config lock is held briefly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import select, update
from sqlalchemy.orm import Session, lazyload

from storage.conflicts import insert_ignoring_conflicts
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, ShapeIn
from storage.models import BestConfig, Device, Measurement, Shape, utcnow
from storage.queries import find_device, find_shape


def record_measurement(
    session: Session, device: DeviceIn, shape: ShapeIn, m: MeasurementIn
) -> Measurement:
    """Store ``m`` for ``device`` and ``shape``; make it the best config if it is the fastest.

    Only trusted (:func:`is_trusted`) ``ok`` measurements with a time compete, and only a
    strictly lower time replaces the current best, so the first of equally fast configs
    stays. Failed measurements are stored with their status and reason and never become best.

    A study ends by re-measuring its finalists side by side with cuBLAS
    (``provenance["phase"] == "final"``, :data:`FINAL_PHASE`). Those re-measurements outrank
    the study's quicker screening times: a final measurement replaces a best that is not final,
    or a final one when strictly faster; a screening measurement never replaces a final best.
    """
    return record_measurements(session, [(device, shape, m)])[0]


def record_measurements(
    session: Session, records: Iterable[tuple[DeviceIn, ShapeIn, MeasurementIn]]
) -> list[Measurement]:
    """Store many measurements in one go (a bulk load such as the committed results).

    The rows and the best_config are exactly those of calling :func:`record_measurement` for
    each record in order, with fewer statements: each device and shape is looked up once, the
    rows are inserted together, and each (device, shape) offers best_config only its first
    fastest ok measurement (a later one only replaces the best when strictly faster, so no other
    record of the batch could win). Meant for loads into a database no tuner writes to at the
    same time: the best_config rows stay locked until the caller commits.
    """
    devices: dict[DeviceIn, Device] = {}
    shapes: dict[ShapeIn, Shape] = {}
    stored: list[tuple[Measurement, MeasurementIn]] = []
    for device, shape, m in records:
        if device not in devices:
            devices[device] = get_or_create_device(session, device)
        if shape not in shapes:
            shapes[shape] = _get_or_create_shape(session, shape)
        stored.append((_new_measurement(devices[device], shapes[shape], m), m))
    session.add_all([measurement for measurement, _ in stored])
    session.flush()
    fastest: dict[tuple[int, int], tuple[float, Measurement]] = {}
    for measurement, m in stored:
        if m.status != "ok" or m.ms is None or not is_trusted(m.provenance):
            continue
        key = (measurement.device_id, measurement.shape_id)
        if key not in fastest or m.ms < fastest[key][0]:
            fastest[key] = (m.ms, measurement)
    for ms, measurement in fastest.values():
        _offer_best(session, measurement, ms)
    return [measurement for measurement, _ in stored]


def number_measurement(session: Session, study: str, config_name: str, trial_number: int) -> None:
    """Set the trial number of ``config_name``'s unnumbered measurement in ``study`` (its trial
    in the persistent Optuna study, made after the measurement was stored)."""
    session.execute(
        update(Measurement)
        .where(
            Measurement.study == study,
            Measurement.config_name == config_name,
            Measurement.trial_number.is_(None),
        )
        .values(trial_number=trial_number)
        .execution_options(synchronize_session=False)
    )


def _new_measurement(device_row: Device, shape_row: Shape, m: MeasurementIn) -> Measurement:
    values = {name: getattr(m, name) for name in MEASUREMENT_FIELDS}
    values.update(params=dict(m.params), provenance=dict(m.provenance), ratio=m.effective_ratio())
    created_at = values.pop("created_at")  # None: the database's default, now
    measurement = Measurement(device=device_row, shape=shape_row, **values)
    if created_at is not None:
        measurement.created_at = created_at
    return measurement


def get_or_create_device(session: Session, device: DeviceIn) -> Device:
    row = find_device(session, device)
    if row is None:
        values = {"name": device.name, "arch": device.arch, "sm_count": device.sm_count}
        insert_ignoring_conflicts(session, Device, values)
        row = find_device(session, device)
    assert row is not None
    return row


def _get_or_create_shape(session: Session, shape: ShapeIn) -> Shape:
    row = find_shape(session, shape)
    if row is None:
        values = {
            "m": shape.m,
            "n": shape.n,
            "k": shape.k,
            "dtype": shape.dtype,
            "layout": shape.layout,
        }
        insert_ignoring_conflicts(session, Shape, values)
        row = find_shape(session, shape)
    assert row is not None
    return row


FINAL_PHASE = "final"
# Set to False in a measurement's provenance by whoever stored a result it cannot vouch for (the
# API, for uploads without the trusted token): such a row is kept and listed, never the best.
TRUSTED_KEY = "trusted"


def is_trusted(provenance: object) -> bool:
    """Whether a measurement may become the best: unless its provenance says it is not."""
    return not (isinstance(provenance, Mapping) and provenance.get(TRUSTED_KEY) is False)


def is_final(provenance: object) -> bool:
    """Whether a measurement's provenance marks a finalist's side-by-side re-measurement."""
    return isinstance(provenance, dict) and provenance.get("phase") == FINAL_PHASE


def _offer_best(session: Session, measurement: Measurement, ms: float) -> None:
    """Make ``measurement`` the best for its device and shape if none is faster (strictly)."""
    values = {
        "device_id": measurement.device_id,
        "shape_id": measurement.shape_id,
        "measurement_id": measurement.id,
        "updated_at": utcnow(),
    }
    insert_ignoring_conflicts(session, BestConfig, values)
    # Lock the row; on PostgreSQL a concurrent writer waits here until we commit, and we read
    # the committed version of any row it wrote (READ COMMITTED re-reads after the lock).
    best = session.scalars(
        select(BestConfig)
        .where(
            BestConfig.device_id == measurement.device_id,
            BestConfig.shape_id == measurement.shape_id,
        )
        .with_for_update(of=BestConfig)
        .options(lazyload("*"))
        .execution_options(populate_existing=True)
    ).one()
    if best.measurement_id == measurement.id:
        return  # the insert above created it
    # A fresh statement, hence a fresh snapshot that sees the current best's committed row.
    current = session.execute(
        select(Measurement.ms, Measurement.provenance).where(Measurement.id == best.measurement_id)
    ).one()
    best_ms, best_final = current[0], is_final(current[1])
    new_final = is_final(measurement.provenance)
    faster = best_ms is None or ms < best_ms
    if (new_final and (not best_final or faster)) or (not best_final and faster):
        best.measurement_id = measurement.id
        best.updated_at = utcnow()
        session.flush()
