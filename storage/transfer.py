"""Move tuning results between databases as plain JSON (e.g. a GPU box's SQLite to a shared
PostgreSQL).

Rows refer to devices and shapes by value, not by id, because ids differ between databases.
Best configs are not exported: importing replays every measurement through
:func:`storage.records.record_measurement`, which rebuilds them by the same rule. Importing is
idempotent: a measurement with the same device, shape, config name, creation time, study and
trial number as a stored one is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, ShapeIn
from storage.models import Device, Measurement, Shape
from storage.queries import find_device, find_shape
from storage.records import record_measurement
from storage.values import measurement_values

FORMAT_NAME = "gemmtune-export"
FORMAT_VERSION = 1

_T = TypeVar("_T")

# What an import needs in every measurement; the rest of MEASUREMENT_FIELDS may be left out.
_REQUIRED_FIELDS = ("device", "shape", "family", "config_name", "params", "status", "created_at")
_ENTRY_FIELDS = frozenset(("device", "shape", *MEASUREMENT_FIELDS))


def _device_dict(device: Device) -> dict[str, Any]:
    return {"name": device.name, "arch": device.arch, "sm_count": device.sm_count}


def _shape_dict(shape: Shape) -> dict[str, Any]:
    return {"m": shape.m, "n": shape.n, "k": shape.k, "dtype": shape.dtype, "layout": shape.layout}


def _measurement_dict(row: Measurement) -> dict[str, Any]:
    return {
        "device": _device_dict(row.device),
        "shape": _shape_dict(row.shape),
        **measurement_values(row),
    }


def export_json(session: Session) -> dict[str, Any]:
    """Everything recorded, as a JSON-serialisable dict (measurements in recording order)."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "devices": [_device_dict(d) for d in session.scalars(select(Device).order_by(Device.id))],
        "shapes": [_shape_dict(s) for s in session.scalars(select(Shape).order_by(Shape.id))],
        "measurements": [
            _measurement_dict(m)
            for m in session.scalars(select(Measurement).order_by(Measurement.id))
        ],
    }


Check = Callable[[DeviceIn, ShapeIn, MeasurementIn], None]


def import_json(session: Session, data: Any, check: Check | None = None) -> int:
    """Add the measurements in ``data`` that are not stored yet; return how many were added.

    Runs in the caller's transaction, so a malformed entry part-way leaves nothing behind once
    the caller rolls back. ``check`` judges each record before anything is written (storage
    knows types, not kernels: ``gemmtune import`` passes the tuner's rules); its
    ``ValueError`` refuses the import, prefixed with the record's place.

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
    for i, item in enumerate(_as_list(top.get("devices", []), "devices")):
        _find_or_record_device(session, _parse_device(item, f"devices[{i}]"))
    for i, item in enumerate(_as_list(top.get("shapes", []), "shapes")):
        _find_or_record_shape(session, _parse_shape(item, f"shapes[{i}]"))
    records = []
    for i, item in enumerate(_as_list(top.get("measurements", []), "measurements")):
        where = f"measurements[{i}]"
        record = _parse_measurement(item, where)
        if check is not None:
            _checked(where, check, record)
        records.append(record)
    added = 0
    for device, shape, measurement in records:
        if not _already_stored(session, device, shape, measurement):
            record_measurement(session, device, shape, measurement)
            added += 1
    return added


def _find_or_record_device(session: Session, device: DeviceIn) -> None:
    if find_device(session, device) is None:
        session.add(Device(name=device.name, arch=device.arch, sm_count=device.sm_count))
        session.flush()


def _find_or_record_shape(session: Session, shape: ShapeIn) -> None:
    if find_shape(session, shape) is None:
        session.add(Shape(m=shape.m, n=shape.n, k=shape.k, dtype=shape.dtype, layout=shape.layout))
        session.flush()


def _already_stored(
    session: Session, device: DeviceIn, shape: ShapeIn, measurement: MeasurementIn
) -> bool:
    device_row = find_device(session, device)
    shape_row = find_shape(session, shape)
    if device_row is None or shape_row is None:
        return False
    candidates = session.scalars(
        select(Measurement).where(
            Measurement.device_id == device_row.id,
            Measurement.shape_id == shape_row.id,
            Measurement.config_name == measurement.config_name,
        )
    )
    # Compared in Python: NULL study/trial must match NULL, and timestamps compare as values.
    return any(
        row.created_at == measurement.created_at
        and row.study == measurement.study
        and row.trial_number == measurement.trial_number
        for row in candidates
    )


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
            layout=item.get("layout", "row-major"),
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
    return device, shape, _build(where, lambda: MeasurementIn(**values))


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
        raise StorageError(f"{where}: {exc}") from exc
