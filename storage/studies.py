"""A study's reads for the dashboard: every study with its counts, one study's rows as plain
values, and how far a study has come (the one small query each page view makes).

A study is the measurements that share a ``study`` name, in two phases: its screening trials and
its finalists' final re-measurements (:mod:`tuner.core.phases`), which every read here keeps
apart. They are found through the index on (study, id) (schema revision 0007), never by reading
every measurement. Only trusted rows belong to a study: an upload without the trusted token
may name any study (names are predictable), and is listed by ``GET /v1/results`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from storage.models import Device, Measurement, Shape
from tuner.core.evaluators import EvaluatorKind
from tuner.core.phases import Phase
from tuner.core.shape import STORED_OUT_DTYPE


@dataclass(frozen=True)
class StudyShape:
    """The problem a study's rows were measured on."""

    m: int
    n: int
    k: int
    dtype: str
    layout: str
    out_dtype: str = STORED_OUT_DTYPE


@dataclass(frozen=True)
class StudySummary:
    """One phase of one study: its trials, how many measured ``ok``, the fastest ok time, and
    what it measured: the device and shape (None when its rows name several) and the families,
    in the order the study first measured each; ``replayed`` when any of its rows was replayed
    from a table rather than measured."""

    name: str
    phase: Phase
    trials: int
    ok: int
    best_ms: float | None
    device: str | None = None
    shape: StudyShape | None = None
    families: tuple[str, ...] = ()
    replayed: bool = False  # its rows were replayed from tables (tuner.core.evaluators)


def study_summaries(session: Session) -> list[StudySummary]:
    """Every study (measurements with a study name), by name, its screening before its final
    re-measurements."""
    is_ok = Measurement.status == "ok"
    key = (Measurement.study, Measurement.phase)
    query = (
        select(
            *key,
            func.count(),
            func.count().filter(is_ok),
            func.min(Measurement.ms).filter(is_ok),
            func.min(Measurement.device_id),
            func.max(Measurement.device_id),
            func.min(Measurement.shape_id),
            func.max(Measurement.shape_id),
            func.count().filter(Measurement.evaluator == EvaluatorKind.REPLAY.value),
        )
        .where(Measurement.study.is_not(None), Measurement.trusted.is_(True))
        .group_by(*key)
    )
    rows = session.execute(query).all()
    devices = {d.id: d.name for d in session.scalars(select(Device))}
    shapes = {
        s.id: StudyShape(s.m, s.n, s.k, s.dtype, s.layout, s.out_dtype)
        for s in session.scalars(select(Shape))
    }
    families = _families(session)
    summaries = [
        StudySummary(
            str(name),
            Phase(phase),
            int(count),
            int(ok or 0),
            best,
            devices.get(first_device) if first_device == last_device else None,
            shapes.get(first_shape) if first_shape == last_shape else None,
            families.get((name, phase), ()),
            bool(replayed),
        )
        for (
            name,
            phase,
            count,
            ok,
            best,
            first_device,
            last_device,
            first_shape,
            last_shape,
            replayed,
        ) in rows
    ]
    return sorted(summaries, key=lambda s: (s.name, list(Phase).index(s.phase)))


def _families(session: Session) -> dict[tuple[str | None, str], tuple[str, ...]]:
    """(study, phase) -> the families of its rows, in the order first measured."""
    first = func.min(Measurement.id)
    rows = session.execute(
        select(Measurement.study, Measurement.phase, Measurement.family)
        .where(Measurement.study.is_not(None), Measurement.trusted.is_(True))
        .group_by(Measurement.study, Measurement.phase, Measurement.family)
        .order_by(first)
    )
    found: dict[tuple[str | None, str], tuple[str, ...]] = {}  # None: never, by the filter
    for name, phase, family in rows:
        found[(name, phase)] = (*found.get((name, phase), ()), family)
    return found


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
    "evaluator",
)


def study_table(
    session: Session,
    study_name: str,
    after_id: int | None = None,
    phase: Phase = Phase.SCREENING,
) -> Sequence[Any]:
    """A study's measurements of one phase as plain rows in trial order, for pages that read
    thousands: :data:`STUDY_TABLE_COLUMNS` by name plus ``m``, ``n``, ``k``, ``dtype``,
    ``layout``, ``out_dtype`` and ``device`` (SQL rows, no ORM objects, read on the session's
    connection: the ORM's result handling was a third of the read). With ``after_id``, only
    those stored after that measurement (ids grow)."""
    columns = [Measurement.__table__.c[name] for name in STUDY_TABLE_COLUMNS]
    shape_columns = (Shape.m, Shape.n, Shape.k, Shape.dtype, Shape.layout, Shape.out_dtype)
    query = (
        select(*columns, *shape_columns, Device.name.label("device"))
        .join(Shape, Measurement.shape_id == Shape.id)
        .join(Device, Measurement.device_id == Device.id)
        .where(
            Measurement.study == study_name,
            Measurement.phase == phase.value,
            Measurement.trusted.is_(True),
        )
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


def progress_query(
    study_name: str, phase: Phase = Phase.SCREENING
) -> Select[int, int, int, datetime, int]:
    """The query of :func:`study_progress` (it reads ``study_name``'s rows through the index
    on a measurement's study, not every measurement)."""
    return select(
        func.count(),
        func.count().filter(Measurement.status == "ok"),
        func.max(Measurement.id),
        func.max(Measurement.created_at),
        func.count(Measurement.trial_number),
    ).where(
        Measurement.study == study_name,
        Measurement.phase == phase.value,
        Measurement.trusted.is_(True),
    )


def study_progress(
    session: Session, study_name: str, phase: Phase = Phase.SCREENING
) -> StudyProgress:
    """Trials, ok trials, newest measurement id and time, numbered trials of ``study_name`` in
    ``phase`` (zeros if none)."""
    query = progress_query(study_name, phase)
    trials, ok, last_id, last_at, numbered = session.execute(query).one()
    return StudyProgress(int(trials), int(ok or 0), last_id, last_at, int(numbered or 0))
