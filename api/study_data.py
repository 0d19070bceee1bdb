"""One study as the dashboard reads it: its trials as plain values, in trial order.

The stored rows are read once per study state (:func:`load_study`, kept by
:mod:`api.study_cache`); every chart and the trial table work on these values, so none of them
touches the database or an ORM object again. The values are never changed once read.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from sqlalchemy.orm import Session

import storage
from api.study_names import study_title
from tuner.core.dims import tflops as gemm_tflops
from tuner.core.evaluators import EvaluatorKind
from tuner.core.phases import Phase
from tuner.core.shape import STORED_OUT_DTYPE

# A study whose last trial is younger than this is shown as running (and refreshed live).
RUNNING_WINDOW = timedelta(minutes=2)


@dataclass(frozen=True)
class StudyTrial:
    number: int
    config_name: str
    family: str
    status: str
    reason: str | None
    params: Mapping[str, int]
    ms: float | None
    tflops: float | None
    ratio: float | None
    registers: int | None
    smem_bytes: int | None
    occupancy: float | None
    created_at: datetime
    best_so_far: float | None  # the highest ok TFLOP/s up to this trial
    cublas_tflops: float | None = None  # what cuBLAS ran beside it (ok trials)
    evaluator: str = EvaluatorKind.GPU.value  # "replay": from a replay table, not measured

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.tflops is not None


@dataclass(frozen=True)
class Study:
    """One phase of a study (its screening trials, or its finalists' final re-measurements)."""

    name: str
    device: str
    shape: tuple[int, int, int]
    trials: Sequence[StudyTrial]
    cublas_tflops: float | None  # the median of what cuBLAS ran beside the ok trials
    phase: Phase = Phase.SCREENING
    dtype: str = "float32"
    layout: str = "NN"
    out_dtype: str = STORED_OUT_DTYPE

    @property
    def title(self) -> str:
        m, n, k = self.shape
        where = storage.StudyShape(m, n, k, self.dtype, self.layout, self.out_dtype)
        return study_title(self.name, self.phase, self.device, where, self.families, self.replayed)

    @cached_property
    def replayed(self) -> bool:
        """Whether any trial was replayed from a table rather than measured on the device."""
        return any(t.evaluator == EvaluatorKind.REPLAY for t in self.trials)

    @cached_property
    def ok(self) -> list[StudyTrial]:
        return [t for t in self.trials if t.ok]

    @cached_property
    def best(self) -> StudyTrial | None:
        return max(self.ok, key=lambda t: t.tflops or 0.0, default=None)

    @property
    def best_against_cublas(self) -> float | None:
        """Best TFLOP/s over cuBLAS's (> 1: faster than cuBLAS)."""
        best = self.best
        if best is None or best.tflops is None or not self.cublas_tflops:
            return None
        return best.tflops / self.cublas_tflops

    @cached_property
    def last_at(self) -> datetime | None:
        return max((t.created_at for t in self.trials), default=None)

    def running(self, now: datetime | None = None) -> bool:
        last = self.last_at
        return last is not None and (now or datetime.now(UTC)) - last < RUNNING_WINDOW

    @cached_property
    def families(self) -> list[str]:
        return sorted({t.family for t in self.trials})


def load_study(session: Session, name: str, phase: Phase = Phase.SCREENING) -> Study | None:
    """The study named ``name`` in ``phase``, or None when no measurement belongs to it."""
    rows = storage.study_table(session, name, phase=phase)
    if not rows:
        return None
    first = rows[0]
    shape = (first.m, first.n, first.k)
    trials = _trials(rows, shape, 0, None)
    return Study(
        name,
        first.device,
        shape,
        trials,
        _cublas(trials),
        phase,
        first.dtype,
        first.layout,
        first.out_dtype,
    )


def extend_study(session: Session, study: Study, after_id: int, added: int) -> Study | None:
    """``study`` with the ``added`` trials stored after measurement ``after_id`` appended: what
    a running study's page reads instead of the whole study. None when they are not simply
    appended (another count, or a trial number below the study's last): read it whole then.
    Every trial of ``study`` must have its stored trial number."""
    rows = storage.study_table(session, study.name, after_id=after_id, phase=study.phase)
    last = study.trials[-1] if study.trials else None
    if (
        len(rows) != added
        or last is None
        or any(row.trial_number is None or row.trial_number < last.number for row in rows)
    ):
        return None
    trials = [*study.trials, *_trials(rows, study.shape, len(study.trials), last.best_so_far)]
    return replace(study, trials=trials, cublas_tflops=_cublas(trials))


def _cublas(trials: Sequence[StudyTrial]) -> float | None:
    """The median of what cuBLAS ran beside the ok trials."""
    found = [t.cublas_tflops for t in trials if t.ok and t.cublas_tflops is not None]
    return statistics.median(found) if found else None


def _trials(
    rows: Sequence[Any], shape: tuple[int, int, int], first: int, best: float | None
) -> list[StudyTrial]:
    """The trials of ``rows`` (:func:`storage.study_table`'s) that follow ``first`` trials,
    the best of which ran at ``best`` TFLOP/s."""
    m, n, k = shape
    trials = []
    for index, row in enumerate(rows, start=first):
        tflops = row.tflops if row.tflops is not None else gemm_tflops(m, n, k, row.ms)
        theirs = None
        if row.status == "ok" and tflops is not None:
            best = tflops if best is None else max(best, tflops)
            theirs = row.cublas_tflops or gemm_tflops(m, n, k, row.cublas_ms)
        trials.append(
            StudyTrial(
                number=row.trial_number if row.trial_number is not None else index,
                config_name=row.config_name,
                family=row.family,
                status=row.status,
                reason=row.reason,
                params=dict(row.params),
                ms=row.ms,
                tflops=tflops,
                ratio=row.ratio,
                registers=row.registers,
                smem_bytes=row.smem_bytes,
                occupancy=row.occupancy,
                created_at=row.created_at,
                best_so_far=best,
                cublas_tflops=theirs,
                evaluator=row.evaluator,
            )
        )
    return trials
