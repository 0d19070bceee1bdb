"""A study's reads for the dashboard: every study with its counts, one study's rows as plain
values, and how far a study has come (the one small query each page view makes).

A study is the measurements that share a ``study`` name; they are found through the index on
(study, id) (schema revision 0007), never by reading every measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from storage.models import Device, Measurement, Shape


@dataclass(frozen=True)
class StudySummary:
    """One study: its trials, how many measured ``ok``, and the fastest ok time."""

    name: str
    trials: int
    ok: int
    best_ms: float | None


def study_summaries(session: Session) -> list[StudySummary]:
    """Every study (measurements with a study name), by name."""
    is_ok = Measurement.status == "ok"
    query = (
        select(
            Measurement.study,
            func.count(),
            func.count().filter(is_ok),
            func.min(Measurement.ms).filter(is_ok),
        )
        .where(Measurement.study.is_not(None))
        .group_by(Measurement.study)
        .order_by(Measurement.study)
    )
    return [
        StudySummary(str(name), int(count), int(ok or 0), best)
        for name, count, ok, best in session.execute(query)
    ]


# What a study page reads of each measurement (api/study_data.py): no id, provenance, error,
# study name or foreign keys; the study's shape and device come with each row.
STUDY_TABLE_COLUMNS = (
    "trial_number",
    "config_name",
    "family",
    "status",
    "reason",
    "params",
    "ms",
    "tflops",
    "cublas_ms",
    "cublas_tflops",
    "ratio",
    "registers",
    "smem_bytes",
    "occupancy",
    "created_at",
)


def study_table(session: Session, study_name: str, after_id: int | None = None) -> Sequence[Any]:
    """A study's measurements as plain rows in trial order, for pages that read thousands:
    :data:`STUDY_TABLE_COLUMNS` by name plus ``m``, ``n``, ``k`` and ``device`` (SQL rows, no
    ORM objects, read on the session's connection: the ORM's result handling was a third of
    the read). With ``after_id``, only those stored after that measurement (ids grow)."""
    columns = [Measurement.__table__.c[name] for name in STUDY_TABLE_COLUMNS]
    query = (
        select(*columns, Shape.m, Shape.n, Shape.k, Device.name.label("device"))
        .join(Shape, Measurement.shape_id == Shape.id)
        .join(Device, Measurement.device_id == Device.id)
        .where(Measurement.study == study_name)
        .order_by(Measurement.trial_number, Measurement.id)
    )
    if after_id is not None:
        query = query.where(Measurement.id > after_id)
    return session.connection().execute(query).all()


@dataclass(frozen=True)
class StudyProgress:
    """How far a study has come: what a live page polls for (one small query). Two reads
    that compare equal saw the same study: rows are added (count, newest id) or numbered
    (a measurement gets its Optuna trial number after it is stored), never edited otherwise."""

    trials: int
    ok: int
    last_id: int | None
    last_at: datetime | None
    numbered: int = 0  # measurements that have their trial number


def progress_query(study_name: str) -> Select[int, int, int, datetime, int]:
    """The query of :func:`study_progress` (it reads ``study_name``'s rows through the index
    on a measurement's study, not every measurement)."""
    return select(
        func.count(),
        func.count().filter(Measurement.status == "ok"),
        func.max(Measurement.id),
        func.max(Measurement.created_at),
        func.count(Measurement.trial_number),
    ).where(Measurement.study == study_name)


def study_progress(session: Session, study_name: str) -> StudyProgress:
    """Trials, ok trials, newest measurement id and time, numbered trials of ``study_name``
    (zeros if none)."""
    query = progress_query(study_name)
    trials, ok, last_id, last_at, numbered = session.execute(query).one()
    return StudyProgress(int(trials), int(ok or 0), last_id, last_at, int(numbered or 0))
