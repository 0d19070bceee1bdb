"""Write path: record one evaluated candidate and keep best_config current, race-safely.

A measurement competes only with those of its own accuracy class (``MeasurementIn.accuracy``):
best_config holds the fastest of each class per device and shape, and a faster config of a less
exact class never displaces the best strict one.

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

from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy import select, update
from sqlalchemy.orm import Session, lazyload

from storage.conflicts import insert_ignoring_conflicts
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, ShapeIn
from storage.models import BestConfig, Device, Measurement, Shape, utcnow
from storage.queries import find_device, find_shape
from storage.values import shape_values
from tuner.core.phases import Phase


def record_measurement(
    session: Session, device: DeviceIn, shape: ShapeIn, m: MeasurementIn
) -> Measurement:
    """Store ``m`` for ``device`` and ``shape``; make it the best config of its accuracy class
    if it is the fastest of that class.

    Only trusted (``m.trusted``) ``ok`` measurements with a time, measured on the device (not
    replayed: ``m.evaluator``), compete (``MeasurementIn.competes``), and only a strictly
    lower time replaces the current best, so the first of equally fast configs stays. Failed
    measurements are stored with their status and reason and never become best.

    A study ends by re-measuring its finalists side by side with cuBLAS (``m.phase`` is
    ``final``). Those re-measurements outrank the study's quicker screening times: a final
    measurement replaces a best that is not final, or a final one when strictly faster; a
    screening measurement never replaces a final best.
    """
    measurement = _new_measurement(
        get_or_create_device(session, device, trusted=m.trusted),
        get_or_create_shape(session, shape),
        m,
    )
    session.add(measurement)
    session.flush()
    if m.competes:
        offer_best(session, Offer(measurement.device_id, measurement.shape_id, measurement.id, m))
    return measurement


def number_measurement(session: Session, study: str, config_name: str, trial_number: int) -> None:
    """Set the trial number of ``config_name``'s unnumbered screening measurement in ``study``
    (its trial in the persistent Optuna study, made after the measurement was stored; final
    re-measurements are no trials)."""
    session.execute(
        update(Measurement)
        .where(
            Measurement.study == study,
            Measurement.phase == Phase.SCREENING.value,
            Measurement.config_name == config_name,
            Measurement.trial_number.is_(None),
            Measurement.trusted.is_(True),  # an upload naming the study is no trial of it
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


def get_or_create_device(session: Session, device: DeviceIn, trusted: bool) -> Device:
    """The stored device equal to ``device``, created if new; vouched for (``Device.trusted``)
    when a ``trusted`` writer stores something for it. Trust only ever grows: an untrusted
    write never takes it back."""
    row = find_device(session, device)
    if row is None:
        values = {"name": device.name, "arch": device.arch, "sm_count": device.sm_count}
        insert_ignoring_conflicts(session, Device, values)
        row = find_device(session, device)
    assert row is not None
    if trusted and not row.trusted:
        vouch_for_devices(session, [row.id])
        session.refresh(row, ["trusted"])
    return row


def vouch_for_devices(session: Session, device_ids: Iterable[int]) -> None:
    """Mark these devices trusted: a trusted writer stored something for them."""
    ids = sorted(set(device_ids))
    if ids:
        session.execute(
            update(Device)
            .where(Device.id.in_(ids), Device.trusted.is_(False))
            .values(trusted=True)
            .execution_options(synchronize_session=False)
        )


def get_or_create_shape(session: Session, shape: ShapeIn) -> Shape:
    row = find_shape(session, shape)
    if row is None:
        insert_ignoring_conflicts(session, Shape, shape_values(shape))
        row = find_shape(session, shape)
    assert row is not None
    return row


class Offer(NamedTuple):
    """A stored ``ok`` measurement offered as the best config of its device, shape and
    accuracy class (the measurement's own)."""

    device_id: int
    shape_id: int
    measurement_id: int
    measurement: MeasurementIn

    @property
    def key(self) -> tuple[int, int, str]:
        """The best_config row it competes for: (device id, shape id, accuracy class)."""
        return self.device_id, self.shape_id, self.measurement.accuracy


def offer_best(session: Session, offer: Offer) -> None:
    """Make the offered measurement the best of its device, shape and accuracy class if none
    of that class is faster (strictly), by the rule :func:`record_measurement` states."""
    device_id, shape_id, accuracy = offer.key
    values = {
        "device_id": device_id,
        "shape_id": shape_id,
        "accuracy": accuracy,
        "measurement_id": offer.measurement_id,
        "updated_at": utcnow(),
    }
    insert_ignoring_conflicts(session, BestConfig, values)
    # Lock the row; on PostgreSQL a concurrent writer waits here until we commit, and we read
    # the committed version of any row it wrote (READ COMMITTED re-reads after the lock).
    best = session.scalars(
        select(BestConfig)
        .where(
            BestConfig.device_id == device_id,
            BestConfig.shape_id == shape_id,
            BestConfig.accuracy == accuracy,
        )
        .with_for_update(of=BestConfig)
        .options(lazyload("*"))
        .execution_options(populate_existing=True)
    ).one()
    if best.measurement_id == offer.measurement_id:
        return  # the insert above created it
    # A fresh statement, hence a fresh snapshot that sees the current best's committed row.
    current = session.execute(
        select(Measurement.ms, Measurement.phase).where(Measurement.id == best.measurement_id)
    ).one()
    best_ms, best_final = current[0], current[1] == Phase.FINAL
    new_final = offer.measurement.phase == Phase.FINAL
    ms = offer.measurement.ms
    faster = best_ms is None or (ms is not None and ms < best_ms)
    if (new_final and (not best_final or faster)) or (not best_final and faster):
        best.measurement_id = offer.measurement_id
        best.updated_at = utcnow()
        session.flush()
