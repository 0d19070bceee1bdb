"""gemmtune storage: SQLAlchemy models, schema migrations, and the read/write paths.

Standalone on purpose (no ``tuner`` or CuPy imports): the API and tools import it with plain
ints, strings and dicts in and typed rows out. The caller owns sessions and transactions.
"""

from __future__ import annotations

from storage.claims import claim_candidate
from storage.database import open_database, open_engine
from storage.engine import (
    DEFAULT_URL,
    URL_ENV_VAR,
    database_url,
    make_engine,
    make_session_factory,
)
from storage.errors import StorageError
from storage.inputs import STATUSES, DeviceIn, MeasurementIn, ShapeIn
from storage.models import Base, BestConfig, Claim, Device, Measurement, Shape
from storage.queries import (
    best_configs,
    best_for,
    find_device,
    find_shape,
    holds_measurements,
    list_devices,
    list_measurements,
    measurements_for_study,
    nearest_best,
    shape_distance,
)
from storage.records import record_measurement, record_measurements
from storage.schema import (
    UPGRADE_COMMAND,
    check_schema,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from storage.transfer import FORMAT_VERSION, export_json, import_json

__all__ = [
    "DEFAULT_URL",
    "FORMAT_VERSION",
    "STATUSES",
    "UPGRADE_COMMAND",
    "URL_ENV_VAR",
    "Base",
    "BestConfig",
    "Claim",
    "Device",
    "DeviceIn",
    "Measurement",
    "MeasurementIn",
    "Shape",
    "ShapeIn",
    "StorageError",
    "best_configs",
    "best_for",
    "check_schema",
    "claim_candidate",
    "current_revision",
    "database_url",
    "downgrade",
    "export_json",
    "find_device",
    "find_shape",
    "head_revision",
    "holds_measurements",
    "import_json",
    "list_devices",
    "list_measurements",
    "make_engine",
    "make_session_factory",
    "measurements_for_study",
    "nearest_best",
    "open_database",
    "open_engine",
    "record_measurement",
    "record_measurements",
    "shape_distance",
    "upgrade",
]
