"""Claims: a worker takes a study's candidate before measuring it, so no two workers measure
the same one. The unique (study, config_name) key decides atomically on both backends.

A claim is a lease: it expires ``lease_s`` after it was taken or last renewed
(:func:`renew_claims`, which a live worker calls as a heartbeat), and an expired claim may be
taken by another worker, so a candidate whose worker was killed is measured after all. Once
the candidate is measured, :func:`settle_claim` makes the claim permanent (``expires_at`` NULL).
Expiry is judged by the workers' clocks, which must agree to well within a lease.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, delete, func, inspect, literal, or_, select, true, update
from sqlalchemy.orm import Session

from storage.conflicts import upsert_statement
from storage.models import Claim, utcnow
from tuner.core.claims import Claimed

CLAIM_LEASE_S = 60.0  # how long a claim outlives its worker's last heartbeat


def claim_candidate(
    session: Session,
    study: str,
    config_name: str,
    worker: str,
    lease_s: float = CLAIM_LEASE_S,
    budget: int | None = None,
) -> Claimed:
    """Take ``config_name`` in ``study`` for ``worker``, for ``lease_s`` seconds, unless another
    worker holds it (an unexpired or settled claim) or the study already has ``budget`` open
    claims (unexpired or settled): a study's trial budget is spent exactly, however many workers
    share it.

    The claim is part of the caller's transaction: it holds once that commits.
    """
    now = utcnow()
    if budget is not None and session.get_bind().dialect.name == "postgresql":
        # Counting and inserting must not interleave between workers: one lock per study.
        session.execute(select(func.pg_advisory_xact_lock(func.hashtext(study))))
    values = {
        "study": study,
        "config_name": config_name,
        "worker": worker,
        "claimed_at": now,
        "expires_at": now + timedelta(seconds=lease_s),
    }
    room: ColumnElement[bool] = true()
    if budget is not None:  # counted in the INSERT itself: SQLite's write lock covers both
        room = _open_claims(study, now, config_name) < budget
    source = select(*(literal(value).label(name) for name, value in values.items())).where(room)
    statement = (
        upsert_statement(session, Claim)
        .from_select(list(values), source)
        .on_conflict_do_update(
            index_elements=["study", "config_name"],
            set_={name: values[name] for name in ("worker", "claimed_at", "expires_at")},
            where=Claim.expires_at < now,  # NULL (settled) never compares less: kept
        )
    )
    key = inspect(Claim).primary_key[0]
    if session.execute(statement.returning(key)).first() is not None:
        return Claimed.TAKEN
    if budget is not None and session.execute(select(room)).scalar_one() is False:
        return Claimed.FULL
    return Claimed.HELD


def open_claims(session: Session, study: str) -> int:
    """How many candidates of ``study`` count against its budget now: claimed for good (measured)
    or under an unexpired lease, as :func:`claim_candidate` counts them."""
    return int(session.execute(select(_open_claims(study, utcnow()))).scalar_one())


def _open_claims(study: str, now: datetime, other_than: str | None = None) -> ColumnElement[int]:
    """How many candidates of ``study`` are claimed for good or for now (``other_than`` aside,
    whose expired claim the caller may take over)."""
    counted = (
        select(func.count())
        .select_from(Claim)
        .where(Claim.study == study, or_(Claim.expires_at.is_(None), Claim.expires_at >= now))
    )
    if other_than is not None:
        counted = counted.where(Claim.config_name != other_than)
    return counted.scalar_subquery()


def renew_claims(session: Session, worker: str, lease_s: float = CLAIM_LEASE_S) -> int:
    """Extend every unsettled claim ``worker`` still holds by ``lease_s``; how many it holds."""
    result = session.execute(
        update(Claim)
        .where(Claim.worker == worker, Claim.expires_at.is_not(None))
        .values(expires_at=utcnow() + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def settle_claim(session: Session, study: str, config_name: str) -> None:
    """Mark ``config_name`` of ``study`` measured: its claim never expires from now on."""
    session.execute(
        update(Claim)
        .where(Claim.study == study, Claim.config_name == config_name)
        .values(expires_at=None)
        .execution_options(synchronize_session=False)
    )


def live_claims(session: Session, study: str, worker: str) -> set[str]:
    """Candidates of ``study`` that workers other than ``worker`` hold under an unexpired
    lease: they are being measured, and their results will come."""
    rows = session.scalars(
        select(Claim.config_name).where(
            Claim.study == study, Claim.worker != worker, Claim.expires_at > utcnow()
        )
    )
    return set(rows)


def release_claim(session: Session, study: str, config_name: str) -> None:
    """Give ``config_name`` back to ``study`` (a worker that claimed it and will not measure
    it, e.g. when its time ran out), so another worker may take it."""
    session.execute(delete(Claim).where(Claim.study == study, Claim.config_name == config_name))
