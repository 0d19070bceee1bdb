"""One study as the dashboard reads it: its trials as plain values, in trial order.

The stored rows are read once per page (:func:`load_study`); every chart and the trial table
work on these values, so none of them touches the database or an ORM object again.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

import storage

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

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.tflops is not None


@dataclass(frozen=True)
class Study:
    name: str
    device: str
    shape: tuple[int, int, int]
    trials: Sequence[StudyTrial]
    cublas_tflops: float | None  # the median of what cuBLAS ran beside the ok trials

    @property
    def ok(self) -> list[StudyTrial]:
        return [t for t in self.trials if t.ok]

    @property
    def best(self) -> StudyTrial | None:
        return max(self.ok, key=lambda t: t.tflops or 0.0, default=None)

    @property
    def best_against_cublas(self) -> float | None:
        """Best TFLOP/s over cuBLAS's (> 1: faster than cuBLAS)."""
        best = self.best
        if best is None or best.tflops is None or not self.cublas_tflops:
            return None
        return best.tflops / self.cublas_tflops

    @property
    def last_at(self) -> datetime | None:
        return max((t.created_at for t in self.trials), default=None)

    def running(self, now: datetime | None = None) -> bool:
        last = self.last_at
        return last is not None and (now or datetime.now(UTC)) - last < RUNNING_WINDOW

    @property
    def families(self) -> list[str]:
        return sorted({t.family for t in self.trials})


def load_study(session: Session, name: str) -> Study | None:
    """The study named ``name``, or None when no measurement belongs to it."""
    rows = storage.study_table(session, name)
    if not rows:
        return None
    m, n, k = rows[0].m, rows[0].n, rows[0].k
    trials, best, cublas = [], None, []
    for index, row in enumerate(rows):
        tflops = row.tflops if row.tflops is not None else storage.tflops(m, n, k, row.ms)
        if row.status == "ok" and tflops is not None:
            best = tflops if best is None else max(best, tflops)
            theirs = row.cublas_tflops or storage.tflops(m, n, k, row.cublas_ms)
            if theirs is not None:
                cublas.append(theirs)
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
            )
        )
    return Study(
        name=name,
        device=rows[0].device,
        shape=(m, n, k),
        trials=trials,
        cublas_tflops=statistics.median(cublas) if cublas else None,
    )
