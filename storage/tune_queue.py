"""The tuning queue: problems to tune, taken by workers (one process per GPU, on any machine that
reaches the database) under leases, as candidates are claimed in a study (``storage.claims``).

An entry's life: ``queued`` → ``running`` (a worker took it: :func:`take_next`) → ``done`` or
``failed``. A running entry has a lease that its workers renew while they work
(:func:`renew_entries`); once the lease lapses (its workers were killed) another worker takes it
again, and the study resumes from what was stored. Workers with nothing queued join a running
study (:func:`join_running`): the study's claims keep its budget exact however many search it,
and the last worker to leave it re-measures its finalists (:func:`leave_entry`).

Every write is one conditional ``UPDATE`` (or ``INSERT``) whose ``WHERE`` decides the race: on
PostgreSQL a second writer re-checks it against the row the first one left, and SQLite lets one
writer at a time in. Expiry is judged by the workers' clocks, which must agree to well within a
lease.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.orm import Session

from storage.conflicts import insert_ignoring_conflicts
from storage.errors import StorageError
from storage.inputs import NAME_LENGTH
from storage.models import QueueEntry, utcnow
from tuner.core.accuracy import check_accuracy
from tuner.core.errors import InputError
from tuner.core.shape import Shape

QUEUE_LEASE_S = 60.0  # how long an entry outlives its workers' last heartbeat
QUEUE_LIMIT = 10_000  # entries waiting (queued or running) at most
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
SOURCES = ("cli", "api")


class QueueFull(StorageError):
    """The queue holds its limit of waiting entries; nothing of the refused call was added."""


@dataclass(frozen=True)
class Problem:
    """What a queue entry asks for: a shape (checked as every question is, so a refusal reads as
    the API's: "`m` must be an integer in 1..2147483647, got 0"), the accuracy floor, the device
    model it is for ("" for any worker's), the families searched (empty for the defaults) and the
    study's trial budget (None for the worker's own)."""

    shape: Shape
    accuracy: str
    device: str = ""
    families: tuple[str, ...] = ()
    trials: int | None = None

    def __post_init__(self) -> None:
        check_accuracy(self.accuracy)
        object.__setattr__(self, "families", tuple(self.families))
        if self.trials is not None and (isinstance(self.trials, bool) or self.trials < 1):
            raise InputError(f"`trials` must be at least 1 (None: the worker's), got {self.trials}")
        if len(self.key) > NAME_LENGTH:
            raise InputError(
                f"a queued problem's key must fit {NAME_LENGTH} characters: {self.key}"
            )

    @property
    def key(self) -> str:
        """The whole problem as one string: what makes two enqueued problems the same one."""
        s = self.shape
        families = "+".join(self.families) or "*"
        return f"{s}|{s.dtype}|{s.layout}|{s.out}|{self.accuracy}|{self.device or '*'}|{families}"


def problem_of(entry: QueueEntry) -> Problem:
    shape = Shape(entry.m, entry.n, entry.k, entry.dtype, entry.layout, entry.out_dtype)
    families = tuple(entry.families.split("+")) if entry.families else ()
    return Problem(shape, entry.accuracy, entry.device, families, entry.trials)


@dataclass(frozen=True)
class Taken:
    """An entry a worker is in: which attempt it joined (it acts on the entry only while that
    attempt lasts), and how many workers had joined that attempt before it (0: it took it)."""

    entry_id: int
    attempt: int
    joined: int
    problem: Problem


def enqueue(
    session: Session,
    problems: list[Problem],
    *,
    batch: str | None = None,
    source: str = "cli",
    limit: int = QUEUE_LIMIT,
    again: bool = False,
) -> int:
    """Add ``problems`` (each once: a problem already in the queue is not added again); how many
    were new. ``batch`` marks them for the command that waits on them; with ``again``, those
    already there that are not running are queued anew for ``batch`` (a command re-run resumes
    its studies, as ``tune`` does). Raises :class:`QueueFull`, adding nothing, if the new ones
    would take the waiting entries past ``limit``."""
    if source not in SOURCES:
        raise ValueError(f"`source` must be one of {', '.join(SOURCES)}, got {source!r}")
    unique = list({p.key: p for p in problems}.values())
    waiting = session.scalar(
        select(func.count()).select_from(QueueEntry).where(QueueEntry.state.in_((QUEUED, RUNNING)))
    )
    known = set(
        session.scalars(
            select(QueueEntry.problem).where(QueueEntry.problem.in_([p.key for p in unique]))
        )
    )
    fresh = [p for p in unique if p.key not in known]
    if (waiting or 0) + len(fresh) > limit:
        raise QueueFull(
            f"the tuning queue holds {waiting} waiting shapes and takes at most {limit}: "
            f"{len(fresh)} more do not fit; let the workers catch up, or enqueue fewer"
        )
    added = sum(
        insert_ignoring_conflicts(session, QueueEntry, _row(p, batch, source)) for p in fresh
    )
    if again and known:
        session.execute(
            update(QueueEntry)
            .where(QueueEntry.problem.in_(known), QueueEntry.state != RUNNING)
            .values(state=QUEUED, batch=batch, error=None)
            .execution_options(synchronize_session=False)
        )
        by_key = {p.key: p for p in unique}
        for key in known:  # the budget asked now, for a resumed study
            session.execute(
                update(QueueEntry)
                .where(QueueEntry.problem == key, QueueEntry.state == QUEUED)
                .values(trials=by_key[key].trials)
                .execution_options(synchronize_session=False)
            )
        session.execute(  # running for someone else: this command waits for it too
            update(QueueEntry)
            .where(QueueEntry.problem.in_(known), QueueEntry.state == RUNNING)
            .values(batch=batch)
            .execution_options(synchronize_session=False)
        )
    return added


def _row(problem: Problem, batch: str | None, source: str) -> dict[str, object]:
    s = problem.shape
    return {
        "problem": problem.key,
        "m": s.m,
        "n": s.n,
        "k": s.k,
        "dtype": s.dtype,
        "layout": s.layout,
        "out_dtype": s.out,
        "accuracy": problem.accuracy,
        "device": problem.device,
        "families": "+".join(problem.families),
        "trials": problem.trials,
        "batch": batch,
        "source": source,
        "state": QUEUED,
        "attempt": 0,
        "searching": 0,
        "joinable": False,
        "enqueued_at": utcnow(),
    }


def _scope(device: str, batch: str | None) -> ColumnElement[bool]:
    """Entries a worker on a GPU named ``device`` may tune (for ``batch`` alone, if given)."""
    mine = QueueEntry.device.in_(("", device))
    return mine if batch is None else and_(mine, QueueEntry.batch == batch)


def take_next(
    session: Session,
    worker: str,
    device: str,
    lease_s: float = QUEUE_LEASE_S,
    batch: str | None = None,
    failed_here: Collection[int] = (),
) -> Taken | None:
    """Take the oldest queued entry (or a running one whose lease lapsed) for ``worker``, under
    a lease of ``lease_s``; None when there is none. Entries in ``failed_here`` (whose study
    failed on this worker) come after every other: their next attempt goes to another problem
    first, and so, where there are other workers, likelier to another worker. Commits each try,
    so that the entry is the worker's for everyone once this returns."""
    while True:
        now = utcnow()
        takeable = or_(
            QueueEntry.state == QUEUED,
            and_(QueueEntry.state == RUNNING, QueueEntry.expires_at < now),
        )
        entry_id = session.scalar(
            select(QueueEntry.id)
            .where(takeable, _scope(device, batch))
            .order_by(QueueEntry.id.in_(list(failed_here)), QueueEntry.id)
        )
        if entry_id is None:
            session.commit()
            return None
        row = session.execute(
            update(QueueEntry)
            .where(QueueEntry.id == entry_id, takeable)
            .values(
                state=RUNNING,
                worker=worker,
                expires_at=now + timedelta(seconds=lease_s),
                attempt=QueueEntry.attempt + 1,
                searching=1,
                joinable=True,
                started_at=now,
            )
            .returning(QueueEntry.attempt)
            .execution_options(synchronize_session=False)
        ).first()
        session.commit()
        if row is not None:  # else another worker took it first: look again
            return Taken(entry_id, row[0], 0, _problem(session, entry_id))


def join_running(
    session: Session,
    device: str,
    lease_s: float = QUEUE_LEASE_S,
    batch: str | None = None,
    excluding: int | None = None,
) -> Taken | None:
    """Join the running study with the fewest workers that still takes newcomers, other than
    entry ``excluding`` (the one the worker is still searching); None if none does. Its lease is
    renewed now, and by this worker from now on."""
    while True:
        now = utcnow()
        conditions = [
            QueueEntry.state == RUNNING,
            QueueEntry.joinable,
            QueueEntry.expires_at >= now,
        ]
        if excluding is not None:
            conditions.append(QueueEntry.id != excluding)
        joinable = and_(*conditions)
        found = session.execute(
            select(QueueEntry.id, QueueEntry.attempt)
            .where(joinable, _scope(device, batch))
            .order_by(QueueEntry.searching, QueueEntry.id)
        ).first()
        if found is None:
            session.commit()
            return None
        entry_id, attempt = found
        row = session.execute(
            update(QueueEntry)
            .where(QueueEntry.id == entry_id, QueueEntry.attempt == attempt, joinable)
            .values(searching=QueueEntry.searching + 1, expires_at=now + timedelta(seconds=lease_s))
            .returning(QueueEntry.searching)
            .execution_options(synchronize_session=False)
        ).first()
        session.commit()
        if row is not None:
            return Taken(entry_id, attempt, row[0] - 1, _problem(session, entry_id))


def _problem(session: Session, entry_id: int) -> Problem:
    entry = session.get(QueueEntry, entry_id)
    assert entry is not None  # entries are never deleted
    return problem_of(entry)


def _current(taken: Taken) -> ColumnElement[bool]:
    return and_(QueueEntry.id == taken.entry_id, QueueEntry.attempt == taken.attempt)


def renew_entries(session: Session, taken: list[Taken], lease_s: float = QUEUE_LEASE_S) -> int:
    """Extend the lease of every running entry in ``taken``; how many are still running."""
    renewed = 0
    for entry in taken:
        result = session.execute(
            update(QueueEntry)
            .where(_current(entry), QueueEntry.state == RUNNING)
            .values(expires_at=utcnow() + timedelta(seconds=lease_s))
            .execution_options(synchronize_session=False)
        )
        renewed += int(result.rowcount or 0)  # type: ignore[attr-defined]
    return renewed


def leave_entry(session: Session, taken: Taken) -> bool | None:
    """A worker is done searching ``taken``: no newcomers from now on. True if it was the last
    in it (it finishes the study), False if others still search, None if the attempt is no
    longer its own (its lease lapsed and another worker took the entry)."""
    row = session.execute(
        update(QueueEntry)
        .where(_current(taken), QueueEntry.state == RUNNING)
        .values(searching=QueueEntry.searching - 1, joinable=False)
        .returning(QueueEntry.searching)
        .execution_options(synchronize_session=False)
    ).first()
    return None if row is None else row[0] <= 0


def give_up(session: Session, taken: Taken) -> bool:
    """Leave ``taken``'s study before searching it, unless every other worker has left it (the
    last one in it finishes the study): True when it left. As with :func:`leave_entry`, the study
    takes no newcomers from now on."""
    row = session.execute(
        update(QueueEntry)
        .where(_current(taken), QueueEntry.state == RUNNING, QueueEntry.searching > 1)
        .values(searching=QueueEntry.searching - 1, joinable=False)
        .returning(QueueEntry.searching)
        .execution_options(synchronize_session=False)
    ).first()
    return row is not None


def mark_done(session: Session, taken: Taken, study: str, evaluated: int) -> bool:
    """Record ``taken``'s study as tuned; False if the attempt is no longer this worker's."""
    result = session.execute(
        update(QueueEntry)
        .where(_current(taken), QueueEntry.state == RUNNING)
        .values(
            state=DONE,
            study=study,
            evaluated=evaluated,
            error=None,
            expires_at=None,
            searching=0,
            finished_at=utcnow(),
        )
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def mark_failed(session: Session, taken: Taken, error: str, retry: bool) -> None:
    """Record why ``taken``'s attempt failed: queued again when ``retry``, else failed for good
    (until a command enqueues it again)."""
    session.execute(
        update(QueueEntry)
        .where(_current(taken), QueueEntry.state == RUNNING)
        .values(
            state=QUEUED if retry else FAILED,
            error=error[:4000],
            expires_at=None,
            searching=0,
            joinable=False,
            finished_at=None if retry else utcnow(),
        )
        .execution_options(synchronize_session=False)
    )


def has_work(session: Session, device: str, batch: str | None = None) -> bool:
    """Whether anything in a worker's scope is queued or running (a running entry's lease may
    lapse, and then it is the worker's to take)."""
    waiting = QueueEntry.state.in_((QUEUED, RUNNING))
    return (
        session.scalar(select(QueueEntry.id).where(waiting, _scope(device, batch)).limit(1))
        is not None
    )


@dataclass(frozen=True)
class BatchProgress:
    """Where a command's entries stand."""

    total: int
    done: int
    failed: int
    running: int
    evaluated: int  # candidates of the done studies

    @property
    def finished(self) -> bool:
        return self.done + self.failed == self.total


def batch_progress(session: Session, batch: str) -> BatchProgress:
    rows = session.execute(
        select(QueueEntry.state, func.count(), func.coalesce(func.sum(QueueEntry.evaluated), 0))
        .where(QueueEntry.batch == batch)
        .group_by(QueueEntry.state)
    ).all()
    counts = {state: (int(n), int(evaluated or 0)) for state, n, evaluated in rows}
    return BatchProgress(
        total=sum(n for n, _ in counts.values()),
        done=counts.get(DONE, (0, 0))[0],
        failed=counts.get(FAILED, (0, 0))[0],
        running=counts.get(RUNNING, (0, 0))[0],
        evaluated=sum(e for _, e in counts.values()),
    )


def batch_entries(session: Session, batch: str) -> list[QueueEntry]:
    return list(
        session.scalars(select(QueueEntry).where(QueueEntry.batch == batch).order_by(QueueEntry.id))
    )
