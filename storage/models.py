"""Typed tables: every evaluated candidate, and the best one per device, shape and accuracy
class.

Failed candidates are rows too (with a status and reason): how many candidates a search space
wastes, and why, is data, and a replay evaluator needs the whole history, not just the winners.
``best_config`` is a small index over ``measurement`` so that "what should I run for this GEMM?"
is one lookup; shape already carries dtype and layout, and the accuracy class (strict FP32,
``exact``, or a label the tuner gives a less exact kernel family) keeps a faster but less exact
config from hiding the best strict one, so (device, shape, accuracy) is the whole key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from storage.inputs import DEVICE_NAME_LENGTH, FAMILY_LENGTH, LABEL_LENGTH, NAME_LENGTH
from tuner.core.accuracy import UNLABELLED
from tuner.core.evaluators import EvaluatorKind
from tuner.core.phases import Phase
from tuner.core.shape import STORED_OUT_DTYPE
from tuner.core.statuses import STATUSES

# Deterministic constraint names, so Alembic revisions can refer to them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

STATUS_CHECK_SQL = "status IN (" + ", ".join(f"'{status}'" for status in STATUSES) + ")"


def utcnow() -> datetime:
    """Aware UTC now, with microseconds (SQLite server defaults keep whole seconds only)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps that always come back timezone-aware in UTC, on SQLite as on PostgreSQL.

    SQLite has no time zones; without this, the same row would read back naive there and aware
    on PostgreSQL, and exported timestamps would not compare equal across backends.
    """

    impl = DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:  # naive means UTC throughout gemmtune
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base; its metadata is what Alembic's autogenerate compares against."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Device(Base):
    """A GPU model as seen by the tuner; a MIG slice is a different device (fewer SMs).

    Name, architecture and SM count together identify it. ``trusted`` says whether a trusted
    writer (the tuner, an upload with the trusted token, an import of trusted rows, the GPU
    probes) has stored anything for it: a device that only untrusted uploads named is kept for
    their rows but never used to resolve a device an answer is asked for.
    """

    __tablename__ = "device"
    __table_args__ = (UniqueConstraint("name", "arch", "sm_count"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(DEVICE_NAME_LENGTH))
    arch: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    sm_count: Mapped[int] = mapped_column(Integer)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Shape(Base):
    """A GEMM problem size with the dtype, layout and type of C that change which kernel wins.
    Rows from before C had a type (revision 0012) wrote float32 C."""

    __tablename__ = "shape"
    __table_args__ = (UniqueConstraint("m", "n", "k", "dtype", "layout", "out_dtype"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    m: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    k: Mapped[int] = mapped_column(Integer)
    dtype: Mapped[str] = mapped_column(
        String(LABEL_LENGTH), default="float32", server_default="float32"
    )
    layout: Mapped[str] = mapped_column(String(LABEL_LENGTH), default="NN", server_default="NN")
    out_dtype: Mapped[str] = mapped_column(
        String(LABEL_LENGTH), default=STORED_OUT_DTYPE, server_default=STORED_OUT_DTYPE
    )


class Measurement(Base):
    """One evaluated candidate; numbers are nullable because failures stop before timing."""

    __tablename__ = "measurement"
    __table_args__ = (
        CheckConstraint(STATUS_CHECK_SQL, name="status"),
        Index(None, "device_id", "shape_id", "status"),
        # Keyset paging (newest first by id) under each filter of GET /v1/results.
        Index(None, "family", "id"),
        Index(None, "status", "id"),
        Index(None, "device_id", "id"),
        Index(None, "shape_id", "id"),
        # A study's rows: its progress (polled on every page view) and the rows stored after
        # an id (a running study's page), without reading the rest of the table.
        Index(None, "study", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("device.id"))
    shape_id: Mapped[int] = mapped_column(ForeignKey("shape.id"))
    family: Mapped[str] = mapped_column(String(FAMILY_LENGTH))
    config_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    params: Mapped[dict[str, int]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(Text)
    ms: Mapped[float | None] = mapped_column(Float)
    tflops: Mapped[float | None] = mapped_column(Float)
    cublas_ms: Mapped[float | None] = mapped_column(Float)
    cublas_tflops: Mapped[float | None] = mapped_column(Float)
    ratio: Mapped[float | None] = mapped_column(Float)  # cuBLAS ms / our ms; > 1 beats cuBLAS
    rel_error: Mapped[float | None] = mapped_column(Float)
    registers: Mapped[int | None] = mapped_column(Integer)
    smem_bytes: Mapped[int | None] = mapped_column(Integer)
    occupancy: Mapped[float | None] = mapped_column(Float)
    study: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    trial_number: Mapped[int | None] = mapped_column(Integer)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The accuracy class (``exact`` unless the tuner names another).
    accuracy: Mapped[str] = mapped_column(
        String(LABEL_LENGTH), default=UNLABELLED, server_default=UNLABELLED
    )
    # When in its study it was measured (tuner.core.phases): a final re-measurement outranks
    # screening times when the best config is chosen.
    phase: Mapped[str] = mapped_column(
        String(LABEL_LENGTH), default=Phase.SCREENING.value, server_default=Phase.SCREENING.value
    )
    # False for a result its writer could not vouch for (an upload without the trusted token):
    # listed like any other, never the best config.
    trusted: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.now()
    )
    # What produced it (tuner.core.evaluators): a replayed time is listed, never the best config.
    evaluator: Mapped[str] = mapped_column(
        String(LABEL_LENGTH),
        default=EvaluatorKind.GPU.value,
        server_default=EvaluatorKind.GPU.value,
    )

    # Many-to-one and tiny: load eagerly so rows stay usable after the session closes.
    device: Mapped[Device] = relationship(lazy="joined", innerjoin=True)
    shape: Mapped[Shape] = relationship(lazy="joined", innerjoin=True)


class BestConfig(Base):
    """The fastest ``ok`` measurement per (device, shape, accuracy class); only a faster one
    of the same class replaces it. ``accuracy`` is its measurement's class, copied here so the
    class is part of the unique key."""

    __tablename__ = "best_config"
    # updated_at: its maximum is part of the answer index's fingerprint, asked every few s.
    __table_args__ = (
        UniqueConstraint("device_id", "shape_id", "accuracy"),
        Index(None, "updated_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("device.id"))
    shape_id: Mapped[int] = mapped_column(ForeignKey("shape.id"))
    accuracy: Mapped[str] = mapped_column(
        String(LABEL_LENGTH), default=UNLABELLED, server_default=UNLABELLED
    )
    measurement_id: Mapped[int] = mapped_column(ForeignKey("measurement.id"))
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, server_default=func.now()
    )

    device: Mapped[Device] = relationship(lazy="joined", innerjoin=True)
    shape: Mapped[Shape] = relationship(lazy="joined", innerjoin=True)
    measurement: Mapped[Measurement] = relationship(lazy="joined", innerjoin=True)


class Claim(Base):
    """A candidate a tuning worker has taken in a study: workers sharing a study skip each
    other's candidates, so none is measured twice."""

    __tablename__ = "claim"
    __table_args__ = (UniqueConstraint("study", "config_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study: Mapped[str] = mapped_column(String(NAME_LENGTH))
    config_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    worker: Mapped[str] = mapped_column(String(NAME_LENGTH))
    claimed_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.now()
    )
    # The end of the lease (storage.claims); NULL once the candidate is measured.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class DeviceRates(Base):
    """Rates the GPU probes measured on a device (FFMA, FP64 tensor cores, DRAM, launch).

    A history, not one row per device: each probe run adds a row, and readers take the newest
    (:func:`storage.device_rates`), so a re-run never overwrites what an earlier one measured.
    """

    __tablename__ = "device_rates"
    __table_args__ = (Index(None, "device_id", "measured_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("device.id"))
    ffma_tflops: Mapped[float | None] = mapped_column(Float)
    fp64_tensor_tflops: Mapped[float | None] = mapped_column(Float)
    dram_tb_s: Mapped[float | None] = mapped_column(Float)
    launch_us: Mapped[float | None] = mapped_column(Float)
    measured_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.now()
    )
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON)

    device: Mapped[Device] = relationship(lazy="joined", innerjoin=True)


class QueueEntry(Base):
    """A problem waiting to be tuned, being tuned, or tuned (``storage.tune_queue``).

    ``problem`` is the whole key as one string (dims, types, layout, accuracy, device, families),
    unique, so the same problem is queued once. A worker takes an entry under a lease it renews
    while it works; the lease of a killed worker lapses and another worker takes the entry again.
    ``attempt`` counts the takes, and a worker acts on an entry only while the entry is still at
    the attempt it took (a worker that lost its lease cannot finish another's attempt).
    """

    __tablename__ = "queue_entry"
    __table_args__ = (
        UniqueConstraint("problem"),
        Index(None, "state", "id"),
        Index(None, "batch"),
        CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name="state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem: Mapped[str] = mapped_column(String(NAME_LENGTH))
    m: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    k: Mapped[int] = mapped_column(Integer)
    dtype: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    layout: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    out_dtype: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    accuracy: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    device: Mapped[str] = mapped_column(String(DEVICE_NAME_LENGTH))  # "": any worker's GPU
    families: Mapped[str] = mapped_column(String(NAME_LENGTH))  # "+"-joined; "": the defaults
    trials: Mapped[int | None] = mapped_column(Integer)  # None: the worker's own budget
    batch: Mapped[str | None] = mapped_column(String(NAME_LENGTH))  # the command waiting on it
    source: Mapped[str] = mapped_column(String(LABEL_LENGTH))  # who asked: cli, api
    state: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    worker: Mapped[str | None] = mapped_column(String(NAME_LENGTH))  # who took it last
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # the lease, running
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    searching: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    joinable: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    error: Mapped[str | None] = mapped_column(Text)  # why the last attempt failed
    study: Mapped[str | None] = mapped_column(String(NAME_LENGTH))  # once done
    evaluated: Mapped[int | None] = mapped_column(Integer)  # candidates of the study, once done
    enqueued_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.now()
    )
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
