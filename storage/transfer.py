"""Move tuning results between databases as plain JSON (e.g. a GPU box's SQLite to a shared
PostgreSQL).

Rows refer to devices and shapes by value, not by id, because ids differ between databases.
Best configs are not exported: importing stages the new measurements and merges them
(:mod:`storage.staging`), rebuilding the best configs by the same rule as live tuning. Every
entry is checked (against the column limits too, so a file imports the same on SQLite and
PostgreSQL) before anything is written, and a record's device must agree with what the
database knows of that name (:mod:`storage.device_claims`). Importing is idempotent: a
measurement with the same device, shape, config name, creation time, study and trial number as
a stored one (or as an earlier entry of the file) is skipped.

Fields added to a measurement record since version 1 are optional on import, with the value
older rows had: an export written before accuracy classes has no ``accuracy``, and its
measurements are strict FP32 (``exact``), as the migration that added the column made them. One
written before ``phase`` and ``trusted`` were fields said both in its study names and provenance;
they are read into the fields as schema revision 0009 read stored rows
(:mod:`storage.legacy_records`). One written before ``evaluator`` was a field marked a replayed
row only by the tables its provenance names; it is read as revision 0011 read stored rows.
(:mod:`storage.legacy_records`). A shape written before C had a type has no ``out_dtype``: it
was measured writing float32 C, as the migration that added the column made stored rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from storage.bulk import Progress, Record, RowIds
from storage.device_claims import claim_problem, known_devices
from storage.errors import StorageError
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, ShapeIn
from storage.legacy_records import from_legacy
from storage.models import Device, Measurement, Shape
from storage.staging import write_staged
from storage.values import measurement_values, shape_values
from tuner.core.shape import STORED_OUT_DTYPE

FORMAT_NAME = "gemmtune-export"
FORMAT_VERSION = 1

_T = TypeVar("_T")

# What an import needs in every measurement; the rest of MEASUREMENT_FIELDS may be left out.
_REQUIRED_FIELDS = ("device", "shape", "family", "config_name", "params", "status", "created_at")
_ENTRY_FIELDS = frozenset(("device", "shape", *MEASUREMENT_FIELDS))


def _device_dict(device: Device) -> dict[str, Any]:
    return {"name": device.name, "arch": device.arch, "sm_count": device.sm_count}


def _measurement_dict(row: Measurement) -> dict[str, Any]:
    return {
        "device": _device_dict(row.device),
        "shape": shape_values(row.shape),
        **measurement_values(row),
    }


EXPORT_CHUNK = 1000  # measurements read per query of an export


def export_json(session: Session, progress: Progress | None = None) -> dict[str, Any]:
    """Everything recorded, as a JSON-serialisable dict (measurements in recording order).

    Measurements are read in chunks of :data:`EXPORT_CHUNK` by id; ``progress(read, total)``
    follows them, once per chunk (``total`` is the count when the export started).
    """
    total = session.scalar(select(func.count(Measurement.id))) or 0
    measurements: list[dict[str, Any]] = []
    last_id = 0
    while True:
        chunk = session.scalars(
            select(Measurement)
            .where(Measurement.id > last_id)
            .order_by(Measurement.id)
            .limit(EXPORT_CHUNK)
        ).all()
        if not chunk:
            break
        measurements.extend(_measurement_dict(m) for m in chunk)
        last_id = chunk[-1].id
        if progress is not None:
            progress(len(measurements), max(total, len(measurements)))
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "devices": [_device_dict(d) for d in session.scalars(select(Device).order_by(Device.id))],
        "shapes": [shape_values(s) for s in session.scalars(select(Shape).order_by(Shape.id))],
        "measurements": measurements,
    }


Check = Callable[[DeviceIn, ShapeIn, MeasurementIn], None]


def import_json(
    sessions: sessionmaker[Session],
    data: Any,
    progress: Progress | None = None,
    check: Check | None = None,
) -> int:
    """Add the measurements in ``data`` that are not stored yet; return how many were added.

    All or nothing, without holding SQLite's write lock for the whole import: every entry is
    checked before anything is written, the new rows are staged in temporary tables in short
    transactions and merged in one (:mod:`storage.staging`), so other writers carry on while
    a long import stages, and a failure at any point leaves nothing of the file. ``check``
    judges each record too (storage knows types, not kernels: ``gemmtune import`` passes the
    tuner's rules); its ``ValueError`` refuses the import, prefixed with the record's place.
    ``progress(staged, total)`` follows the write.

    Raises:
        StorageError: ``data`` is not a gemmtune export, or ``check`` refused a record; the
            message names the bad field.
    """
    top = _as_mapping(data, "export")
    if top.get("format") != FORMAT_NAME:
        raise StorageError(f"`format` must be {FORMAT_NAME!r}, got {top.get('format')!r}")
    if top.get("version") != FORMAT_VERSION:
        raise StorageError(
            f"`version` must be {FORMAT_VERSION} (the format this gemmtune reads), "
            f"got {top.get('version')!r}"
        )
    devices = [
        _parse_device(item, f"devices[{i}]")
        for i, item in enumerate(_as_list(top.get("devices", []), "devices"))
    ]
    shapes = [
        _parse_shape(item, f"shapes[{i}]")
        for i, item in enumerate(_as_list(top.get("shapes", []), "shapes"))
    ]
    entries = []
    for i, item in enumerate(_as_list(top.get("measurements", []), "measurements")):
        where = f"measurements[{i}]"
        record = _parse_measurement(item, where)
        if check is not None:
            _checked(where, check, record)
        entries.append(record)
    with sessions() as session:
        new = _not_stored(session, entries)
        _check_device_claims(session, entries, new)
    if not new:
        # Nothing to stage; the devices and shapes the file lists are stored all the same.
        if devices or shapes:
            with sessions.begin() as session:
                RowIds(session).add(devices, shapes)
        return 0
    return write_staged(sessions, new, progress, devices, shapes)


_Key = tuple[DeviceIn, ShapeIn, str, datetime | None, str | None, int | None]
_LOOKUP_CHUNK = 500  # shape ids per query for the stored keys


def _not_stored(session: Session, entries: list[Record]) -> list[Record]:
    """The entries neither stored nor repeated earlier in the file (read only: a device or
    shape not stored yet has no stored measurements)."""
    known = RowIds(session)
    known.add((d for d, _, _ in entries), (s for _, s, _ in entries), create=False)
    pairs: dict[tuple[int, int], tuple[DeviceIn, ShapeIn]] = {}
    for d, s, _ in entries:
        stored = known.known(d, s)
        if stored is not None:
            pairs[stored] = (d, s)
    seen = _stored_keys(session, pairs)
    new = []
    for record in entries:
        d, s, m = record
        key = (d, s, m.config_name, m.created_at, m.study, m.trial_number)
        if key not in seen:
            seen.add(key)
            new.append(record)  # the entry itself: _check_device_claims finds it by identity
    return new


def _stored_keys(
    session: Session, pairs: dict[tuple[int, int], tuple[DeviceIn, ShapeIn]]
) -> set[_Key]:
    """The keys of the stored measurements of these (device id, shape id) pairs."""
    shape_ids = sorted({shape_id for _, shape_id in pairs})
    keys: set[_Key] = set()
    for start in range(0, len(shape_ids), _LOOKUP_CHUNK):
        rows = session.execute(
            select(
                Measurement.device_id,
                Measurement.shape_id,
                Measurement.config_name,
                Measurement.created_at,
                Measurement.study,
                Measurement.trial_number,
            ).where(Measurement.shape_id.in_(shape_ids[start : start + _LOOKUP_CHUNK]))
        )
        for device_id, shape_id, *rest in rows:
            pair = pairs.get((device_id, shape_id))
            if pair is not None:
                keys.add((*pair, *rest))  # type: ignore[arg-type]
    return keys


def _as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StorageError(f"`{where}` must be a JSON object, got {type(value).__name__}")
    return value


def _as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise StorageError(f"`{where}` must be a JSON array, got {type(value).__name__}")
    return value


def _require(item: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in item:
        raise StorageError(f"`{where}.{name}` is missing")
    return item[name]


def _parse_device(value: Any, where: str) -> DeviceIn:
    item = _as_mapping(value, where)
    return _build(
        where,
        lambda: DeviceIn(
            name=_require(item, "name", where),
            arch=_require(item, "arch", where),
            sm_count=_require(item, "sm_count", where),
        ),
    )


def _parse_shape(value: Any, where: str) -> ShapeIn:
    item = _as_mapping(value, where)
    return _build(
        where,
        lambda: ShapeIn(
            m=_require(item, "m", where),
            n=_require(item, "n", where),
            k=_require(item, "k", where),
            dtype=item.get("dtype", "float32"),
            layout=item.get("layout", "NN"),
            # A file written before C had a type: every measurement in it wrote float32 C.
            out_dtype=item.get("out_dtype", STORED_OUT_DTYPE),
        ),
    )


def _parse_time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise StorageError(f"`{where}.created_at` must be an ISO 8601 string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise StorageError(f"`{where}.created_at` is not an ISO 8601 time: {value!r}") from exc
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _parse_measurement(value: Any, where: str) -> tuple[DeviceIn, ShapeIn, MeasurementIn]:
    item = _as_mapping(value, where)
    unknown = sorted(set(item) - _ENTRY_FIELDS)
    if unknown:
        raise StorageError(f"`{where}` has unknown field(s): {', '.join(unknown)}")
    for name in _REQUIRED_FIELDS:
        _require(item, name, where)
    device = _parse_device(item["device"], f"{where}.device")
    shape = _parse_shape(item["shape"], f"{where}.shape")
    values = {name: item[name] for name in MEASUREMENT_FIELDS if name in item}
    values["created_at"] = _parse_time(item["created_at"], where)
    return device, shape, _build(where, lambda: from_legacy(MeasurementIn(**values)))


def _check_device_claims(session: Session, entries: list[Record], new: list[Record]) -> None:
    """Refuse the file if a record it adds (one of ``new``) names a device other than the
    database knows under its name (:mod:`storage.device_claims`); the devices of the file's
    earlier trusted records count as known too, so a file cannot bring two GPUs of one name
    either. Records already stored are not judged again: re-importing stays a no-op."""
    adding = {id(record) for record in new}
    known = known_devices(session, {device.name for device, _, _ in new})
    for i, record in enumerate(entries):
        if id(record) not in adding:
            continue
        device, _, m = record
        problem = claim_problem(device, known)
        if problem is not None:
            raise StorageError(f"measurements[{i}].device: {problem}; nothing imported")
        if m.trusted and device.name not in known:
            known[device.name] = {device}


def _checked(where: str, check: Check, record: tuple[DeviceIn, ShapeIn, MeasurementIn]) -> None:
    try:
        check(*record)
    except ValueError as exc:
        raise StorageError(f"{where}: {exc}; nothing imported") from exc


def _build(where: str, make: Callable[[], _T]) -> _T:
    """Run a dataclass constructor, prefixing its ``ValueError`` with where the value sat."""
    try:
        return make()
    except ValueError as exc:
        raise StorageError(f"{where}: {exc}; nothing imported") from exc
