"""gemmtune storage: SQLAlchemy models, schema migrations, and the read/write paths.

Standalone on purpose: it imports nothing of ``tuner`` but the shared vocabulary of ``tuner.core``
(statuses, phases, accuracy labels, layouts, claims), and no CuPy; the API and tools import it
with plain ints, strings and dicts in and typed rows out. The caller owns sessions and
transactions.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.bulk import record_measurements
    from storage.claims import (
        CLAIM_LEASE_S,
        claim_candidate,
        live_claims,
        open_claims,
        release_claim,
        renew_claims,
        settle_claim,
    )
    from storage.database import open_database, open_engine, open_existing_database
    from storage.device_claims import claim_problem, known_devices, lock_device_names
    from storage.engine import (
        DEFAULT_URL,
        URL_ENV_VAR,
        PoolLimits,
        database_url,
        make_engine,
        make_session_factory,
        with_connection_settings,
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
        stream_measurements,
        trusted_devices_named,
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
    from storage.study_lock import study_lock
    from storage.transfer import FORMAT_VERSION, export_json, import_json
    from storage.values import measurement_values, shape_values

# Each public name and the module that defines it: a name is imported on first use
# (``__getattr__`` below), so ``import storage`` or ``from storage.errors import StorageError``
# costs nothing, and a command that never touches the database never imports SQLAlchemy or
# Alembic (the CLI's start-up, ``tuner.cli``).
_HOMES = {
    "record_measurements": "storage.bulk",
    "CLAIM_LEASE_S": "storage.claims",
    "claim_candidate": "storage.claims",
    "live_claims": "storage.claims",
    "open_claims": "storage.claims",
    "release_claim": "storage.claims",
    "renew_claims": "storage.claims",
    "settle_claim": "storage.claims",
    "open_database": "storage.database",
    "claim_problem": "storage.device_claims",
    "known_devices": "storage.device_claims",
    "lock_device_names": "storage.device_claims",
    "trusted_devices_named": "storage.queries",
    "open_engine": "storage.database",
    "open_existing_database": "storage.database",
    "DEFAULT_URL": "storage.engine",
    "URL_ENV_VAR": "storage.engine",
    "PoolLimits": "storage.engine",
    "database_url": "storage.engine",
    "make_engine": "storage.engine",
    "make_session_factory": "storage.engine",
    "with_connection_settings": "storage.engine",
    "StorageError": "storage.errors",
    "SqliteFile": "storage.file_identity",
    "MEASUREMENT_FIELDS": "storage.inputs",
    "DeviceIn": "storage.inputs",
    "MeasurementIn": "storage.inputs",
    "RatesIn": "storage.inputs",
    "ShapeIn": "storage.inputs",
    "from_legacy": "storage.legacy_records",
    "Base": "storage.models",
    "BestConfig": "storage.models",
    "Claim": "storage.models",
    "Device": "storage.models",
    "DeviceRates": "storage.models",
    "Measurement": "storage.models",
    "Shape": "storage.models",
    "BestConfigsMark": "storage.queries",
    "best_configs": "storage.queries",
    "best_configs_fingerprint": "storage.queries",
    "best_configs_of": "storage.queries",
    "best_configs_updated_since": "storage.queries",
    "best_for": "storage.queries",
    "count_measurements": "storage.queries",
    "devices_after": "storage.queries",
    "fastest_ok_times": "storage.queries",
    "find_device": "storage.queries",
    "find_shape": "storage.queries",
    "holds_measurements": "storage.queries",
    "list_devices": "storage.queries",
    "list_measurements": "storage.queries",
    "stream_measurements": "storage.queries",
    "measurements_for_study": "storage.queries",
    "ping": "storage.queries",
    "fastest_replayed": "storage.queries",
    "replayed_fastest_per_shape": "storage.queries",
    "device_rates": "storage.rates",
    "latest_device_rates": "storage.rates",
    "record_device_rates": "storage.rates",
    "number_measurement": "storage.records",
    "record_measurement": "storage.records",
    "UPGRADE_COMMAND": "storage.schema",
    "check_schema": "storage.schema",
    "current_revision": "storage.schema",
    "downgrade": "storage.schema",
    "head_revision": "storage.schema",
    "upgrade": "storage.schema",
    "StudyProgress": "storage.studies",
    "StudyShape": "storage.studies",
    "StudySummary": "storage.studies",
    "progress_query": "storage.studies",
    "study_progress": "storage.studies",
    "study_summaries": "storage.studies",
    "study_table": "storage.studies",
    "study_lock": "storage.study_lock",
    "FORMAT_VERSION": "storage.transfer",
    "export_json": "storage.transfer",
    "import_json": "storage.transfer",
    "measurement_values": "storage.values",
    "shape_values": "storage.values",
}

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
    "PoolLimits",
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
    "claim_problem",
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
    "known_devices",
    "latest_device_rates",
    "list_devices",
    "list_measurements",
    "live_claims",
    "lock_device_names",
    "make_engine",
    "make_session_factory",
    "measurement_values",
    "measurements_for_study",
    "number_measurement",
    "open_claims",
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
    "shape_values",
    "stream_measurements",
    "study_lock",
    "study_progress",
    "study_summaries",
    "study_table",
    "trusted_devices_named",
    "upgrade",
    "with_connection_settings",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        # A submodule named as an attribute (``storage.queries.X`` in an annotation that is
        # evaluated later), as an eagerly imported package would have it bound.
        if importlib.util.find_spec(f"storage.{name}") is None:
            raise AttributeError(f"module 'storage' has no attribute {name!r}")
        return importlib.import_module(f"storage.{name}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
