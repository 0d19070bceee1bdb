"""What an upload or import says of a device must agree with what the database knows of it.

A device is identified by its name, architecture and SM count together. Once a trusted writer
has stored a GPU under a name (``Device.trusted``), a record that names it with another
architecture or SM count is refused, whoever sends it: with the trusted token it would add a
second device of that name, which makes the name ambiguous for every answer asked by name
(an "H100" with 100 000 SMs passes every plausibility check); without it, it would be stored
under a name it has no right to. The message says what is known, so an honest sender sees
what to send.

Only trusted devices count as known: an untrusted upload cannot reserve a name, and a name
nobody trusted has stored yet may be claimed by anyone (an untrusted claim stays untrusted).

The check and the write that follows it must be one step, or two trusted uploads of a new name
with different claims both find it unknown and both store their device.
:func:`lock_device_names` makes them one: called first in the write transaction, it holds
every other writer that claims one of those names until the transaction ends. A unique key on
trusted names would do it too, but the tuner itself may store a MIG slice under the full GPU's
name, which the claim check (for uploads and imports) leaves alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from storage.inputs import DeviceIn
from storage.queries import trusted_devices_named

KnownDevices = Mapping[str, Collection[DeviceIn]]

# The first key of the per-name advisory locks ("gtdv"), apart from the study and claim locks.
DEVICE_NAME_LOCK_CLASS = 0x67746476


def lock_device_names(session: Session, names: Iterable[str]) -> None:
    """Hold, until ``session``'s transaction ends, every other writer that claims one of
    ``names``; call it before :func:`known_devices` in the transaction that writes.

    PostgreSQL: a transaction advisory lock per name (in sorted order, so two writers never
    wait on each other); a read after it sees what the writer before committed. SQLite: the
    database's one write lock, taken by a write that changes nothing (SQLite's busy timeout
    waits for it); every read after it sees the latest commit.
    """
    if session.get_bind().dialect.name == "postgresql":
        for name in sorted(set(names)):
            session.execute(
                select(func.pg_advisory_xact_lock(DEVICE_NAME_LOCK_CLASS, func.hashtext(name)))
            )
    else:
        session.execute(text("UPDATE device SET trusted = trusted WHERE 0 = 1"))


def known_devices(session: Session, names: Iterable[str]) -> dict[str, set[DeviceIn]]:
    """The trusted devices stored under each of ``names`` (names none is stored under are
    left out)."""
    known: dict[str, set[DeviceIn]] = {}
    for row in trusted_devices_named(session, set(names)):
        known.setdefault(row.name, set()).add(DeviceIn(row.name, row.arch, row.sm_count))
    return known


def claim_problem(device: DeviceIn, known: KnownDevices) -> str | None:
    """Why ``device`` contradicts what is ``known`` of its name, or None (its name unknown, or
    known with this very architecture and SM count)."""
    stored = known.get(device.name)
    if not stored or device in stored:
        return None
    described = " or ".join(
        f"{d.arch} with {d.sm_count} SMs"
        for d in sorted(stored, key=lambda d: (d.arch, d.sm_count))
    )
    return (
        f"{device.name!r} is known as {described}, not {device.arch} with {device.sm_count} SMs: "
        "send the device as it is stored, or under a name of its own"
    )
