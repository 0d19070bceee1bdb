"""Device rates: what the GPU probes measured on a device, recorded and read back.

Each probe run adds a row (:class:`storage.DeviceRates`); readers take the newest one per
device. The answers use them to decide which kinds of math run slowly on a device (FP64 tensor
cores against FFMA); the cost model can use them as the per-device probes DESIGN.md asks for.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, contains_eager

from storage.inputs import RATE_FIELDS, DeviceIn, RatesIn
from storage.models import Device, DeviceRates
from storage.records import get_or_create_device


def record_device_rates(session: Session, device: DeviceIn, rates: RatesIn) -> DeviceRates:
    """Store one probe run's ``rates`` for ``device`` (created if new), in the caller's
    transaction; earlier runs stay, the newest is what :func:`device_rates` reads."""
    row = DeviceRates(
        device=get_or_create_device(session, device, trusted=True),  # only probes write rates
        provenance=dict(rates.provenance),
        **{name: getattr(rates, name) for name in RATE_FIELDS},
    )
    if rates.measured_at is not None:
        row.measured_at = rates.measured_at
    session.add(row)
    session.flush()
    return row


def device_rates(session: Session, name: str) -> DeviceRates | None:
    """The newest rates measured on a device called ``name`` (any of its SM counts), if any."""
    query = (
        select(DeviceRates)
        .join(DeviceRates.device)
        .options(contains_eager(DeviceRates.device))
        .where(Device.name == name)
        .order_by(DeviceRates.measured_at.desc(), DeviceRates.id.desc())
        .limit(1)
    )
    return session.scalars(query).first()


def latest_device_rates(session: Session) -> list[DeviceRates]:
    """The newest rates of every device that has any, ordered by device name.

    Read whole and reduced in Python: one row per probe run, a handful per device.
    """
    query = (
        select(DeviceRates)
        .join(DeviceRates.device)
        .options(contains_eager(DeviceRates.device))
        .order_by(DeviceRates.measured_at, DeviceRates.id)
    )
    newest = {row.device_id: row for row in session.scalars(query)}
    return sorted(newest.values(), key=lambda row: (row.device.name, row.device.sm_count))
