"""gemmtune storage: SQLAlchemy models, schema migrations, and the read/write paths.

Standalone on purpose: it imports nothing of ``tuner`` but the shared vocabulary of ``tuner.core``
(statuses, phases, accuracy labels, layouts, claims), and no CuPy; the API and tools import it
with plain ints, strings and dicts in and typed rows out. The caller owns sessions and
transactions.
"""

from __future__ import annotations

from storage.bulk import record_measurements
from storage.claims import (
    CLAIM_LEASE_S,
    claim_candidate,
    live_claims,
    release_claim,
    renew_claims,
    settle_claim,
)
from storage.database import open_database, open_engine, open_existing_database
from storage.engine import (
    DEFAULT_URL,
    URL_ENV_VAR,
    database_url,
    make_engine,
    make_session_factory,
)
from storage.errors import StorageError
from storage.file_identity import SqliteFile
from storage.inputs import MEASUREMENT_FIELDS, DeviceIn, MeasurementIn, RatesIn, ShapeIn
from storage.legacy_records import from_legacy
from storage.models import Base, BestConfig, Claim, Device, DeviceRates, Measurement, Shape
from storage.queries import (
    BestConfigsMark,
    best_configs,
    best_configs_fingerprint,
    best_configs_of,
    best_configs_updated_since,
    best_for,
    count_measurements,
    devices_after,
    fastest_ok_times,
    fastest_replayed,
    find_device,
    find_shape,
    holds_measurements,
    list_devices,
    list_measurements,
    measurements_for_study,
    ping,
    replayed_fastest_per_shape,
)
from storage.rates import device_rates, latest_device_rates, record_device_rates
from storage.records import number_measurement, record_measurement
from storage.schema import (
    UPGRADE_COMMAND,
    check_schema,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from storage.studies import (
    StudyProgress,
    StudyShape,
    StudySummary,
    progress_query,
    study_progress,
    study_summaries,
    study_table,
)
from storage.transfer import FORMAT_VERSION, export_json, import_json
from storage.values import measurement_values

__all__ = [
    "CLAIM_LEASE_S",
    "DEFAULT_URL",
    "FORMAT_VERSION",
    "MEASUREMENT_FIELDS",
    "UPGRADE_COMMAND",
    "URL_ENV_VAR",
    "Base",
    "BestConfig",
    "BestConfigsMark",
    "Claim",
    "Device",
    "DeviceIn",
    "DeviceRates",
    "Measurement",
    "MeasurementIn",
    "RatesIn",
    "Shape",
    "ShapeIn",
    "SqliteFile",
    "StorageError",
    "StudyProgress",
    "StudyShape",
    "StudySummary",
    "best_configs",
    "best_configs_fingerprint",
    "best_configs_of",
    "best_configs_updated_since",
    "best_for",
    "check_schema",
    "claim_candidate",
    "count_measurements",
    "current_revision",
    "database_url",
    "device_rates",
    "devices_after",
    "downgrade",
    "export_json",
    "fastest_ok_times",
    "fastest_replayed",
    "find_device",
    "find_shape",
    "from_legacy",
    "head_revision",
    "holds_measurements",
    "import_json",
    "latest_device_rates",
    "list_devices",
    "list_measurements",
    "live_claims",
    "make_engine",
    "make_session_factory",
    "measurement_values",
    "measurements_for_study",
    "number_measurement",
    "open_database",
    "open_engine",
    "open_existing_database",
    "ping",
    "progress_query",
    "record_device_rates",
    "record_measurement",
    "record_measurements",
    "release_claim",
    "renew_claims",
    "replayed_fastest_per_shape",
    "settle_claim",
    "study_progress",
    "study_summaries",
    "study_table",
    "upgrade",
]
