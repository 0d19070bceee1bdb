"""When each worker did what in a tuning run, read back from its database: for every study, the
seconds from its queue entry's enqueue to each worker's first and last claim of a candidate, to
its first and last screening result, to the first and last finalist re-measured, and to the
entry's end. Used by ``fleet_scaling.py`` to show where a study shared by several workers waits
(a late join, a long finalist phase, slow candidates) without instrumenting the workers.

Every time comes from a row the run writes anyway: claims (``claimed_at``, with the worker's
name), measurements (``created_at``, with their phase), queue entries. A screening result is
put to the worker that claimed its config. The timeline also says how often the workers'
compiler processes had crashed (``compile_crashes`` in the measurements' provenance). With
``rows``, it lists every screened candidate: its worker, claim and result seconds, and what its
provenance says of its compile (``compile_s``, from submission to the end of the compile) and of
the waits for it (``compile_wait_s``) and for its measurement (``measure_s``).
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

import storage
from storage.models import QueueEntry


def _span(times: list[float]) -> dict[str, float]:
    return {"first_s": round(min(times), 3), "last_s": round(max(times), 3)}


def _gaps(times: list[float]) -> float | None:
    """The median seconds between consecutive times (None for fewer than two)."""
    ordered = sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    return round(statistics.median(gaps), 3) if gaps else None


ROW_KEYS = ("compile_s", "compile_wait_s", "measure_s")


def study_timelines(session: Session, rows: bool = False) -> dict[str, dict[str, Any]]:
    """Per study name (of a queue entry done): its timeline, seconds from the entry's enqueue;
    with ``rows``, each screened candidate's too (see the module), in the order of its claim."""
    entries = session.scalars(select(QueueEntry).where(QueueEntry.study.is_not(None))).all()
    timelines: dict[str, dict[str, Any]] = {}
    for entry in entries:
        assert entry.study is not None
        zero = entry.enqueued_at

        def since(moment: datetime, zero: datetime = zero) -> float:
            return (moment - zero).total_seconds()

        claims = session.execute(
            select(storage.Claim.config_name, storage.Claim.worker, storage.Claim.claimed_at)
            .where(storage.Claim.study == entry.study)
        ).all()  # fmt: skip
        worker_of = {name: worker.rsplit(":", 1)[-1] for name, worker, _ in claims}
        claimed_at = {name: since(at) for name, _, at in claims}
        claimed: dict[str, list[float]] = defaultdict(list)
        for _, worker, at in claims:
            claimed[worker.rsplit(":", 1)[-1]].append(since(at))
        measured = session.execute(
            select(
                storage.Measurement.config_name,
                storage.Measurement.phase,
                storage.Measurement.created_at,
                storage.Measurement.provenance,
            ).where(storage.Measurement.study == entry.study)
        ).all()
        screened: dict[str, list[float]] = defaultdict(list)
        finals: list[float] = []
        crashes = max((int((p or {}).get("compile_crashes", 0)) for *_, p in measured), default=0)
        candidates: list[dict[str, Any]] = []
        for name, phase, at, provenance in measured:
            if phase == "final":
                finals.append(since(at))
                continue
            screened[worker_of.get(name, "?")].append(since(at))
            if rows:
                claim = claimed_at.get(name)
                candidates.append(
                    {
                        "config": name,
                        "worker": worker_of.get(name, "?"),
                        "claim_s": None if claim is None else round(claim, 3),
                        "result_s": round(since(at), 3),
                        **{k: (provenance or {}).get(k) for k in ROW_KEYS},
                    }
                )
        candidates.sort(key=lambda row: (row["claim_s"] is None, row["claim_s"] or 0.0))
        workers = {
            worker: {
                "candidates": len(claimed[worker]),
                "claims": _span(claimed[worker]),
                **({"results": _span(screened[worker])} if screened[worker] else {}),
                "median_gap_s": _gaps(screened[worker]),
            }
            for worker in sorted(claimed)
        }
        timelines[entry.study] = {
            "started_s": None if entry.started_at is None else round(since(entry.started_at), 3),
            "workers": workers,
            **({"finals": {**_span(finals), "rows": len(finals)}} if finals else {}),
            "finished_s": None if entry.finished_at is None else round(since(entry.finished_at), 3),
            # How often a worker's compiler processes had crashed by its last result here (each
            # crash stalls that worker's compiles while the configs in flight compile again).
            "compile_crashes": crashes,
            **({"candidates": candidates} if rows else {}),
        }
    return timelines


def read_timelines(url: str, rows: bool = False) -> dict[str, dict[str, Any]]:
    """:func:`study_timelines` of the database at ``url``."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            return study_timelines(session, rows)
    finally:
        engine.dispose()
